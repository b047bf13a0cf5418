// The browser client: lobby, a live board per game, legal moves as buttons, clocks, hint, rematch, replays.
// Routes live in the URL hash so an invite is a plain link and a reload resumes: #/  #/m/ID  #/join/ID  #/replay/ID
import { ApiError, call, loadSeat, myMatches, saveSeat, socketSession } from "./api.js";
import { describeMove, esc, movesAtField, renderBoard } from "./boards.js";

const app = document.getElementById("app");
const errorBox = document.getElementById("error");
let games = [];
let page = { stop() {} };   // the current page's cleanup (stops its event loop)

function showError(err) {
  errorBox.hidden = !err;
  errorBox.textContent = err ? (err instanceof ApiError ? `${err.code}: ${err.message.replace(/^[^:]*: /, "")}` : String(err)) : "";
}

/** An event handler that shows its error instead of losing it. */
const safe = fn => async (...args) => { try { showError(null); await fn(...args); } catch (err) { showError(err); } };

async function catalogue() {
  if (!games.length) games = (await call("GET", "/games")).games;
  return games;
}

// ---------------------------------------------------------------- lobby
const DEFAULT_OPTIONS = { clash: { match: "single" } };

async function lobby() {
  const list = await catalogue();
  const gameOptions = list.map(g => `<option value="${g.id}">${esc(g.title)} (${g.min_players}–${g.max_players})</option>`).join("");
  const mine = myMatches();
  app.innerHTML = `<div class="lobby">
    <section class="panel" aria-labelledby="new-h"><h2 id="new-h">New game</h2>
      <form id="new-game">
        <label>Game <select name="game" id="game">${gameOptions}</select></label>
        <label>Players <input name="players" id="players" type="number" min="1" max="6" value="2"></label>
        <label>Other seats <select name="vs" id="vs">
          <option value="easy">bots: easy</option><option value="normal" selected>bots: normal</option>
          <option value="hard">bots: hard</option><option value="humans">friends (invite by link)</option></select></label>
        <label>Clock <select name="clock" id="clock"><option value="">none</option>
          <option value="per_move:60">60 s per move</option><option value="fischer:300:5">5 min + 5 s</option></select></label>
        <label>Options (JSON) <input name="options" id="options" value=""></label>
        <button class="primary" type="submit" id="create">Play</button>
      </form></section>
    <section class="panel" aria-labelledby="mm-h"><h2 id="mm-h">Matchmaking</h2>
      <p class="meta">Play people who ask for the same game, players and options (chosen under New game); bots fill empty seats if nobody comes in time.</p>
      <button id="matchmake">Find a game</button> <span id="mm-status" role="status"></span></section>
    <section class="panel" aria-labelledby="watch-h"><h2 id="watch-h">Spectate or replay</h2>
      <form id="watch"><label>Match id <input id="watch-id" name="id" required></label>
        <button type="submit">Watch</button> <button type="button" id="replay-btn">Replay</button></form></section>
    <section class="panel" aria-labelledby="mine-h"><h2 id="mine-h">Your matches</h2>
      ${mine.length ? `<ul>${mine.map(id => `<li><a href="#/m/${esc(id)}">${esc(id)}</a></li>`).join("")}</ul>` : '<p class="meta">None yet.</p>'}</section>
  </div>`;
  const gameSel = document.getElementById("game"), players = document.getElementById("players"), opts = document.getElementById("options");
  const syncGame = () => {
    const g = list.find(x => x.id === gameSel.value);
    players.min = g.min_players; players.max = g.max_players;
    players.value = Math.min(g.max_players, Math.max(g.min_players, 2));
    opts.value = JSON.stringify(DEFAULT_OPTIONS[g.id] || {});
  };
  gameSel.addEventListener("change", syncGame);
  syncGame();
  document.getElementById("new-game").addEventListener("submit", safe(async ev => {
    ev.preventDefault();
    const n = Number(players.value), vs = document.getElementById("vs").value;
    const other = vs === "humans" ? { kind: "human" } : { kind: "bot", level: vs };
    const body = { game: gameSel.value, players: n, join: true, options: JSON.parse(opts.value || "{}"),
                   seats: [{ kind: "human" }, ...Array(n - 1).fill(other)] };
    const clock = document.getElementById("clock").value;
    if (clock.startsWith("per_move")) body.clock = { mode: "per_move", seconds: Number(clock.split(":")[1]) };
    if (clock.startsWith("fischer")) body.clock = { mode: "fischer", base_s: 300, increment_s: 5 };
    const doc = await call("POST", "/matches", { body });
    saveSeat(doc.id, doc.you ?? 0, doc.token);
    location.hash = `#/m/${doc.id}`;
  }));
  document.getElementById("matchmake").addEventListener("click", safe(async () => {
    const status = document.getElementById("mm-status");
    const n = Number(players.value);
    let ticket = await call("POST", "/matchmaking", { body: { game: gameSel.value, players: n, options: JSON.parse(opts.value || "{}") } });
    let token = ticket.token;
    status.textContent = "Waiting for other players…";
    while (ticket.status === "waiting") {
      ticket = await call("GET", `/matchmaking/${ticket.ticket}`, { query: { wait: 25 } });
      token = ticket.token || token;
    }
    if (ticket.status !== "matched") { status.textContent = `Ticket ${ticket.status}.`; return; }
    saveSeat(ticket.match_id, ticket.seat, token);
    location.hash = `#/m/${ticket.match_id}`;
  }));
  document.getElementById("watch").addEventListener("submit", ev => {
    ev.preventDefault(); location.hash = `#/m/${document.getElementById("watch-id").value.trim()}`;
  });
  document.getElementById("replay-btn").addEventListener("click", () => {
    location.hash = `#/replay/${document.getElementById("watch-id").value.trim()}`;
  });
}

