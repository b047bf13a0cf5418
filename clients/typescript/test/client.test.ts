/**
 * The TypeScript client against a live Meeple stack (tests/clients/test_typescript.py starts it and runs
 * `node --test`): MEEPLE_URL is the deployed shape (gunicorn with the gateway's worker: WebSockets),
 * MEEPLE_PLAIN_URL a gateway that offers no WebSocket (501), where events fall back to long-polls.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { ApiError, type ClientOptions, type Match, MeepleClient, type Move } from "../src/index.js";
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

// -- moves on the open socket -------------------------------------------------------------------------------------
const VS_BOT = [{ kind: "human" as const }, { kind: "bot" as const, level: "easy" as const }];
const HUMANS = [{ kind: "human" as const }, { kind: "human" as const }];
const MOVE_ROUTES = { ws: "ws:move", rest: "/v1/matches/<match_id>/moves" };

/** The moves the gateway itself answered so far, per door (its /metrics: what the server saw, not the SDK). */
async function served(): Promise<{ ws: number; rest: number }> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const count = (route: string) => text.split("\n")
    .filter((line) => line.startsWith("meeple_gateway_request_seconds_count{") && line.includes(`route="${route}"`))
    .reduce((sum, line) => sum + Number(line.split(" ").pop()), 0);
  return { ws: count(MOVE_ROUTES.ws), rest: count(MOVE_ROUTES.rest) };
}

async function servedSince(before: { ws: number; rest: number }): Promise<{ ws: number; rest: number }> {
  const now = await served();
  return { ws: now.ws - before.ws, rest: now.rest - before.rest };
}

/** A client whose HTTP moves (POST .../moves) and long-polls (GET .../events) are counted: the SDK's own HTTP
 * layer, instrumented. */
function counted(options: Partial<ClientOptions> = {}):
  { api: MeepleClient; posts: () => number; polls: () => number } {
  const api = new MeepleClient({ baseUrl: url, ...options });
  let posts = 0;
  let polls = 0;
  api.api.use({ onRequest({ request }) {
    const path = new URL(request.url).pathname;
    if (request.method === "POST" && path.endsWith("/moves")) posts++;
    if (request.method === "GET" && path.endsWith("/events")) polls++;
    return undefined;
  } });
  return { api, posts: () => posts, polls: () => polls };
}

async function movesOf(api: MeepleClient, match: Match): Promise<number> {
  const replay = await api.replay(match.id);
  return replay.log.filter((e) => e.kind === "move" && e.seat === match.seat).length;
}

const first = (match: Match) => match.legalMoves[0] as Move;

test("while the match's socket is open every move goes over it: no POST /moves, the gateway counts socket moves",
  async () => {
    const before = await served();
    const { api, posts, polls } = counted();
    const held = await api.createMatch({ game: "clash", players: 2, options: { match: "single" }, seats: VS_BOT });
    await held.connect(); // moves and waitTurn over the socket from here
    assert.ok(held.socketOpen);
    while (!held.finished) {
      await held.waitTurn();
      if (held.myTurn) await held.move(first(held));
    }
    held.close();
    assert.equal(polls(), 0); // waitTurn read the socket's updates
    const read = await api.createMatch({ game: "clash", players: 2, options: { match: "single" }, seats: VS_BOT });
    await read.connect();
    while (read.myTurn) await read.move(first(read));
    for await (const _update of read.events("ws")) { // the events loop reads the held socket; moves go over it too
      while (read.myTurn) await read.move(first(read));
    }
    read.close();
    assert.equal(read.status, "finished");
    assert.equal(posts(), 0);
    const moves = await movesOf(api, held) + await movesOf(api, read);
    assert.ok(moves > 2);
    assert.deepEqual(await servedSince(before), { ws: moves, rest: 0 });
  });

test("move(m, wait) over the open socket answers at the seat's next turn with the bot's moves, no HTTP request",
  async () => {
    const { api, posts } = counted();
    const match = await api.createMatch({ game: "clash", players: 2, options: { match: "single" }, seats: VS_BOT });
    await match.connect();
    await match.waitTurn();
    let botMoves = 0;
    while (!match.finished) {
      assert.ok(match.myTurn, "a move with wait answers only at the seat's turn or at the end");
      await match.move(first(match), 30);
      botMoves += (match.doc.events ?? []).filter((e) => e.kind === "move" && e.seat === 1).length;
    }
    match.close();
    assert.ok(botMoves > 0);
    assert.equal(posts(), 0);
  });

