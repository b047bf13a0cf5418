// The REST API from the browser: JSON in and out, bearer tokens, an Idempotency-Key on every repeatable write.
// Seat tokens stay in this browser's localStorage (per match), so a reload resumes the game.

export class ApiError extends Error {
  constructor(status, code, message) { super(`${code}: ${message}`); this.status = status; this.code = code; }
}

const IDEMPOTENT_WRITE = /^\/(matches|matchmaking)$|\/(moves|join|rematch)$/;

export const newKey = () => (crypto.randomUUID ? crypto.randomUUID() : `${Date.now()}-${Math.random()}`);

export async function call(method, path, { token = null, body = undefined, query = {}, signal, key = null } = {}) {
  const url = new URL("/v1" + path, location.origin);
  for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== null) url.searchParams.set(k, v);
  const headers = { Accept: "application/json" };
  if (token) headers.Authorization = `Bearer ${token}`;
  const init = { method, headers, signal };
  if (method === "POST" || body !== undefined) {
    headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body === undefined ? {} : body);
  }
  // Every write the server lets a client repeat carries one key for the call and its retries (docs/api.md,
  // "Versions, retries and concurrency"): a retried join or rematch gets its seat's token again, not a 409.
  if (method === "POST" && IDEMPOTENT_WRITE.test(path)) {
    headers["Idempotency-Key"] = key || newKey();
  }
  let response;
  for (let attempt = 0; ; attempt++) {
    response = await fetch(url, init);
    // 503: a dependency is down and nothing changed; retry a few times (moves carry their key).
    if (response.status !== 503 || attempt >= 3) break;
    await new Promise(r => setTimeout(r, 200 * 2 ** attempt));
  }
  const doc = await response.json().catch(() => null);
  if (!response.ok) {
    const err = doc && doc.error ? doc.error : { code: `http_${response.status}`, message: response.statusText };
    throw new ApiError(response.status, err.code, err.message);
  }
  return doc;
}

/** A GET's body as text (the replay: its seed must be read digit for digit). */
export async function fetchText(path, token) {
  const response = await fetch(new URL("/v1" + path, location.origin), { headers: token ? { Authorization: `Bearer ${token}` } : {} });
  const text = await response.text();
  if (!response.ok) {
    let err = { code: `http_${response.status}`, message: response.statusText };
    try { err = JSON.parse(text).error || err; } catch { /* not JSON */ }
    throw new ApiError(response.status, err.code, err.message);
  }
  return text;
}

const KEY = id => `meeple.seat.${id}`;

export function saveSeat(matchId, seat, token, game = null) {
  localStorage.setItem(KEY(matchId), JSON.stringify({ seat, token, game }));
  const mine = JSON.parse(localStorage.getItem("meeple.matches") || "[]").filter(m => m !== matchId);
  localStorage.setItem("meeple.matches", JSON.stringify([matchId, ...mine].slice(0, 20)));
}

export function loadSeat(matchId) {
  try { return JSON.parse(localStorage.getItem(KEY(matchId))); } catch { return null; }
}

export function forgetMatch(matchId) {
  localStorage.removeItem(KEY(matchId));
  const mine = JSON.parse(localStorage.getItem("meeple.matches") || "[]").filter(m => m !== matchId);
  localStorage.setItem("meeple.matches", JSON.stringify(mine));
}

/** A watch token (`w_...`, a tenant's read-only link, docs/api.md "Watch links") kept per match, apart from seats:
 * it plays nothing, so it is not one of "Your matches". */
const WATCH = id => `meeple.watch.${id}`;
export const saveWatch = (matchId, token) => localStorage.setItem(WATCH(matchId), token);
export const loadWatch = matchId => localStorage.getItem(WATCH(matchId));

/** A party's members' join links, kept by the browser that queued the party (the links hold their seat tokens). */
const PARTY = id => `meeple.party.${id}`;
export const saveParty = (matchId, members) => localStorage.setItem(PARTY(matchId), JSON.stringify(members));
export function loadParty(matchId) {
  try { return JSON.parse(localStorage.getItem(PARTY(matchId))); } catch { return null; }
}

export function myMatches() {
  try { return JSON.parse(localStorage.getItem("meeple.matches") || "[]"); } catch { return []; }
}