// ---------------------------------------------------------------- a match
function clockText(clock, seat) {
  if (!clock || clock.mode === "none") return "";
  const s = clock.seats.find(x => x.seat === seat);
  if (!s) return "";
  let left = s.remaining_s;
  if (s.running && s.deadline) left = Math.max(0, s.deadline - Date.now() / 1000);
  return left === null || left === undefined ? "" : ` ⏱ ${Math.floor(left / 60)}:${String(Math.floor(left % 60)).padStart(2, "0")}`;
}

async function matchPage(id) {
  const held = loadSeat(id);
  const token = held ? held.token : null;
  const st = { id, token, doc: null, filter: "", field: null, hint: null, alive: true, log: [], controller: new AbortController() };
  const live = { socket: null };
  page = { stop() { st.alive = false; st.controller.abort(); clearInterval(st.ticker); live.socket?.close(); } };

  const load = async () => {
    st.doc = await call("GET", `/matches/${id}`, { token, query: { include: token ? "legal_moves" : undefined } });
  };
  const fold = doc => {  // a status document, or an events document (which lacks seats/clock/outcome)
    // Never back to an older version: a move's answer can arrive after the socket brought later versions
    // (a bot's reply), and the socket will not send those again.
    if (st.doc && doc.version < st.doc.version) return;
    if ("events" in doc) {
      st.log.push(...doc.events);
      Object.assign(st.doc, { version: doc.version, status: doc.status, to_act: doc.to_act, result: doc.result });
      if (doc.view) st.doc.view = doc.view;
      if ("legal_moves" in doc) st.doc.legal_moves = doc.legal_moves;
    } else st.doc = doc;
  };

  const render = () => {
    const d = st.doc, you = d.you, moves = d.legal_moves || [];
    const title = (games.find(g => g.id === d.game) || { title: d.game }).title;
    const seats = d.seats.map(s => `<li class="${d.to_act.includes(s.seat) ? "acting" : ""} ${s.seat === you ? "me" : ""}"
        aria-label="seat ${s.seat}, ${s.kind}${s.level ? " " + s.level : ""}${d.to_act.includes(s.seat) ? ", to act" : ""}">
        ${s.seat}: ${s.kind === "bot" ? `bot (${esc(s.level)})` : s.taken ? (s.seat === you ? "you" : "human") : "free"}${s.connected ? " ●" : ""}<span class="clock">${clockText(d.clock, s.seat)}</span></li>`).join("");
    let shown = moves.map((m, i) => [i, m]);
    if (st.field) shown = movesAtField(moves, st.field).map(m => [moves.indexOf(m), m]);
    if (st.filter) shown = shown.filter(([, m]) => describeMove(m).toLowerCase().includes(st.filter.toLowerCase()));
    const free = d.seats.some(s => s.kind === "human" && !s.taken);
    const invite = `${location.origin}/play#/join/${d.id}`;
    const finished = d.status === "finished";
    const winners = (d.outcome && d.outcome.winners) || (d.result && d.result.winners) || [];
    app.innerHTML = `<h1>${esc(title)}</h1>
      <div class="meta">match <code id="match-id">${esc(d.id)}</code> · <span id="status" data-status="${d.status}">${d.status}</span>
        · version <span id="version">${d.version}</span> · ${you === null ? "spectating" : `you are seat ${you}`}
        ${finished ? ` · <a href="#/replay/${esc(d.id)}" id="replay-link">replay</a>` : ""}</div>
      <ul class="seats" aria-label="seats">${seats}</ul>
      ${free ? `<section class="panel invite"><label>Invite a friend: send this link
        <input id="invite" readonly value="${esc(invite)}"></label></section>` : ""}
      <div class="match">
        <section class="panel board" aria-label="board">${renderBoard(d.game, d.view, { selectedField: st.field })}</section>
        <section class="panel" aria-label="your move">
          ${finished ? `<p class="result" id="result" role="status">${you === null ? "Finished" : winners.includes(you) ? "You won!" : "You lost."}
              Winners: seat${winners.length === 1 ? "" : "s"} ${winners.join(", ") || "none"}${d.outcome && d.outcome.scores ? ` · scores ${d.outcome.scores.join(" / ")}` : ""}</p>
            ${you !== null ? '<button id="rematch" class="primary">Rematch</button>' : ""}`
          : you === null ? '<p class="meta">Spectating: the board updates live.</p>'
          : moves.length ? `<h2 id="turn">Your move</h2>
            <label>Filter <input id="filter" value="${esc(st.filter)}" placeholder="e.g. B1, [1,1], draw" aria-controls="moves"></label>
            ${st.field ? `<p class="meta">Field ${st.field} <button id="clear-field">show all</button></p>` : ""}
            <button id="hint" accesskey="h">Hint (h)</button> <span id="hint-text" role="status">${st.hint ? esc(describeMove(st.hint)) : ""}</span>
            <ol id="moves" aria-label="legal moves">${shown.slice(0, 200).map(([i, m]) => `<li><button class="move${st.hint && JSON.stringify(st.hint) === JSON.stringify(m) ? " hinted" : ""}" data-index="${i}">${i + 1}. ${esc(describeMove(m))}</button></li>`).join("")}</ol>
            ${shown.length > 200 ? `<p class="meta">${shown.length - 200} more: filter or tap a field.</p>` : ""}`
          : `<p id="waiting" class="meta">Waiting for seat${d.to_act.length === 1 ? "" : "s"} ${d.to_act.join(", ")}…</p>`}
          ${you !== null && !finished ? '<button id="leave">Leave</button>' : ""}
          <h3>Events</h3><div class="log" aria-label="events">${st.log.slice(-30).reverse().map(e => `<div>v${e.version} ${e.kind} seat ${e.seat ?? "-"}${e.by === "bot" ? " (bot)" : ""}${e.move ? " " + esc(describeMove(e.move)) : ""}</div>`).join("")}</div>
        </section></div>`;
    wire();
  };

  const act = async fn => {
    try { showError(null); await fn(); } catch (err) {
      showError(err);
      if (err instanceof ApiError && err.status === 409) { await load(); }
    }
    if (st.alive) render();
  };

  const wire = () => {
    for (const b of app.querySelectorAll("button.move")) b.addEventListener("click", () => act(async () => {
      const move = st.doc.legal_moves[Number(b.dataset.index)];
      const done = await call("POST", `/matches/${id}/moves`, { token, body: { move, version: st.doc.version }, query: { include: "legal_moves" } });
      st.log.push({ version: done.version, kind: "move", seat: st.doc.you, move });
      fold(done);
      st.hint = null; st.field = null; st.filter = "";
    }));
    const filter = document.getElementById("filter");
    if (filter) filter.addEventListener("input", () => { st.filter = filter.value; const pos = filter.selectionStart; render();
      const again = document.getElementById("filter"); again.focus(); again.setSelectionRange(pos, pos); });
    for (const cell of app.querySelectorAll("[data-field]")) {
      const pick = () => { st.field = st.field === cell.dataset.field ? null : cell.dataset.field; render(); };
      cell.addEventListener("click", pick);
      cell.addEventListener("keydown", ev => { if (ev.key === "Enter" || ev.key === " ") { ev.preventDefault(); pick(); } });
    }
    const on = (sel, fn) => { const el = document.getElementById(sel); if (el) el.addEventListener("click", () => act(fn)); };
    on("clear-field", async () => { st.field = null; });
    on("hint", async () => { st.hint = (await call("GET", `/matches/${id}/hint`, { token })).move; });
    on("leave", async () => { st.doc = await call("POST", `/matches/${id}/leave`, { token }); });
    on("rematch", async () => {
      const doc = await call("POST", `/matches/${id}/rematch`, { token });
      saveSeat(doc.id, doc.you ?? doc.seat, doc.token);
      location.hash = `#/m/${doc.id}`;
    });
  };

  // Keyboard: h = hint, / = filter, 1-9 = that move when no field has focus.
  const keys = ev => {
    if (ev.target.tagName === "INPUT") return;
    if (ev.key === "h") document.getElementById("hint")?.click();
    else if (ev.key === "/") { ev.preventDefault(); document.getElementById("filter")?.focus(); }
    else if (/^[1-9]$/.test(ev.key)) app.querySelectorAll("button.move")[Number(ev.key) - 1]?.click();
  };
  document.addEventListener("keydown", keys);
  const stop = page.stop;
  page = { stop() { stop(); document.removeEventListener("keydown", keys); } };

  await load();
  if (st.doc.view === null && token) await load();
  render();
  st.ticker = setInterval(() => { if (st.doc?.clock && st.alive) {
    app.querySelectorAll(".seats li").forEach((li, i) => { const c = li.querySelector(".clock"); if (c) c.textContent = clockText(st.doc.clock, i); }); } }, 1000);

  // Live updates: every update carries our view (and legal moves). Over the match's WebSocket; if the socket
  // cannot be had (twice in a row without getting to "ready": no WebSocket on this server or a proxy in the
  // way), long-polls instead. document.body.dataset.live says which one is in use.
  const apply = async doc => {
    if (!st.alive || doc.version <= st.doc.version) return;
    fold(doc);
    if (doc.status === "finished" || doc.events.some(e => e.kind !== "move")) await load();  // outcome, seats
    const focused = document.activeElement && document.activeElement.id;
    render();
    if (focused === "filter") document.getElementById("filter")?.focus();
  };
  let socketFailures = "WebSocket" in window ? 0 : 2;
  while (st.alive && st.doc.status !== "finished") {
    if (socketFailures < 2) {
      document.body.dataset.live = "ws";
      const { ready, error } = await socketSession(id, { token, after: st.doc.version, onUpdate: apply, holder: live });
      if (!st.alive) return;
      if (error && ["wrong_token", "match_not_found"].includes(error.code)) { showError(new ApiError(0, error.code, error.message)); return; }
      socketFailures = ready ? 0 : socketFailures + 1;
      if (st.doc.status !== "finished") await new Promise(r => setTimeout(r, 200 + Math.random() * 800));  // then reconnect
      continue;
    }
    document.body.dataset.live = "long-poll";
    try {
      await apply(await call("GET", `/matches/${id}/events`, { token, signal: st.controller.signal,
        query: { after: st.doc.version, wait: 25, include: token ? "legal_moves" : undefined } }));
    } catch (err) {
      if (!st.alive) return;
      showError(err);
      await new Promise(r => setTimeout(r, 1000));
    }
  }
}