test("with no socket open a move goes over REST", async () => {
  const before = await served();
  const { api, posts, polls } = counted();
  const match = await api.createMatch({ game: "clash", players: 2, options: { match: "single" }, seats: VS_BOT });
  await match.connect();
  match.close(); // held, then closed: REST again
  assert.equal(match.socketOpen, false);
  while (!match.finished) {
    await match.waitTurn();
    if (match.myTurn) await match.move(first(match));
  }
  const moves = await movesOf(api, match);
  assert.ok(moves > 1);
  assert.equal(posts(), moves);
  assert.ok(polls() > 0); // waitTurn long-polled
  assert.deepEqual(await servedSince(before), { ws: 0, rest: moves });
});

async function twoHumans(api: MeepleClient): Promise<Match> {
  const host = await api.createMatch({ game: "clash", players: 2, options: { match: "single" }, seats: HUMANS });
  const guest = await api.join(host.id);
  await host.refresh();
  return host.myTurn ? host : guest;
}

/** [class, status, code] of the error `move` gets from `match`, over its socket (`ws`) or over REST. */
async function refusal(match: Match, move: Move, door: "ws" | "rest"): Promise<unknown[]> {
  if (door === "ws") await match.connect();
  try {
    await match.move(move);
  } catch (error) {
    assert.ok(error instanceof ApiError);
    return [error.constructor.name, error.status, error.code];
  } finally {
    match.close();
  }
  throw new Error(`${JSON.stringify(move)} was accepted over ${door}`);
}

test("a socket move is refused with the same typed errors as the REST move (400/422, 409 stale_version)", async () => {
  const before = await served();
  const api = new MeepleClient({ baseUrl: url });
  const mover = await twoHumans(api);
  const again = () => api.match(mover.id, mover.token);
  const bogus = [await refusal(await again(), { type: "no-such-move" }, "rest"),
    await refusal(await again(), { type: "no-such-move" }, "ws")];
  assert.deepEqual(bogus[0], bogus[1]);
  assert.ok([400, 422].includes(bogus[1]?.[1] as number));
  const stale = await again(); // read before the move
  await mover.move(first(mover));
  assert.deepEqual(await refusal(stale, first(stale), "rest"), ["ApiError", 409, "stale_version"]);
  // over the socket: two pictures of one seat move at once at the same version; the second is stale
  const other = await twoHumans(api);
  const [a, b] = [await api.match(other.id, other.token), await api.match(other.id, other.token)];
  await a.connect();
  await b.connect();
  const raced = await Promise.allSettled([a.move(first(a)), b.move(first(b))]);
  a.close();
  b.close();
  const lost = raced.find((r) => r.status === "rejected") as PromiseRejectedResult | undefined;
  assert.ok(lost && raced.some((r) => r.status === "fulfilled"));
  assert.ok(lost.reason instanceof ApiError);
  assert.deepEqual([lost.reason.status, lost.reason.code], [409, "stale_version"]);
  assert.deepEqual(await servedSince(before), { ws: 3, rest: 3 });
});

/** A real WebSocket that loses every reply after the first move it sends: a reply lost on the way. */
class LosesReplies extends WebSocket {
  protected cut = false;

  override send(data: string | ArrayBufferLike | Blob | ArrayBufferView): void {
    super.send(data);
    if (!this.cut && String(data).includes('"type":"move"')) {
      this.cut = true;
      this.onCut();
    }
  }

  protected onCut(): void {}

  override addEventListener(type: string, listener: EventListenerOrEventListenerObject | null,
    options?: unknown): void {
    const pass = (event: Event) => {
      if (type === "message" && this.cut && String((event as MessageEvent).data).includes('"type":"reply"')) return;
      if (typeof listener === "function") listener.call(this, event);
      else listener?.handleEvent(event);
    };
    super.addEventListener(type, pass, options as boolean | AddEventListenerOptions | undefined);
  }
}

/** ... and then closes: a socket dropped mid-move. */
class DropsMidMove extends LosesReplies {
  protected override onCut(): void {
    setTimeout(() => this.close(1000), 200); // the gateway applies the move; its reply is dropped
  }
}

