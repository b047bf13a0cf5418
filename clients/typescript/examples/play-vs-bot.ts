/**
 * Play a whole CLASH game against a bot: `npm run example -- http://127.0.0.1:8000` (after `npm run build`).
 * It holds the match's WebSocket: events arrive and moves go over it (long-polls and REST moves where none is
 * offered); each turn plays a legal move.
 */
import { MeepleClient, type Match, type Move, type Transport, TransportError } from "../src/index.js";

export async function playVsBot(baseUrl: string, options: { level?: "easy" | "normal"; transport?: Transport;
  log?: (line: string) => void } = {}): Promise<Match> {
  const log = options.log ?? console.log;
  const api = new MeepleClient({ baseUrl });
  const match = await api.createMatch({ game: "clash", players: 2, options: { match: "single" },
    seats: [{ kind: "human" }, { kind: "bot", level: options.level ?? "easy" }] });
  log(`match ${match.id}: you are seat ${match.seat}, version ${match.version}`);
  const pick = (moves: Move[]): Move => moves[Math.floor(Math.random() * moves.length)] as Move;
  if ((options.transport ?? "auto") !== "long-poll") { // hold the socket: every move goes over it, no HTTP request
    await match.connect().catch((error: unknown) => {
      if (options.transport === "ws" || !(error instanceof TransportError)) throw error;
    });
  }
  const play = async () => {
    while (match.myTurn && match.legalMoves.length) {
      const move = pick(match.legalMoves);
      await match.move(move);
      log(`v${match.version}: played ${String(move.type)}`);
    }
  };
  await play();
  for await (const update of match.events(options.transport ?? "auto")) {
    for (const event of update.events) {
      if (event.seat !== match.seat && event.kind === "move") log(`v${event.version}: seat ${event.seat} moved`);
    }
    await play();
  }
  match.close();
  const outcome = match.outcome;
  log(`finished by ${outcome?.ended_by}: winners ${JSON.stringify(outcome?.winners)}, ` +
    `scores ${JSON.stringify(outcome?.scores)} (events by ${match.transport})`);
  return match;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await playVsBot(process.argv[2] ?? process.env.MEEPLE_URL ?? "http://127.0.0.1:8000");
}