async function joinPage(id) {
  const held = loadSeat(id);
  if (!held) {
    const doc = await call("POST", `/matches/${id}/join`, { body: {} });
    saveSeat(id, doc.seat ?? doc.you, doc.token);
  }
  location.replace(`#/m/${id}`);
}

// ---------------------------------------------------------------- replays
async function replayPage(id) {
  // A finished match's replay carries the view after every version (include=views): the board is redrawn at
  // each step, as this browser's seat saw it (its token, if it played) or as a spectator did.
  const token = (loadSeat(id) || {}).token || null;
  const status = await call("GET", `/matches/${id}`, { token });
  const finished = status.status === "finished";
  const replay = await call("GET", `/matches/${id}/replay`, { token, query: { include: finished ? "views" : undefined } });
  const steps = replay.log;
  let at = steps.length - 1;
  const draw = () => {
    const e = steps[at] || {};
    app.innerHTML = `<h1>Replay of ${esc(replay.game)} <code>${esc(id)}</code></h1>
      <div class="meta">status ${replay.status} · seed ${replay.seed ?? "hidden until the end"} · ${steps.length} entries</div>
      <section class="panel" aria-label="replay controls">
        <button id="first">⏮</button> <button id="prev">◀ prev</button>
        <input id="step" type="range" min="0" max="${Math.max(0, steps.length - 1)}" value="${at}" aria-label="step">
        <button id="next">next ▶</button> <button id="last">⏭</button>
        <p id="step-text" role="status">v${e.version}: ${esc(e.kind)} seat ${e.seat ?? "-"}${e.by === "bot" ? " (bot)" : ""}${e.move ? " — " + esc(describeMove(e.move)) : ""}</p></section>
      <div class="match"><section class="panel board" id="replay-board" aria-label="board at version ${finished ? e.version : status.version}" data-version="${finished ? e.version : status.version}">
        <h3>${finished ? `Position after v${e.version}` : "Current position (the steps are drawn once the match is over)"}</h3>${renderBoard(status.game, finished && e.view !== undefined ? e.view : status.view)}</section>
      <section class="panel"><h3>Log</h3><ol class="log">${steps.map((s, i) => `<li class="${i === at ? "current" : ""}">v${s.version} ${esc(s.kind)} seat ${s.seat ?? "-"}${s.move ? " " + esc(describeMove(s.move)) : ""}</li>`).join("")}</ol></section></div>`;
    document.getElementById("first").onclick = () => go(0);
    document.getElementById("prev").onclick = () => go(at - 1);
    document.getElementById("next").onclick = () => go(at + 1);
    document.getElementById("last").onclick = () => go(steps.length - 1);
    document.getElementById("step").oninput = ev => go(Number(ev.target.value));
    app.querySelector(".log .current")?.scrollIntoView({ block: "nearest" });
  };
  const go = n => {  // redraw at step n, keeping the keyboard focus on the control that was used
    const focused = document.activeElement && document.activeElement.id;
    at = Math.max(0, Math.min(steps.length - 1, n));
    draw();
    if (focused) document.getElementById(focused)?.focus();
  };
  // Keyboard: ← / → step, Home / End jump (outside the slider, which handles its own keys).
  const keys = ev => {
    if (ev.target.tagName === "INPUT") return;
    const to = { ArrowLeft: at - 1, ArrowRight: at + 1, Home: 0, End: steps.length - 1 }[ev.key];
    if (to !== undefined) { ev.preventDefault(); go(to); }
  };
  document.addEventListener("keydown", keys);
  page = { stop() { document.removeEventListener("keydown", keys); } };
  draw();
}

// ---------------------------------------------------------------- router
async function route() {
  page.stop();
  page = { stop() {} };
  showError(null);
  const [, kind, id] = location.hash.match(/^#\/(m|join|replay)\/([^/?#]+)/) || [];
  try {
    await catalogue();
    if (kind === "m") await matchPage(decodeURIComponent(id));
    else if (kind === "join") await joinPage(decodeURIComponent(id));
    else if (kind === "replay") await replayPage(decodeURIComponent(id));
    else await lobby();
  } catch (err) {
    showError(err);
  }
}

window.addEventListener("hashchange", route);
route();