for (const [Ws, what] of [[DropsMidMove, "whose socket drops before its reply"],
  [LosesReplies, "with no reply within timeoutMs"]] as const) {
  test(`a move ${what} is sent again over REST with its key and applied once`, async () => {
    const before = await served();
    const { api, posts } = counted({ WebSocket: Ws as typeof WebSocket, timeoutMs: 1000 });
    const mover = await twoHumans(api);
    const version = mover.version;
    await mover.connect();
    await mover.move(first(mover)); // another key would be a 409 stale_version: the match had moved on
    mover.close();
    assert.equal(mover.version, version + 1);
    assert.equal(posts(), 1);
    assert.equal(await movesOf(api, mover), 1);
    assert.deepEqual(await servedSince(before), { ws: 1, rest: 1 });
  });
}
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

test("a party queues as one ticket: two parties of two are a team each, every member with a seat of their own",
  async () => {
    const api = new MeepleClient({ baseUrl: url });
    const first = await api.queue({ game: "they-who-were-8", players: 4, options: {},
      party: [{ name: "ann" }, { name: "ben" }] });
    const second = await api.matchmaking({ game: "they-who-were-8", players: 4, options: {},
      party: [{ name: "cat" }, { name: "dan" }] });
    assert.equal(second.doc.status, "matched");
    const ours = await first.waitParty(30_000);
    const theirs = await second.waitParty(30_000);
    const seats = (party: Match[]) => party.map((m) => m.seat).sort();
    const teams = [[0, 2], [1, 3]].map((t) => JSON.stringify(t));
    assert.ok(teams.includes(JSON.stringify(seats(ours))) && teams.includes(JSON.stringify(seats(theirs))));
    assert.equal(new Set([...ours, ...theirs].map((m) => m.token)).size, 4);
    assert.equal(new Set([...ours, ...theirs].map((m) => m.id)).size, 1);
    assert.deepEqual(first.party.map((m) => m.name), ["ann", "ben"]);
    assert.equal(new Set(first.party.map((m) => m.team)).size, 1);
  });

test("chat goes over the held socket, the other seat hears it on its socket and by long-poll", async () => {
  const api = new MeepleClient({ baseUrl: url });
  const first = await api.createMatch({ game: "clash", players: 2, seats: [{ kind: "human" }, { kind: "human" }] });
  const second = await api.join(first.id);
  const said = await first.chat("good luck"); // REST: no socket held
  assert.equal(said.seat, 0);
  await second.connect();
  try {
    assert.deepEqual(await second.waitChat(20_000), [said]); // the hello's chat_after=0: the past one first
    assert.ok(second.socketOpen);
    const reply = await second.chat({ preset: "gg" }); // over the socket
    assert.equal(reply.text, "Good game");
    assert.deepEqual(await first.waitChat(20_000), [reply]); // a long-poll with chat_after=1
  } finally {
    second.close();
  }
  assert.deepEqual(first.chatMessages.map((m) => m.id), [1, 2]);
});

test("a spectator without spectator_chat is a typed 403 and flooding a typed 429 chat_rate_limited", async () => {
  const api = new MeepleClient({ baseUrl: plainUrl, retries: 0 });
  const host = await api.createMatch({ game: "clash", players: 2, options: { match: "single" },
    seats: [{ kind: "human" }, { kind: "bot", level: "easy" }] });
  const watcher = await api.match(host.id);
  await assert.rejects(watcher.chat("may I?"), (err: unknown) =>
    err instanceof ApiError && err.status === 403 && err.code === "chat_spectators_off");
  const heard: number[] = [];
  watcher.onChat = (m) => heard.push(m.id);
  for (let n = 0; n < 5; n++) await host.chat(`${n}`);
  await assert.rejects(host.chat("flood"), (err: unknown) =>
    err instanceof ApiError && err.status === 429 && err.code === "chat_rate_limited" && (err.retryAfterS ?? 0) > 0);
  assert.equal((await watcher.waitChat(20_000)).length, 5); // a spectator's long-poll brings them all
  assert.deepEqual(heard, [1, 2, 3, 4, 5]);
});

