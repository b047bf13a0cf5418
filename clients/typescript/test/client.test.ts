/**
 * The TypeScript client against a live Meeple stack (tests/clients/test_typescript.py starts it and runs
 * `node --test`): MEEPLE_URL is the deployed shape (gunicorn with the gateway's worker: WebSockets),
 * MEEPLE_PLAIN_URL a gateway that offers no WebSocket (501), where events fall back to long-polls.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { ApiError, MeepleClient } from "../src/index.js";
import { playVsBot } from "../examples/play-vs-bot.js";

const url = process.env.MEEPLE_URL ?? "";
const plainUrl = process.env.MEEPLE_PLAIN_URL ?? "";
const quiet = () => {};

test("the example plays a whole CLASH game against a bot, its events over the WebSocket", async () => {
  assert.ok(url, "MEEPLE_URL is set");
  const match = await playVsBot(url, { transport: "ws", log: quiet });
  assert.equal(match.status, "finished");
  assert.equal(match.transport, "ws");
  assert.equal(match.outcome?.ended_by, "game");
  assert.equal(match.outcome?.scores?.length, 2);
});

test("without a WebSocket (the server answers 501) auto falls back to long-polls and the game still ends", async () => {
  assert.ok(plainUrl, "MEEPLE_PLAIN_URL is set");
  const match = await playVsBot(plainUrl, { transport: "auto", log: quiet });
  assert.equal(match.status, "finished");
  assert.equal(match.transport, "long-poll");
  assert.equal(match.outcome?.ended_by, "game");
});

test("move(m, wait) answers at the seat's next turn, the bot's moves in its events: one request a turn", async () => {
  const api = new MeepleClient({ baseUrl: url });
  const match = await api.createMatch({ game: "clash", players: 2, options: { match: "single" },
    seats: [{ kind: "human" }, { kind: "bot", level: "easy" }] });
  await match.waitTurn();
  let botMoves = 0;
  while (!match.finished) {
    assert.ok(match.myTurn, "a move with wait answers only at the seat's turn or at the end");
    await match.move(match.legalMoves[0] as Parameters<typeof match.move>[0], 30);
    botMoves += (match.doc.events ?? []).filter((e) => e.kind === "move" && e.seat === 1).length;
  }
  assert.ok(botMoves > 0);
});

test("a move at a version the match has left is a typed 409 stale_version and changes nothing", async () => {
  const api = new MeepleClient({ baseUrl: url });
  const match = await api.createMatch({ game: "clash", players: 2, options: { match: "single" },
    seats: [{ kind: "human" }, { kind: "human" }] });
  const other = await api.join(match.id);
  await match.refresh(); // now active: the seat to act has its legal moves
  const mover = match.myTurn ? match : other;
  const earlier = await api.match(mover.id, mover.token); // the same seat, read before its move
  const move = mover.legalMoves[0];
  assert.ok(move);
  await mover.move(move);
  await assert.rejects(earlier.move(move), (err: unknown) =>
    err instanceof ApiError && err.status === 409 && err.code === "stale_version");
  assert.equal((await earlier.refresh()).version, mover.version);
});

test("the same Idempotency-Key and body answer the first outcome again: a retried move applies once", async () => {
  const api = new MeepleClient({ baseUrl: url });
  const match = await api.createMatch({ game: "clash", players: 2, options: { match: "single" },
    seats: [{ kind: "human" }, { kind: "bot", level: "easy" }] });
  await match.waitTurn();
  const body = { move: match.legalMoves[0] as { [key: string]: unknown }, version: match.version };
  const send = () => api.api.POST("/v1/matches/{match_id}/moves", {
    params: { path: { match_id: match.id }, header: { "Idempotency-Key": "ts-retry-1" } }, body,
    headers: { Authorization: `Bearer ${match.token}` } });
  const first = await send();
  const again = await send();
  assert.equal(first.response.status, 200);
  assert.equal(again.response.status, 200);
  assert.equal(again.data?.version, first.data?.version);
});

test("a body the contract refuses is a 400 with the API's code, and the catalogue is typed", async () => {
  const api = new MeepleClient({ baseUrl: url });
  const { error, response } = await api.api.POST("/v1/matches", {
    body: { game: "clash", players: 2, colour: "red" } as never });
  assert.equal(response.status, 400);
  assert.equal((error as { error: { code: string } }).error.code, "unknown_field");
  const games = await api.games();
  assert.ok(games.some((g) => g.id === "clash" && g.min_players === 2));
});

test("resign ends a two-seat match and rematch seats both again, the token once per seat", async () => {
  const api = new MeepleClient({ baseUrl: url });
  const host = await api.createMatch({ game: "clash", players: 2, options: { match: "single" },
    seats: [{ kind: "human" }, { kind: "human" }] });
  const guest = await api.join(host.id);
  await guest.resign();
  assert.equal(guest.status, "finished");
  const first = await (await host.refresh()).rematch();
  const second = await guest.rematch();
  assert.equal(first.id, second.id);
  assert.notEqual(first.token, host.token);
  assert.equal((await first.refresh()).status, "active");
  assert.deepEqual([first.seat, second.seat], [host.seat, guest.seat]);
});

test("a backend reads a tournament's rounds page by page, each table with its match", async () => {
  const key = process.env.MEEPLE_KEY ?? "";
  const tournament = process.env.MEEPLE_TOURNAMENT ?? "";
  assert.ok(key && tournament, "MEEPLE_KEY and MEEPLE_TOURNAMENT are set (a Swiss of three, round 1 made)");
  const backend = new MeepleClient({ baseUrl: url, apiKey: key });
  const page = await backend.tournamentRounds(tournament);
  assert.equal(page.next, null);
  assert.deepEqual(page.rounds.map((r) => r.n), [1]);
  const tables = page.rounds[0]?.tables ?? [];
  assert.deepEqual(tables.map((t) => t.table), ["r1t1", "r1t2"]);
  for (const table of tables) {
    assert.equal(table.status, "running");
    assert.ok(table.match_id);
    const match = await backend.api.GET("/v1/matches/{match_id}", {
      params: { path: { match_id: table.match_id as string } }, headers: backend.headers() });
    assert.equal(match.response.status, 200);
  }
  assert.deepEqual((await backend.tournamentRounds(tournament, { after: 1 })).rounds, []);
  const refused = await new MeepleClient({ baseUrl: url, retries: 0 }).tournamentRounds(tournament)
    .catch((error: unknown) => error);
  assert.ok(refused instanceof ApiError && refused.status === 401);
});