/** A move's reply was not had over the socket (it closed first, or none was open): send it over REST. */
export class SocketGone extends Error {}

/**
 * One WebSocket session on a match (docs/api.md "WebSocket"): the token goes in the hello (a browser cannot
 * set headers on a socket), `after` is the last version shown, so nothing is missed across reconnects.
 * Calls onUpdate(doc) for each update, in order; resolves when the socket closes with {ready, error}.
 * `holder.socket` is the open socket, for the page to close when it goes away; `holder.move(body)` sends a
 * move on it once it is ready (the REST move's body plus `idempotency_key` and `include`) and resolves with the
 * status document of its reply, or rejects with the reply's ApiError, or with SocketGone if there is no ready
 * socket or it closed before the reply came (the caller then sends the same key over REST: the server answers
 * the first outcome, so the move is never made twice). `holder.chat(body)` sends a chat message (`{text}` or
 * `{preset}`) the same way and resolves with the message; onChat(message) is called for each chat message and
 * onChat({id, redacted: true}) for each redaction (docs/api.md "Chat"); `chatAfter` (a message id) asks the server for the
 * messages past it first. document.body.dataset.socket is "ready" while a socket is ready.
 */
export function socketSession(matchId, { token, after, onUpdate, onChat = () => {}, chatAfter = null, holder, include = !!token }) {
  return new Promise(resolve => {
    let ready = false, open = false, error = null, chain = Promise.resolve();
    const replies = new Map();  // message id -> {resolve, reject} of a move waiting for its reply
    let ws;
    try {
      ws = new WebSocket(`${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/v1/matches/${encodeURIComponent(matchId)}/ws`);
    } catch (err) { resolve({ ready, error: { code: "no_websocket", message: String(err) } }); return; }
    holder.socket = ws;
    const send = (type, id, body) => new Promise((res, rej) => {
      if (!open || ws.readyState !== WebSocket.OPEN) { rej(new SocketGone("no open socket")); return; }
      replies.set(id, { resolve: res, reject: rej });
      ws.send(JSON.stringify({ type, id, ...body }));
    });
    let chats = 0;
    holder.move = body => send("move", body.idempotency_key, body);
    holder.chat = body => send("chat", ++chats, body);
    ws.onopen = () => ws.send(JSON.stringify({ type: "hello", token: token || null, after,
                                               ...(include ? { include: "legal_moves" } : {}),
                                               ...(chatAfter !== null ? { chat_after: chatAfter } : {}) }));
    ws.onmessage = ev => {
      let msg;
      try { msg = JSON.parse(ev.data); } catch { return; }
      if (msg.type === "ready") { ready = open = true; document.body.dataset.socket = "ready"; }
      else if (msg.type === "error") error = msg.error;
      else if (msg.type === "reply") {
        const waiting = replies.get(msg.id);
        if (!waiting) return;
        replies.delete(msg.id);
        if (msg.status >= 200 && msg.status < 300) waiting.resolve(msg.body);
        else {
          const err = (msg.body && msg.body.error) || { code: `http_${msg.status}`, message: "refused" };
          waiting.reject(new ApiError(msg.status, err.code, err.message));
        }
      } else if (msg.type === "chat" && msg.message) {
        chain = chain.then(() => onChat(msg.message));
      } else if (msg.type === "chat_redacted") {
        chain = chain.then(() => onChat({ id: msg.id, redacted: true, text: null }));
      } else if (msg.type === "update") {
        const { type, ...doc } = msg;
        // An update the page failed to take (a reload of the status failed): reconnect, which resyncs.
        chain = chain.then(() => onUpdate(doc)).catch(() => ws.close());
      }
    };
    ws.onclose = ev => {
      // a socket the server ends (a watch token revoked or expired) names why in its close reason too: the
      // error message before it may be lost when the connection closes right after (docs/api.md "Watch links")
      if (!error && ev.reason) error = { code: ev.reason, message: ev.reason.replace(/_/g, " ") };
      holder.socket = null; holder.move = null; holder.chat = null; open = false;
      delete document.body.dataset.socket;
      for (const waiting of replies.values()) waiting.reject(new SocketGone("the socket closed before the reply"));
      replies.clear();
      chain.then(() => resolve({ ready, error }));
    };
  });
}