test("a watch link reads the match as a spectator on every door, acts on none, and stops once revoked", async () => {
  const key = process.env.MEEPLE_KEY ?? "";
  assert.ok(key, "MEEPLE_KEY is set");
  const backend = new MeepleClient({ baseUrl: url, apiKey: key });
  const seat = await backend.createMatch({ game: "clash", players: 2, options: { match: "single" },
    seats: [{ kind: "human", player: "u1" }, { kind: "human", player: "u2" }] });
  const other = await backend.join(seat.id, { seat: 1 });
  await seat.refresh();
  const minted = await backend.watchToken(seat.id, { ttl_s: 600 });
  assert.ok(minted.token?.startsWith(`w_${minted.id}.`));
  assert.equal((await backend.describeWatchToken(minted.id)).token, undefined); // shown once, when minted

  const watcher = new MeepleClient({ baseUrl: url });
  const watched = await watcher.watch(seat.id, minted.token as string);
  assert.ok(watched.watching);
  assert.equal(watched.seat, null);
  assert.deepEqual(watched.legalMoves, []);
  assert.ok(watched.doc.seats?.every((s) => s.player === undefined)); // no player ids unless asked
  await assert.rejects(watched.move({ type: "place" }), /only reads/);
  await assert.rejects(watched.leave(), /only reads/);

  const updates = watched.events("ws")[Symbol.asyncIterator]();
  const next = updates.next();
  const mover = seat.myTurn ? seat : other;
  await mover.move(mover.legalMoves[0] as Move);
  const update = await next;
  assert.equal(update.done, false);
  assert.equal(watched.transport, "ws");
  assert.ok(update.value?.view); // the spectator's view, pushed on the socket
  watched.close();
  assert.equal((await watcher.replay(seat.id, minted.token)).seed, null);

  await backend.revokeWatchToken(minted.id);
  const refused = await watched.refresh().catch((error: unknown) => error);
  assert.ok(refused instanceof ApiError && refused.status === 401 && refused.code === "watch_token_revoked");
  assert.ok((await backend.describeWatchToken(minted.id)).revoked_at);
});

/** A real WebSocket that keeps every `reply` the server sent, as it came on the wire. */
function recordingReplies(into: { status: number; retry_after?: number }[]): typeof WebSocket {
  return class extends WebSocket {
    constructor(address: string | URL, protocols?: string | string[]) {
      super(address, protocols);
      super.addEventListener("message", (event: MessageEvent) => {
        const msg = JSON.parse(String(event.data)) as { type?: string; status: number; retry_after?: number };
        if (msg.type === "reply") into.push(msg);
      });
    }
  };
}

test("a socket move refused 429 is sent again after the reply's retry_after, not the client's backoff", async () => {
  const limitedUrl = process.env.MEEPLE_LIMITED_URL ?? "";
  assert.ok(limitedUrl, "MEEPLE_LIMITED_URL is set (a gateway allowing 2 requests a minute)");
  const replies: { status: number; retry_after?: number }[] = [];
  const retried: { what: string; code: string; delayMs: number }[] = [];
  const api = new MeepleClient({ baseUrl: limitedUrl, retries: 1, WebSocket: recordingReplies(replies),
    onRetry: (what, error, delayMs) => retried.push({ what, code: (error as ApiError).code, delayMs }) });
  const match = await api.createMatch({ game: "clash", players: 2, options: { match: "single" }, seed: 59,
    seats: [{ kind: "human" }, { kind: "bot", level: "easy" }] });
  await match.connect();
  let refused: unknown;
  try { // the seat token's 2 requests a minute (its hello's read, its first move) run out: its next move is a 429
    while (!match.finished) {
      await match.waitTurn();
      if (match.myTurn) await match.move(first(match));
    }
  } catch (error) {
    refused = error;
  } finally {
    match.close();
  }
  const limited = replies.filter((reply) => reply.status === 429);
  const story = JSON.stringify({ retried, limited, refused: String(refused) });
  // every 429 reply was sent again once (retries: 1) but the last, which the move gave up with — unless the
  // minute's window turned during the wait, the resend went through and the match ended
  assert.ok(refused === undefined || (refused instanceof ApiError && refused.code === "rate_limited"), story);
  assert.ok(retried.length >= 1 && retried.length === limited.length - (refused === undefined ? 0 : 1), story);
  retried.forEach((retry, n) => { // each resend waited what its refusal said (capped at 10 s)
    const said = limited[n]?.retry_after;
    assert.ok(typeof said === "number" && said >= 1, story);
    assert.deepEqual(retry, { what: "move", code: "rate_limited", delayMs: Math.min(said * 1000, 10_000) }, story);
  });
  if (refused instanceof ApiError) assert.equal(refused.retryAfterS, limited.at(-1)?.retry_after, story);
});
