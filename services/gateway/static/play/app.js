// The browser client: lobby, a live board per game drawn from the game's components, moves chosen step by step
// in words, the log in words, clocks that tick, a result screen, replays. No build step, no framework.
// Routes live in the URL hash so an invite is a plain link and a reload resumes: #/  #/m/ID  #/join/ID  #/replay/ID
// (and a tenant's tournaments, tournament.js: #/tournaments  #/tournament/ID). Two links carry a token in the
// fragment (never sent to the server; stored here, then taken out of the address bar): #/m/ID?t=TOKEN, a party
// member's seat, and #/w/ID?t=w_TOKEN, a watch link an app handed out (read-only).
import { ApiError, SocketGone, call, fetchText, forgetMatch, loadParty, loadSeat, loadWatch, myMatches, newKey, saveParty, saveSeat,
  saveWatch, socketSession } from "./api.js";
import { SEAT_COLOURS, card, esc, indexComponents, renderBoard } from "./boards.js";
import { moveWords, renderChooser, stepBack } from "./chooser.js";
import { chatPanel } from "./chat.js";
import { tournamentPage, tournamentsPage } from "./tournament.js";

const app = document.getElementById("app");
const errorBox = document.getElementById("error");
let games = [];
const components = {};      // game id -> indexed components (GET /v1/games/{game}, cached by the browser too)
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

const details = {};          // game id -> GET /v1/games/{game} (its components and its rules for people)

async function detailsOf(game) {
  if (!details[game]) details[game] = await call("GET", `/games/${encodeURIComponent(game)}`);
  return details[game];
}

async function componentsOf(game) {
  if (!components[game]) components[game] = indexComponents((await detailsOf(game)).components);
  return components[game];
}

/** The game's goal in one line (the catalogue's rules), for the game view. */
const goalOf = game => ((details[game] || {}).rules || {}).goal || "";

// ---------------------------------------------------------------- rules pages
async function rulesPage(game) {
  const doc = await detailsOf(game);
  const rules = doc.rules;
  if (!rules) { app.innerHTML = `<h1>${esc(doc.title)}</h1><p class="meta">No rules written for this game yet.</p>`; return; }
  app.innerHTML = `<article class="panel rules" id="rules" aria-labelledby="rules-h">
    <p class="meta"><a href="#/">Lobby</a> (your browser's Back returns to a game)</p>
    <h1 id="rules-h">How to play ${esc(doc.title)}</h1>
    <p class="goal" id="rules-goal"><b>Goal:</b> ${esc(rules.goal)}</p>
    <p class="meta">${doc.min_players === doc.max_players ? `${doc.min_players} players` : `${doc.min_players} to ${doc.max_players} players`}</p>
    ${rules.sections.map(sec => `<section><h2>${esc(sec.title)}</h2>${sec.paragraphs.map(p => `<p>${esc(p)}</p>`).join("")}</section>`).join("")}
  </article>`;
}

const gameTitle = id => (games.find(g => g.id === id) || { title: id }).title;

// ---------------------------------------------------------------- rules text on hover or tap
function showCardInfo(comp, id, anchor) {
  const box = document.getElementById("card-info");
  const e = comp && comp.byId[id];
  if (!box || !e) return;
  let extra = "";
  if (e.drawers) extra = `<p class="meta">${e.drawers.map(d => `${esc(d.colour)}${d.handle ? ` (${esc(d.handle)} handle)` : ""}`).join(" · ")}</p>`;
  if (e.categories) extra = `<p class="meta">categories: ${e.categories.map(c => esc(((comp.categories || []).find(x => x.id === c) || {}).name || c.replace(/_/g, " "))).join(", ")}</p>`;
  if (e.picture) extra = `<pre class="picture">${e.picture.map(esc).join("\n")}</pre>`;
  box.innerHTML = `<button class="close" id="card-info-close" aria-label="close">×</button><b>${esc(id.replace("goal:", "goal "))} ${esc(e.name)}</b>
    ${e.effect_name ? `<span class="meta"> · ${esc(e.effect_name)}${e.timing ? ` (${esc(e.timing)})` : ""}</span>` : ""}
    <p id="card-info-text">${esc(e.text || "")}</p>${extra}`;
  box.hidden = false;
  document.getElementById("card-info-close").onclick = () => { box.hidden = true; };
  if (anchor && anchor.getBoundingClientRect && window.innerWidth > 700) {
    const r = anchor.getBoundingClientRect();
    box.style.left = `${Math.min(window.innerWidth - 340, Math.max(8, r.left))}px`;
    box.style.top = `${window.scrollY + r.bottom + 6}px`;
  } else { box.style.left = ""; box.style.top = ""; }
}

function wireCards(comp) {
  for (const el of app.querySelectorAll("[data-card]")) {
    el.addEventListener("mouseenter", () => showCardInfo(comp, el.dataset.card, el));
    el.addEventListener("click", ev => { if (!el.closest("[data-field].choosable")) { ev.stopPropagation(); showCardInfo(comp, el.dataset.card, el); } });
    el.addEventListener("keydown", ev => { if (ev.key === "Enter" && !el.dataset.field) showCardInfo(comp, el.dataset.card, el); });
  }
  for (const el of app.querySelectorAll("[data-card-id]")) el.addEventListener("mouseenter", () => showCardInfo(comp, el.dataset.cardId, el));
}

// ---------------------------------------------------------------- lobby
/** An option's words: its identifiers ("random_support", "end_reason round_limit") and JSON lists read as words. */
const words = text => String(text ?? "").replace(/\(end_reason round_limit\)/g, "(at the round limit)")
  .replace(/\[([^\]]*)\]/g, "$1").replace(/'([a-z_]+)'/g, "$1").replace(/\b([a-z]+(?:_[a-z0-9]+)+)\b/g, m => m.replace(/_/g, " "));

/** A choice's words: a seat number as the seat (CLASH: its colour), an identifier as words. */
function choiceWords(o, c) {
  if (typeof c === "number" && /player|seat/.test(o.name)) return o.name === "first_player" ? `seat ${c} (${c ? "Green" : "Blue"})` : `seat ${c}`;
  return String(c).replace(/_/g, " ").replace(/^best of 3$/, "best of 3 games").replace(/^single$/, "a single game").replace(/^points$/, "a points series");
}

function optionField(o) {
  const id = `opt-${o.name}`, tip = esc(words(o.description || ""));
  if (o.type === "bool") return `<label title="${tip}"><input type="checkbox" id="${id}" data-opt="${o.name}" data-kind="bool" ${o.default ? "checked" : ""}> ${tip || esc(words(o.name))}</label>`;
  if (o.type === "int") return `<label title="${tip}">${esc(words(o.name))} <input type="number" id="${id}" data-opt="${o.name}" data-kind="int" min="${o.minimum ?? ""}" max="${o.maximum ?? ""}" value="${o.default}"><span class="meta"> ${tip}</span></label>`;
  if (o.type === "choice") return `<label title="${tip}">${esc(words(o.name))} <select id="${id}" data-opt="${o.name}" data-kind="choice">${o.choices.map(c => `<option value='${esc(JSON.stringify(c))}' ${JSON.stringify(c) === JSON.stringify(o.default) ? "selected" : ""}>${esc(choiceWords(o, c))}</option>`).join("")}</select><span class="meta"> ${tip}</span></label>`;
  // "any" (Sideboards' goals): the default, or numbers the description explains ("2 9 19" is sent as [2, 9, 19])
  return `<label title="${tip}">${esc(words(o.name))} <input id="${id}" data-opt="${o.name}" data-kind="any" placeholder="${esc(words(String(o.default)))}"><span class="meta"> ${tip}</span></label>`;
}

function readOptions() {
  const out = {};
  for (const el of document.querySelectorAll("[data-opt]")) {
    const kind = el.dataset.kind, name = el.dataset.opt;
    if (kind === "bool") { if (el.checked) out[name] = true; }
    else if (kind === "int") { if (el.value !== "" && el.value !== el.defaultValue) out[name] = Number(el.value); }
    else if (kind === "choice") out[name] = JSON.parse(el.value);
    else if (el.value.trim()) {  // numbers as words ("2 9 19" or "2, 9, 19"), a word, or JSON
      const text = el.value.trim();
      out[name] = /^\d+([\s,]+\d+)*$/.test(text) ? text.split(/[\s,]+/).map(Number) : /^[a-z]+$/i.test(text) ? text : JSON.parse(text);
    }
  }
  return out;
}

const DEFAULTS = { clash: { match: "single" } };  // a first game: one CLASH game rather than a best of 3

async function lobby() {
  const list = await catalogue();
  const gameOptions = list.map(g => `<option value="${g.id}">${esc(g.title)} (${g.min_players === g.max_players ? g.min_players : `${g.min_players}–${g.max_players}`} players)</option>`).join("");
  app.innerHTML = `<div class="lobby">
    <section class="panel" aria-labelledby="new-h"><h2 id="new-h">New game</h2>
      <form id="new-game">
        <label>Game <select name="game" id="game">${gameOptions}</select></label>
        <p class="meta"><a id="rules-link" href="#/rules/${esc(list[0].id)}">How to play ${esc(list[0].title)}</a></p>
        <label>Players <input name="players" id="players" type="number" min="1" max="6" value="2"></label>
        <label>Other seats <select name="vs" id="vs">
          <option value="easy">bots: easy</option><option value="normal" selected>bots: normal</option>
          <option value="hard">bots: hard</option><option value="humans">friends (invite by link)</option></select></label>
        <label>Clock <select name="clock" id="clock"><option value="">none</option>
          <option value="per_move:60">60 s per move</option><option value="per_move:20">20 s per move</option>
          <option value="fischer:300:5">5 min + 5 s</option></select></label>
        <fieldset id="options"><legend>Options</legend></fieldset>
        <button class="primary" type="submit" id="create">Play</button>
      </form></section>
    <section class="panel" aria-labelledby="mm-h"><h2 id="mm-h">Matchmaking</h2>
      <p class="meta">Play people who ask for the same game, players and options (chosen under New game); if nobody comes in time, bots fill the empty seats.</p>
      <button id="matchmake">Find a game</button> <button id="mm-cancel" hidden>Cancel</button> <span id="mm-status" role="status"></span>
      <h3 id="party-h">With friends (a party)</h3>
      <p class="meta">You and the friends you name queue as one party: you are seated together in one match (in They Who Were 8 on one team when it fits), matchmaking finds the other players or bots fill. Once the match is made you get one link per friend, holding their seat: send each friend theirs.</p>
      <label>Friends <input id="party-names" placeholder="names, e.g. Ann, Bob" autocomplete="off"></label>
      <button id="party-queue">Queue with friends</button> <span id="party-status" role="status"></span></section>
    <section class="panel" aria-labelledby="watch-h"><h2 id="watch-h">Spectate or replay</h2>
      <form id="watch"><label>Match id <input id="watch-id" name="id" required></label>
        <button type="submit">Watch</button> <button type="button" id="replay-btn">Replay</button></form></section>
    <section class="panel" aria-labelledby="mine-h"><h2 id="mine-h">Your matches</h2><div id="mine" aria-live="polite"><p class="meta">Loading…</p></div></section>
  </div>`;
  const gameSel = document.getElementById("game"), players = document.getElementById("players");
  const syncGame = () => {
    const g = list.find(x => x.id === gameSel.value);
    players.min = g.min_players; players.max = g.max_players;
    const rulesLink = document.getElementById("rules-link");
    rulesLink.href = `#/rules/${g.id}`; rulesLink.textContent = `How to play ${g.title}`;
    players.value = Math.min(g.max_players, Math.max(g.min_players, 2));
    document.getElementById("options").innerHTML = `<legend>Options for ${esc(g.title)}</legend>${g.options.map(optionField).join("") || '<p class="meta">none</p>'}`;
    for (const [name, value] of Object.entries(DEFAULTS[g.id] || {})) {
      const el = document.getElementById(`opt-${name}`);
      if (el) el.value = JSON.stringify(value);
    }
  };
  gameSel.addEventListener("change", syncGame);
  syncGame();
  document.getElementById("new-game").addEventListener("submit", safe(async ev => {
    ev.preventDefault();
    const n = Number(players.value), vs = document.getElementById("vs").value;
    const other = vs === "humans" ? { kind: "human" } : { kind: "bot", level: vs };
    const body = { game: gameSel.value, players: n, join: true, options: readOptions(),
                   seats: [{ kind: "human" }, ...Array(n - 1).fill(other)] };
    const clock = document.getElementById("clock").value;
    if (clock.startsWith("per_move")) body.clock = { mode: "per_move", seconds: Number(clock.split(":")[1]) };
    if (clock.startsWith("fischer")) body.clock = { mode: "fischer", base_s: 300, increment_s: 5 };
    const doc = await call("POST", "/matches", { body });
    saveSeat(doc.id, doc.you ?? 0, doc.token, gameSel.value);
    location.hash = `#/m/${doc.id}`;
  }));
  let ticket = null, tell = () => {};  // tell: the status line of the queue under way (alone, or the party)
  const mmButton = document.getElementById("matchmake"), cancel = document.getElementById("mm-cancel"), status = document.getElementById("mm-status");
  const partyButton = document.getElementById("party-queue"), partyStatus = document.getElementById("party-status");
  /** Queue `body` and wait until matched; a party's tokens are kept from the answer that first carries them. */
  const queue = async (body, say) => {
    tell = say;
    ticket = await call("POST", "/matchmaking", { body });
    let token = ticket.token, party = ticket.party;
    mmButton.disabled = partyButton.disabled = true; cancel.hidden = false;
    const started = Date.now();
    say("Looking for other players…");
    const tick = setInterval(() => say(`Looking for other players… ${Math.round((Date.now() - started) / 1000)} s (bots fill empty seats after a short wait)`), 1000);
    try {
      while (ticket.status === "waiting") {
        ticket = await call("GET", `/matchmaking/${ticket.ticket}`, { query: { wait: 5 } });
        token = ticket.token || token;
        if (ticket.party && ticket.party.some(m => m.token)) party = ticket.party;
      }
    } finally { clearInterval(tick); mmButton.disabled = partyButton.disabled = false; cancel.hidden = true; }
    if (ticket.status !== "matched") { say(ticket.status === "cancelled" ? "Cancelled." : `Ticket ${ticket.status}.`); return null; }
    return { ...ticket, token, party };
  };
  mmButton.addEventListener("click", safe(async () => {
    const done = await queue({ game: gameSel.value, players: Number(players.value), options: readOptions() }, t => { status.textContent = t; });
    if (!done) return;
    saveSeat(done.match_id, done.seat, done.token, gameSel.value);
    location.hash = `#/m/${done.match_id}`;
  }));
  partyButton.addEventListener("click", safe(async () => {
    const friends = document.getElementById("party-names").value.split(/[,\n]/).map(n => n.trim()).filter(Boolean);
    if (!friends.length) { partyStatus.textContent = "Name at least one friend."; return; }
    const party = [{ name: "you" }, ...friends.map(name => ({ name: name.slice(0, 32) }))];
    const done = await queue({ game: gameSel.value, players: Number(players.value), options: readOptions(), party },
                             t => { partyStatus.textContent = t; });
    if (!done) return;
    const [me, ...others] = done.party;
    saveSeat(done.match_id, me.seat, me.token, gameSel.value);
    saveParty(done.match_id, others.map(m => ({ name: m.name, seat: m.seat, team: m.team ?? null,
                                                link: `${location.origin}/play#/m/${done.match_id}?t=${encodeURIComponent(m.token)}` })));
    location.hash = `#/m/${done.match_id}`;
  }));
  cancel.addEventListener("click", safe(async () => {
    if (!ticket) return;
    // said before the DELETE: its answer wakes the waiting loop above, which may write "Cancelled." first
    tell("Cancelling…");
    try { await call("DELETE", `/matchmaking/${ticket.ticket}`); }
    catch (err) { if (!(err instanceof ApiError && err.code === "ticket_matched")) throw err; }
  }));
  document.getElementById("watch").addEventListener("submit", ev => {
    ev.preventDefault(); location.hash = `#/m/${document.getElementById("watch-id").value.trim()}`;
  });
  document.getElementById("replay-btn").addEventListener("click", () => {
    location.hash = `#/replay/${document.getElementById("watch-id").value.trim()}`;
  });
  await yourMatches();
}

/** "Your matches": each match this browser holds a seat in, its state, and resign / leave for unfinished ones. */
async function yourMatches() {
  const box = document.getElementById("mine");
  const mine = myMatches();
  if (!mine.length) { box.innerHTML = '<p class="meta">None yet.</p>'; return; }
  const rows = await Promise.all(mine.map(async id => {
    const held = loadSeat(id) || {};
    try {
      const d = await call("GET", `/matches/${id}`, { token: held.token });
      const turn = d.status === "active" && d.you !== null && d.to_act.includes(d.you);
      const state = d.status === "finished" ? "finished" : d.status === "waiting" ? "waiting for players" : turn ? "your turn" : "running";
      const actions = d.status !== "finished" && d.you !== null
        ? `<button class="resign" data-id="${esc(id)}">Resign</button> <button class="leave" data-id="${esc(id)}">Leave</button>` : `<button class="forget" data-id="${esc(id)}">Forget</button>`;
      return `<li data-match="${esc(id)}" data-state="${esc(d.status)}"><a href="#/m/${esc(id)}">${esc(gameTitle(d.game))}</a> <code>${esc(id)}</code>
        <span class="state ${turn ? "turn" : ""}">${state}</span> ${actions}</li>`;
    } catch (err) {
      return `<li data-match="${esc(id)}" data-state="gone"><code>${esc(id)}</code> <span class="state">${err.status === 404 ? "expired" : esc(err.code || "unavailable")}</span> <button class="forget" data-id="${esc(id)}">Forget</button></li>`;
    }
  }));
  box.innerHTML = `<ul class="mine">${rows.join("")}</ul><div id="mine-confirm"></div>`;
  const confirmBox = document.getElementById("mine-confirm");
  const ask = (id, what, path) => {
    confirmBox.innerHTML = `<div class="confirm" role="alertdialog" aria-label="confirm">${what === "resign"
      ? "Resign this match? Your side loses; an easy bot plays your remaining decisions."
      : "Leave this match? A bot plays your seat from now on and you cannot come back."}
      <button class="primary" id="mine-yes">Yes, ${what}</button> <button id="mine-no">No</button></div>`;
    document.getElementById("mine-no").onclick = () => { confirmBox.innerHTML = ""; };
    document.getElementById("mine-yes").onclick = safe(async () => {
      await call("POST", `/matches/${id}/${path}`, { token: (loadSeat(id) || {}).token });
      if (path === "leave") forgetMatch(id);  // the seat's token stops working when it leaves
      confirmBox.innerHTML = "";
      await yourMatches();
    });
  };
  for (const b of box.querySelectorAll("button.resign")) b.onclick = () => ask(b.dataset.id, "resign", "resign");
  for (const b of box.querySelectorAll("button.leave")) b.onclick = () => ask(b.dataset.id, "leave", "leave");
  for (const b of box.querySelectorAll("button.forget")) b.onclick = () => { forgetMatch(b.dataset.id); yourMatches(); };
}

// ---------------------------------------------------------------- a match
function secondsLeft(clock, seat) {
  if (!clock || clock.mode === "none") return null;
  const s = clock.seats.find(x => x.seat === seat);
  if (!s) return null;
  if (s.running && s.deadline) return Math.max(0, s.deadline - Date.now() / 1000);
  return s.remaining_s ?? null;
}

function clockText(clock, seat) {
  const left = secondsLeft(clock, seat);
  return left === null ? "" : ` ${CLOCK_ICON} ${Math.floor(left / 60)}:${String(Math.floor(left % 60)).padStart(2, "0")}`;
}

/** A stopwatch drawn inline (an emoji would be an empty box without an emoji font). */
const CLOCK_ICON = '<svg class="icon" viewBox="0 0 16 16" width="12" height="12" aria-hidden="true"><circle cx="8" cy="9" r="6" fill="none" stroke="currentColor" stroke-width="1.6"/><path d="M8 9V5.5M6 1.5h4" stroke="currentColor" stroke-width="1.6" fill="none"/></svg>';

/** Low on time: at most 10 s, or a fifth of a move's time or of a Fischer bank, whichever is more. */
function lowOnTime(clock, seat) {
  const left = secondsLeft(clock, seat);
  const s = clock && clock.seats ? clock.seats.find(x => x.seat === seat) : null;
  if (left === null || !s || !s.running) return false;
  const whole = clock.mode === "per_move" ? clock.seconds : clock.mode === "fischer" ? clock.base_s : null;
  return left <= Math.max(10, whole ? whole / 5 : 0);
}

/** The clock of a seat: its time left, and a warning when the viewer's own clock runs low. */
function clockHtml(d, seat) {
  const text = clockText(d.clock, seat);
  if (!text) return "";
  return seat === d.you && lowOnTime(d.clock, seat) ? `${text} <b class="low-time">low on time!</b>` : text;
}

// ---------------------------------------------------------------- turn alerts
// The tab's title says "Your turn"; a sound (if switched on here) and a browser notification (if the player
// allowed them and the tab is not in front) say it once when a turn begins.
const BASE_TITLE = "Meeple — play";
const soundOn = () => localStorage.getItem("meeple.sound") === "on";

function beep() {
  try {
    const audio = new (window.AudioContext || window.webkitAudioContext)();
    const tone = audio.createOscillator(), gain = audio.createGain();
    tone.frequency.value = 660; gain.gain.value = 0.08;
    tone.connect(gain).connect(audio.destination);
    tone.start(); tone.stop(audio.currentTime + 0.18);
    tone.onended = () => audio.close();
  } catch { /* no audio here */ }
}

function turnAlert(title) {
  if (soundOn()) beep();
  if ("Notification" in window && Notification.permission === "granted" && document.visibilityState !== "visible") {
    try { new Notification("Your turn", { body: title, tag: "meeple-turn" }); } catch { /* not allowed here */ }
  }
}

/** Who the viewer is, in the game's own terms: a colour and side, a team, or the automa beside them. */
function identity(d) {
  if (d.you === null || d.you === undefined) return "You are watching.";
  if (d.game === "clash") return `You are seat ${d.you}: <b style="color:${d.you ? "var(--green)" : "var(--blue)"}">${d.you ? "Green (Jihad)" : "Blue (McWorld)"}</b>, your tiles point ${d.you ? "north" : "south"}.`;
  if (d.game === "they-who-were-8") { const team = d.you % 2; return `You are seat ${d.you}, <b style="color:${team ? "var(--green)" : "var(--blue)"}">team ${team}</b> with seat ${(d.you + 2) % 4}.`; }
  if (d.game === "fierce-women" && d.players === 2) return `You are seat ${d.you}; seat 2 is the automa.`;
  return `You are <b style="color:${SEAT_COLOURS[d.you]}">seat ${d.you}</b>.`;
}

function seatName(d, s) {
  const seat = d.seats[s];
  if (d.game === "fierce-women" && d.players === 2 && s === 2) return "the automa";
  const who = s === d.you ? "you" : seat && seat.kind === "bot" ? `seat ${s} (bot)` : `seat ${s}`;
  return d.game === "clash" ? `${who} (${s ? "Green" : "Blue"})` : who;
}

/** They Who Were 8: a seat's team as a chip in the team's colour (from the view's teams, else the result's rows). */
function teamChip(d, seat) {
  if (d.game !== "they-who-were-8") return "";
  const teams = (d.view && d.view.teams) || ((((d.result || {}).explanation || {}).teams) || []).map(t => t.seats);
  const team = teams.findIndex(t => t.includes(seat));
  if (team < 0) return "";
  return ` <span class="team-chip" data-team="${team}" style="background:${team ? "var(--green)" : "var(--blue)"}">team ${team}</span>`;
}

/** A result row's label; in They Who Were 8 the team is a chip (a seat's "(team N)" becomes the chip). */
function rowLabel(d, s) {
  const you = s.seat === d.you ? " (you)" : "";
  if (d.game !== "they-who-were-8") return `${esc(s.label)}${you}`;
  if (s.seat === undefined) return `<span class="team-label" style="color:${(s.seats || [0])[0] % 2 ? "var(--green)" : "var(--blue)"}">${esc(s.label)}</span>`;
  return `${esc(s.label.replace(/ \(team \d+\)/, ""))}${you}${teamChip(d, s.seat)}`;
}

/** Seats a bot played for part of the game (a timeout, then maybe a reclaim), from the log, in words. */
function botPlayedHtml(d, log) {
  const seats = [...new Set((log || []).filter(e => e.kind === "timeout" && e.seat !== null && e.seat !== undefined).map(e => e.seat))];
  if (!seats.length) return "";
  const lines = seats.map(seat => {
    const last = log.filter(e => ["timeout", "reclaimed"].includes(e.kind) && e.seat === seat).pop();
    const back = last && last.kind === "reclaimed";
    const who = seat === d.you ? "you" : seatName(d, seat);
    return `A bot played part of this game for ${who}: ${seat === d.you ? "your" : "their"} time ran out${back ? `, and ${seat === d.you ? "you" : "they"} took the seat back later` : ", and the bot played on to the end"}.`;
  });
  return `<p id="bot-played" class="bot-played">${lines.map(esc).join("<br>")}</p>`;
}

/** Where each side stood when a forfeit or an abandonment ended the match early (the game's own score sheet
 * is then null): the final position read as the game scores it. */
function standing(d) {
  const v = d.view || {};
  if (d.game === "clash" && v.board) {
    const tiles = [0, 0];
    for (const row of v.board) for (const cell of row) if (cell && cell.face === "up") tiles[cell.supports === "blue" ? 0 : 1]++;
    return [0, 1].map(s => ({ seat: s, label: `Seat ${s}: ${s ? "Green (Jihad)" : "Blue (McWorld)"}`, score: tiles[s],
      breakdown: [{ label: "tiles supporting it on the board", value: tiles[s] }, { label: "games won before", value: (v.wins || [0, 0])[s] }] }));
  }
  if (d.game === "fierce-women" && v.points_now) {
    return v.points_now.map((p, s) => ({ seat: s, label: v.automa_seat === s ? "Automa" : `Seat ${s}`, score: p,
      breakdown: [{ label: "women in scoring columns", value: (v.tables[s] || []).filter(c => c.category).reduce((n, c) => n + c.cards.filter(x => x.startsWith("W")).length, 0) }] }));
  }
  if (d.game === "sideboards" && v.provisional) {
    return v.provisional.map((p, s) => ({ seat: s, label: `Seat ${s}`, score: p.total ?? "",
      breakdown: [{ label: "colour goal", value: p.colour_count }, { label: "handle goal", value: p.handle_count }, { label: "row drawers", value: p.row_drawers }] }));
  }
  if (d.game === "they-who-were-8" && v.gods) {
    return v.teams.map((seats, t) => {
      const mine = v.gods.filter(g => seats.includes(g.owner));
      const glory = mine.reduce((n, g) => n + g.glory, 0), infamy = mine.reduce((n, g) => n + g.infamy, 0), used = mine.filter(g => g.used).length;
      return { seats, label: `Team ${t} (seats ${seats.join(" and ")})`, score: 2 * glory - infamy - 2 * used,
        breakdown: [{ label: "glory", value: glory }, { label: "infamy", value: infamy }, { label: "powers used", value: used }] };
    });
  }
  return [];
}

/** Why a match ended early, in the log's own words (a resignation, a forfeit on time, an abandonment). */
function earlyEnd(log) {
  const e = [...(log || [])].reverse().find(x => ["resigned", "resign", "timeout", "left", "abandoned", "aborted"].includes(x.kind));
  return e && e.text ? e.text : "the match ended before the game did.";
}

const capital = s => s.charAt(0).toUpperCase() + s.slice(1);
const namesOf = (d, seats) => seats.map(s => capital(seatName(d, s))).join(", ");

/** CLASH says which match format ended (single game, best of 3, points series): the reason in words. */
const CLASH_REASONS = { board_full: "all nine fields hold face-up tiles", move_limit: "the move limit was reached" };
function clashReason(ex) {
  const last = (ex.games || [])[ex.games.length - 1] || {};
  const colour = s => (s ? "Green" : "Blue");
  const game = last.reason === "no_placement" ? `${colour(last.stuck)} could not place a tile` : CLASH_REASONS[last.reason] || "the game is over";
  const kaboom = last.kaboom !== null && last.kaboom !== undefined ? `, and KABOOM!!! supported ${colour(last.kaboom)}` : "";
  if (ex.end_reason === "single_game") return `${game}${kaboom}`;
  if (ex.end_reason === "two_wins") return `${colour((ex.winners || [])[0])} won two games`;
  if (ex.end_reason === "three_games_played") return "all three games were played";
  if (ex.end_reason === "points_series_complete") return `all ${ex.games.length} games of the series were played`;
  return `${game}${kaboom}`;
}

function resultHtml(d, log = []) {
  const r = d.result || {}, ex = r.explanation;
  const winners = (ex && ex.winners) || (d.outcome && d.outcome.winners) || r.winners || [];
  const verdict = d.you === null ? "The game is over." : winners.includes(d.you) ? (winners.length > 1 ? "You share the win!" : "You won!") : "You lost.";
  const table = (rows, unit, teamOf = null) => `<table class="breakdown"><thead><tr><th>Who</th><th>How</th><th>${esc(unit)}</th></tr></thead><tbody>
    ${rows.map(s => `<tr class="${winners.includes(s.seat) || (s.seats || []).some(x => winners.includes(x)) ? "won" : ""}"><th>${rowLabel(d, s)}</th>
      <td><ul>${s.breakdown.map(b => `<li>${esc(b.label)}: <b>${esc(b.value)}</b></li>`).join("")}</ul></td><td class="score">${teamOf ? `for team ${teamOf(s.seat)}` : esc(s.score)}</td></tr>`).join("")}</tbody></table>`;
  const forfeit = d.outcome && d.outcome.forfeited && d.outcome.forfeited.length ? `<p id="forfeits">Forfeited: ${esc(namesOf(d, d.outcome.forfeited))}.</p>` : "";
  const winnersLine = `<p id="winners">${winners.length ? `${winners.length > 1 ? "Winners" : "Winner"}: ${esc(namesOf(d, winners))}` : "Nobody won."}</p>`;
  if (!ex) {
    const rows = standing(d);
    return `<div class="result" id="result" role="status"><h2 id="verdict">${verdict}</h2>${winnersLine}
      <p class="meta" id="reason">Why it ended: ${esc(earlyEnd(log))}</p>${forfeit}${botPlayedHtml(d, log)}
      ${rows.length ? `<p class="meta">Where everyone stood when it ended:</p>${table(rows, d.game === "they-who-were-8" ? "team points" : "points then")}` : ""}</div>`;
  }
  const reason = d.game === "clash" ? clashReason(ex) : ex.reason_text || ex.end_reason.replace(/_/g, " ");
  const games = ex.games && ex.games.length > 1 ? `<ol class="games" id="games">${ex.games.map(g => `<li>${esc(g.text)}</li>`).join("")}</ol>` : "";
  const tw8 = d.game === "they-who-were-8" && ex.teams;
  const teamOf = seat => ex.teams.findIndex(t => (t.seats || []).includes(seat));
  return `<div class="result" id="result" role="status"><h2 id="verdict">${verdict}</h2>
    <p id="headline">${esc(ex.headline)}</p>
    <p class="meta" id="reason">Why it ended: ${esc(reason)}</p>${forfeit}${botPlayedHtml(d, log)}
    ${games}
    ${ex.teams ? table(ex.teams, "team points") : ""}
    ${tw8 ? table(ex.seats, "scores", teamOf) : table(ex.seats, (ex.seats[0] || {}).unit || "score")}</div>`;
}

// ---------------------------------------------------------------- the move being chosen, drawn on the board
const VERBS = { destroy: "destroyed", flip: "flipped", discard: "discarded", move: "moved", repeat: "repeated", zone_transfer: "taken" };
const STEPS = { north: [-1, 0], south: [1, 0], east: [0, 1], west: [0, -1] };
const NEAR = { orthogonal: [[1, 0], [0, 1], [-1, 0], [0, -1]], diagonal: [[1, 1], [1, -1], [-1, 1], [-1, -1]] };

/** The fields a CLASH placement's effect will hit (face-up tiles without Security in its reach; the target). */
function clashHits(view, move, comp) {
  const e = move.effect || {}, [r, c] = move.field;
  const at = (rr, cc) => rr >= 0 && rr < 3 && cc >= 0 && cc < 3 ? view.board[rr][cc] : null;
  const open = (rr, cc) => { const x = at(rr, cc); return x && x.face === "up" && !x.security; };
  if (e.target) return [e.target.join(","), ...(e.to ? [e.to.join(",")] : [])];
  let near = [];
  if (e.direction) { const [dr, dc] = STEPS[e.direction]; for (let k = 1; k < 3; k++) near.push([r + dr * k, c + dc * k]); }
  else if (e.pattern) near = NEAR[e.pattern].map(([dr, dc]) => [r + dr, c + dc]);
  else if (Object.keys(e).length === 0) {
    const front = move.supports === "blue" ? 1 : -1;
    near = ((comp.byId[move.tile] || {}).dots || []).length  // the Social network: the 3 fields in front of its tip
      ? [-1, 0, 1].map(dc => [r + front, c + dc]) : [...NEAR.orthogonal, ...NEAR.diagonal].map(([dr, dc]) => [r + dr, c + dc]);
  }
  return near.filter(([rr, cc]) => open(rr, cc)).map(f => f.join(","));
}

/** What to draw on the board for the choices so far: the field (and the tiles an effect hits), or the column. */
function previewOf(d, chooser, comp) {
  const left = (chooser && chooser.left) || [];
  const move = left[0];
  if (!move || move.type !== "place") return {};
  const same = k => left.every(m => JSON.stringify(m[k]) === JSON.stringify(move[k]));
  if (d.game === "clash" && move.field && same("field")) {
    const out = { field: move.field.join(","), tile: move.tile };
    if (left.length === 1 && move.effect) {
      out.hits = clashHits(d.view, move, comp);
      out.verb = VERBS[(comp.byId[move.tile] || {}).effect] || "hit";
    }
    return out;
  }
  if (d.game === "fierce-women" && move.column !== undefined && same("column") && same("card")) return { column: move.column, card: move.card };
  return {};
}

/** Text to the clipboard (a page without clipboard access: through a selected, hidden text field). */
async function copyText(text) {
  try { await navigator.clipboard.writeText(text); } catch {
    const area = Object.assign(document.createElement("textarea"), { value: text });
    document.body.append(area); area.select(); document.execCommand("copy"); area.remove();
  }
}

/** The party's other members and their links (kept by the browser that queued the party): one to send each. */
function partyHtml(party) {
  return `<section class="panel invite" id="party" aria-labelledby="party-h"><h3 id="party-h">Your party: send each friend their own link</h3>
    <p class="meta">Each link holds that friend's seat: whoever opens it plays it, so send it to them only.</p>
    ${party.map((m, i) => `<label for="party-link-${i}">${esc(m.name || `friend ${i + 1}`)} · seat ${esc(m.seat)}${m.team !== null && m.team !== undefined ? ` · team ${esc(m.team)}` : ""}</label>
      <div class="row"><input id="party-link-${i}" class="party-link" readonly value="${esc(m.link)}"> <button class="copy-party" id="copy-party-${i}" data-i="${i}">Copy</button> <span id="party-copied-${i}" role="status"></span></div>`).join("")}</section>`;
}

/** Who said a chat message: "you", a seat in the game's terms, or a spectator. */
const chatName = (d, seat) => (seat === null || seat === undefined ? "a spectator" : seatName(d, seat));

/** A match; `watch`: read-only with the watch token this browser was given for it (#/w/ID). */
async function matchPage(id, { watch = false } = {}) {
  const held = watch ? null : loadSeat(id);
  const token = watch ? loadWatch(id) : held ? held.token : null;
  const seatToken = watch ? null : token;  // a watch token reads the spectator view: no legal moves to ask for
  const st = { id, token, doc: null, chosen: [], hint: null, alive: true, log: [], logVersion: -1,
               confirmLeave: false, controller: new AbortController() };
  const live = { socket: null, move: null };
  page = { stop() { st.alive = false; st.controller.abort(); clearInterval(st.ticker); live.socket?.close(); document.title = BASE_TITLE; } };

  const load = async () => {
    st.doc = await call("GET", `/matches/${id}`, { token, query: { include: seatToken ? "legal_moves" : undefined } });
  };
  const addEvents = events => {
    for (const e of events) if (e.version > st.logVersion) { st.log.push(e); st.logVersion = e.version; }
  };
  const fold = doc => {  // a status document, or an events document (which lacks seats/clock/outcome)
    if ("events" in doc) addEvents(doc.events);
    // Never back to an older version: a move's answer can arrive after the socket brought later versions.
    if (st.doc && doc.version < st.doc.version) return;
    const before = st.doc && st.doc.view;  // the board before this change: what changed is highlighted
    if ("events" in doc) {
      Object.assign(st.doc, { version: doc.version, status: doc.status, to_act: doc.to_act, result: doc.result });
      if (doc.view) st.doc.view = doc.view;
      if ("legal_moves" in doc) st.doc.legal_moves = doc.legal_moves;
    } else st.doc = doc;
    if (before && st.doc.view && st.doc.view !== before && JSON.stringify(st.doc.view) !== JSON.stringify(before)) st.prevView = before;
  };

  await load();
  if (st.doc.view === null && token) await load();
  if (held && (held.seat === null || held.seat === undefined) && st.doc.you !== null) saveSeat(id, st.doc.you, token, st.doc.game);
  const comp = await componentsOf(st.doc.game);
  const chat = await chatOf(st.doc.game, {
    whoOf: seat => chatName(st.doc, seat), me: () => st.doc.you,
    send: async body => {  // over the socket while it is open, as moves go; else REST
      if (live.chat) {
        try { return await live.chat(body); } catch (err) { if (!(err instanceof SocketGone)) throw err; }
      }
      return call("POST", `/matches/${id}/chat`, { token, body });
    } });
  try {  // the log so far, in words (the replay gives every entry's words for this seat), and the chat so far
    const replay = await call("GET", `/matches/${id}/replay`, { token });
    addEvents(replay.log);
    if (chat) chat.add(replay.chat);
  } catch { /* the log starts empty */ }
  // A watch link to hand on: the one this page was opened with, or, for an anonymous match (public to read), the
  // match's plain address. A tenant's match has none here: its watch links are minted with the app's key.
  const isPublic = !token || await call("GET", `/matches/${id}`).then(() => true, () => false);
  const watchLink = watch ? `${location.origin}/play#/w/${id}?t=${encodeURIComponent(token)}`
    : isPublic ? `${location.origin}/play#/m/${id}` : null;
  const party = watch ? null : loadParty(id);

  const ctx = () => ({ comp, view: st.doc.view, you: st.doc.you });
  const render = () => {
    // A page left while an update was being loaded (its GET still under way) never draws over the next page.
    if (!st.alive) return;
    const d = st.doc, you = d.you, moves = d.legal_moves || [];
    const finished = d.status === "finished";
    const myTurn = !finished && moves.length > 0;
    document.title = myTurn ? `Your turn · ${gameTitle(d.game)} · Meeple` : `${gameTitle(d.game)} · Meeple`;
    if (st.drawnVersion !== d.version) {  // a rules text opened on an earlier turn does not stay over this one
      const info = document.getElementById("card-info");
      if (info && st.drawnVersion !== undefined) info.hidden = true;
      st.drawnVersion = d.version;
    }
    if (myTurn && !st.myTurn && st.shown) turnAlert(gameTitle(d.game));
    st.myTurn = myTurn; st.shown = true;
    const seats = d.seats.map(s => `<li class="${d.to_act.includes(s.seat) ? "acting" : ""} ${s.seat === you ? "me" : ""}" data-seat="${s.seat}"
        aria-label="seat ${s.seat}, ${s.kind}${s.level ? " " + s.level : ""}${d.to_act.includes(s.seat) ? ", to act" : ""}">
        <span class="dot" style="background:${d.game === "clash" || d.game === "they-who-were-8" ? (s.seat % 2 ? "var(--green)" : "var(--blue)") : SEAT_COLOURS[s.seat]}"></span>
        Seat ${s.seat}: ${s.kind === "bot" ? `bot (${esc(s.level)})` : s.taken ? (s.seat === you ? "you" : "a person") : "free"}${s.kind !== "bot" && s.taken ? (s.connected ? ' <span class="online" title="connected now">online</span>' : ' <span class="offline" title="not connected">away</span>') : ""}${teamChip(d, s.seat)}<span class="clock" data-clock="${s.seat}">${clockHtml(d, s.seat)}</span></li>`).join("");
    const free = d.seats.some(s => s.kind === "human" && !s.taken);
    const invite = `${location.origin}/play#/join/${d.id}`;
    const others = d.to_act.filter(s => s !== you);
    let panel;
    st.chooser = null; st.fieldOptions = [];
    if (finished) {
      panel = `${resultHtml(d, st.log)}${you !== null ? '<button id="rematch" class="primary">Rematch</button>' : ""} <a href="#/replay/${esc(d.id)}" id="replay-link">Watch the replay</a>`;
    } else if (you === null) {
      panel = `<p class="meta" id="spectating">${watch ? "Watching with a watch link (read-only)" : "Spectating"}: the board updates live.</p>`;
    } else if (d.seats[you] && d.seats[you].forfeited) {
      panel = '<p id="forfeited" class="meta">You resigned: a bot plays your seat\'s remaining decisions, and the others play on.</p>';
    } else if (d.seats[you] && d.seats[you].control === "bot") {
      panel = `<div class="takeover" id="takeover" role="alert"><p>Your time ran out, so a bot is playing your seat.
        It keeps playing until you take the seat back.</p><button id="reclaim" class="primary">Take my seat back</button></div>`;
    } else if (moves.length) {
      const chooser = renderChooser(d.game, moves, st.chosen, ctx());
      st.chooser = chooser.state;
      st.fieldOptions = st.chooser.step === "field" ? st.chooser.options.map(v => JSON.parse(v).join(",")) : [];
      panel = `<h2 id="turn">Your move</h2>${chooser.html}
        <p><button id="hint" accesskey="h">Hint (h)</button> <span id="hint-text" role="status">${st.hint ? `the ${esc(st.hintLevel || "bot")} bot would play: ${esc(moveWords(d.game, st.hint, ctx()))}` : ""}</span></p>`;
    } else if (d.status === "waiting") {
      panel = `<p id="waiting" class="meta">Waiting for ${free ? "a friend to join: send them the invite above" : "players"}…</p>`;
    } else if (you !== null && d.to_act.includes(you)) {
      panel = '<p id="waiting" class="meta">You have chosen; waiting for the others…</p>';
    } else {
      panel = `<p id="waiting" class="meta">Waiting for ${others.map(s => seatName(d, s)).join(", ") || "the next step"}…</p>`;
    }
    const leave = you !== null && !finished && !(d.seats[you] || {}).forfeited ? (st.confirmLeave
      ? `<div class="confirm" role="alertdialog" aria-label="confirm leaving">Leave this match? A bot plays your seat from now on and this browser cannot play it again.
          <button id="leave-yes" class="primary">Yes, leave</button> <button id="leave-no">Stay</button></div>`
      : st.confirmResign
      ? `<div class="confirm" role="alertdialog" aria-label="confirm resigning">Resign this match? Your side loses${d.players > 2 ? " and a bot plays your seat's remaining decisions" : ""}.
          <button id="resign-yes" class="primary">Yes, resign</button> <button id="resign-no">Keep playing</button></div>`
      : '<p class="seat-actions"><button id="resign">Resign</button> <button id="leave">Leave</button></p>') : "";
    const alerts = you !== null && !finished ? `<p class="alerts meta"><label><input type="checkbox" id="sound" ${soundOn() ? "checked" : ""}> sound on my turn</label>
      ${"Notification" in window && Notification.permission === "default" ? '<button id="notify">Notify me when it is my turn</button>' : ""}</p>` : "";
    const log = st.log.slice(-40).reverse().map(e => `<li class="entry kind-${esc(e.kind)}" data-version="${e.version}">
        <span class="v">v${e.version}</span> ${e.by === "bot" ? '<span class="badge">bot</span> ' : ""}${esc(e.text || `${String(e.kind).replace(/_/g, " ")}${e.seat !== null && e.seat !== undefined ? ` (seat ${e.seat})` : ""}`)}</li>`).join("");
    app.innerHTML = `<h1>${esc(gameTitle(d.game))} <a class="rules-link" id="rules-link" href="#/rules/${esc(d.game)}">Rules</a></h1>
      ${goalOf(d.game) ? `<p id="goal" class="goal"><b>Goal:</b> ${esc(goalOf(d.game))}</p>` : ""}
      <p id="you" class="you">${identity(d)}</p>
      <div class="meta">match <code id="match-id">${esc(d.id)}</code> · <span id="status" data-status="${d.status}">${d.status}</span>
        · version <span id="version">${d.version}</span> · ${you === null ? "spectating" : `you are seat ${you}`}
        ${watchLink ? ` · <button id="watch-link" class="small" title="${esc(watchLink)}">Copy watch link</button> <span id="watch-copied" role="status"></span>` : ""}</div>
      <ul class="seats" aria-label="seats">${seats}</ul>
      ${party && !finished ? partyHtml(party) : ""}
      ${free ? `<section class="panel invite"><label for="invite">Invite a friend: send this link</label>
        <div class="row"><input id="invite" readonly value="${esc(invite)}"> <button id="copy-invite">Copy</button> <span id="copied" role="status"></span></div></section>` : ""}
      <div class="match">
        <section class="panel board" aria-label="board">${renderBoard(d.game, d.view, { comp, selectedField: st.fieldChoice, fields: st.fieldOptions, prev: st.prevView, preview: previewOf(d, st.chooser, comp), finished })}</section>
        <section class="panel move-panel" id="move-panel" aria-label="your move">${panel}${leave}${alerts}
          <h3>What happened</h3><ol class="log" id="log" aria-label="events">${log}</ol>
          <div id="chat-slot"></div>
        </section></div>`;
    if (chat) {  // the same chat panel, put back: its messages, the text being typed
      document.getElementById("chat-slot").replaceWith(chat.node);
      chat.setCanPost(you !== null || !!d.spectator_chat, "Spectators cannot chat in this match.");
    }
    wire();
  };

  const act = async fn => {
    try { showError(null); await fn(); } catch (err) {
      showError(err);
      if (err instanceof ApiError && err.status === 409) { await load(); st.chosen = []; }
    }
    if (st.alive) render();
  };

  // A move goes over the match's socket while one is open (one frame in, the reply and the others' updates
  // out), and over REST otherwise, or if the socket closes before its reply: with the same idempotency key,
  // so a move the server made before the socket closed is answered, not made twice.
  const play = async move => {
    const body = { move, version: st.doc.version }, key = newKey();
    let done = null;
    if (live.move) {
      try { done = await live.move({ ...body, idempotency_key: key, include: "legal_moves" }); }
      catch (err) { if (!(err instanceof SocketGone)) throw err; }
    }
    if (!done) done = await call("POST", `/matches/${id}/moves`, { token, body, key, query: { include: "legal_moves" } });
    fold(done);
    st.hint = null; st.chosen = [];
  };

  const wire = () => {
    wireCards(comp);
    for (const b of app.querySelectorAll("button.choice")) b.addEventListener("click", () => { st.chosen.push([st.chooser.step, b.dataset.value]); render(); });
    for (const b of app.querySelectorAll("button.trail")) b.addEventListener("click", () => { st.chosen.length = Number(b.dataset.back); render(); });
    const confirm = document.getElementById("confirm");
    if (confirm) confirm.addEventListener("click", () => act(() => play(st.doc.legal_moves[Number(confirm.dataset.index)])));
    if (st.fieldOptions.length) {
      for (const cell of app.querySelectorAll("[data-field]")) {
        if (!st.fieldOptions.includes(cell.dataset.field)) continue;
        cell.classList.add("choosable");
        const pick = () => { st.chosen.push(["field", JSON.stringify(cell.dataset.field.split(",").map(Number))]); render(); };
        cell.addEventListener("click", pick);
        cell.addEventListener("keydown", ev => { if (ev.key === "Enter" || ev.key === " ") { ev.preventDefault(); pick(); } });
      }
    }
    const on = (sel, fn) => { const el = document.getElementById(sel); if (el) el.addEventListener("click", () => act(fn)); };
    on("hint", async () => {
      const hint = await call("GET", `/matches/${id}/hint`, { token });
      st.hint = hint.move; st.hintLevel = hint.level;
      const steps = Object.keys(st.hint);  // the chooser walks to the hinted move, ready to confirm
      st.chosen = [["type", JSON.stringify(st.hint.type)], ...steps.filter(k => k !== "type").map(k => [k, JSON.stringify(st.hint[k])])];
    });
    on("reclaim", async () => { await call("POST", `/matches/${id}/seats/${st.doc.you}/reclaim`, { token }); await load(); });
    on("resign", async () => { st.confirmResign = true; });
    on("resign-no", async () => { st.confirmResign = false; });
    on("resign-yes", async () => { await call("POST", `/matches/${id}/resign`, { token }); st.confirmResign = false; await load(); });
    on("notify", async () => { await Notification.requestPermission(); });
    const sound = document.getElementById("sound");
    if (sound) sound.addEventListener("change", () => { localStorage.setItem("meeple.sound", sound.checked ? "on" : "off"); if (sound.checked) beep(); });
    on("leave", async () => { st.confirmLeave = true; });
    on("leave-no", async () => { st.confirmLeave = false; });
    on("leave-yes", async () => { st.doc = await call("POST", `/matches/${id}/leave`, { token }); st.confirmLeave = false; forgetMatch(id); });
    on("copy-invite", async () => {
      const input = document.getElementById("invite");
      try { await navigator.clipboard.writeText(input.value); } catch { input.select(); document.execCommand("copy"); }
      st.copied = "copied";
    });
    on("watch-link", async () => { await copyText(watchLink); st.copied = "watch-copied"; });
    for (const b of app.querySelectorAll("button.copy-party")) {
      b.addEventListener("click", () => act(async () => { await copyText(party[Number(b.dataset.i)].link); st.copied = `party-copied-${b.dataset.i}`; }));
    }
    if (st.copied) { document.getElementById(st.copied) && (document.getElementById(st.copied).textContent = "Copied!"); st.copied = null; }
    on("rematch", async () => {
      const doc = await call("POST", `/matches/${id}/rematch`, { token });
      saveSeat(doc.id, doc.you ?? doc.seat, doc.token, doc.game);
      location.hash = `#/m/${doc.id}`;
    });
  };

  // Keyboard: h = hint, 1-9 = that choice, Enter = confirm, Backspace = one step back.
  const keys = ev => {
    if (ev.target.tagName === "INPUT" || ev.target.tagName === "SELECT") return;
    if (ev.key === "h") document.getElementById("hint")?.click();
    else if (/^[1-9]$/.test(ev.key)) app.querySelectorAll("button.choice")[Number(ev.key) - 1]?.click();
    else if (ev.key === "Enter" && document.getElementById("confirm") && ev.target.tagName !== "BUTTON") document.getElementById("confirm").click();
    else if (ev.key === "Backspace" && st.chosen.length) { stepBack(st.chosen); render(); }
  };
  document.addEventListener("keydown", keys);
  const stop = page.stop;
  page = { stop() { stop(); document.removeEventListener("keydown", keys); } };

  render();
  // Clocks tick here between updates: the running seat's deadline is absolute, so the time left is recomputed.
  st.ticker = setInterval(() => { if (st.doc?.clock && st.alive) {
    for (const c of app.querySelectorAll("[data-clock]")) c.innerHTML = clockHtml(st.doc, Number(c.dataset.clock)); } }, 250);

  // Live updates over the match's WebSocket; if the socket cannot be had (twice in a row without getting to
  // "ready"), long-polls instead. document.body.dataset.live says which one is in use.
  const apply = async doc => {
    if (!st.alive) return;
    if (chat && doc.chat) chat.add(doc.chat);  // a long-poll's chat (and the ids of the redacted messages)
    if (chat && doc.chat_redacted) chat.add(doc.chat_redacted.map(mid => ({ id: mid, redacted: true, text: null })));
    const stale = doc.version <= st.doc.version;
    fold(doc);
    if (!stale && (doc.status === "finished" || st.doc.clock || doc.events.some(e => e.kind !== "move"))) await load();  // outcome, seats, clock
    // The choices made so far stay while they still lead to a legal move (another seat's move in a simultaneous
    // step does not undo them); chooserState starts over when they do not.
    const focused = document.activeElement && document.activeElement.id;
    render();
    if (focused) document.getElementById(focused)?.focus();
  };
  // Updates after both the version shown and the last logged entry: the log may be ahead (the replay was read
  // after the status) or behind (a move's answer moved the status on before its event arrived).
  const since = () => Math.min(st.doc.version, st.logVersion);
  let socketFailures = "WebSocket" in window ? 0 : 2;
  while (st.alive && st.doc.status !== "finished") {
    if (socketFailures < 2) {
      document.body.dataset.live = "ws";
      // (the hello's chat_after: what was said since the last message shown, e.g. while a socket was down)
      const { ready, error } = await socketSession(id, { token, after: since(), onUpdate: apply, holder: live, include: !!seatToken,
                                                         chatAfter: chat ? chat.lastId() : null, onChat: message => chat && chat.add([message]) });
      if (!st.alive) return;
      if (error && GONE.includes(error.code)) { showError(new ApiError(0, error.code, error.message)); return; }
      socketFailures = ready ? 0 : socketFailures + 1;
      if (st.doc.status !== "finished") await new Promise(r => setTimeout(r, 200 + Math.random() * 800));  // then reconnect
      continue;
    }
    document.body.dataset.live = "long-poll";
    try {
      await apply(await call("GET", `/matches/${id}/events`, { token, signal: st.controller.signal,
        query: { after: since(), wait: 25, include: seatToken ? "legal_moves" : undefined, chat_after: chat ? chat.lastId() : undefined } }));
    } catch (err) {
      if (!st.alive) return;
      showError(err);
      await new Promise(r => setTimeout(r, 1000));
    }
  }
}

/** Errors after which the page stops following a match (a token that no longer reads it). */
const GONE = ["wrong_token", "match_not_found", "watch_token_expired", "watch_token_revoked"];

/** The match's chat panel, where the server has chat (its catalogue lists the game's chat presets), else null. */
async function chatOf(game, hooks) {
  const doc = await detailsOf(game);
  return "chat_presets" in doc ? chatPanel({ presets: doc.chat_presets || [], ...hooks }) : null;
}

async function joinPage(id) {
  const held = loadSeat(id);
  if (!held) {
    try {
      const doc = await call("POST", `/matches/${id}/join`, { body: {} });
      saveSeat(id, doc.seat ?? doc.you, doc.token, doc.game);
    } catch (err) {
      if (!(err instanceof ApiError) || !["match_full", "match_closed", "match_started"].includes(err.code)) throw err;
      app.innerHTML = `<section class="panel" id="full"><h2>This match has no free seat</h2>
        <p>${err.code === "match_full" ? "Every seat is taken." : esc(err.message)} You can still watch it live.</p>
        <a class="button primary" id="watch-instead" href="#/m/${esc(id)}">Watch instead</a> <a href="#/">Back to the lobby</a></section>`;
      return;
    }
  }
  location.replace(`#/m/${id}`);
}

// ---------------------------------------------------------------- replays
async function replayPage(id) {
  // A finished match's replay carries the view after every version (include=views): the board is redrawn at
  // each step, as this browser's seat saw it (its token, if it played) or as a spectator did.
  const token = (loadSeat(id) || {}).token || loadWatch(id) || null;
  const status = await call("GET", `/matches/${id}`, { token });
  const comp = await componentsOf(status.game);
  const finished = status.status === "finished";
  const query = finished ? "?include=views" : "";
  const raw = await fetchText(`/matches/${id}/replay${query}`, token);
  const replay = JSON.parse(raw);
  // The seed exactly: a decimal string, or digits read from the text (a JSON number would round past 2^53).
  const seedDigits = (raw.match(/"seed"\s*:\s*"?(\d+)"?/) || [])[1] || null;
  const steps = replay.log;
  let at = steps.length - 1;
  const draw = () => {
    const e = steps[at] || {};
    app.innerHTML = `<h1>Replay of ${esc(gameTitle(replay.game))} <code>${esc(id)}</code></h1>
      <div class="meta">${replay.status === "finished" ? "finished" : "still running"} · seed <code id="seed">${seedDigits ?? "hidden until the end"}</code> · ${steps.length} entries</div>
      <section class="panel" aria-label="replay controls">
        <button id="first" aria-label="first step">|◀ first</button> <button id="prev">◀ prev</button>
        <input id="step" type="range" min="0" max="${Math.max(0, steps.length - 1)}" value="${at}" aria-label="step">
        <button id="next">next ▶</button> <button id="last" aria-label="last step">last ▶|</button>
        <p id="step-text" role="status">v${e.version}: ${e.by === "bot" ? "(bot) " : ""}${esc(e.text || String(e.kind).replace(/_/g, " "))}</p></section>
      <div class="match"><section class="panel board" id="replay-board" aria-label="board at version ${finished ? e.version : status.version}" data-version="${finished ? e.version : status.version}">
        <h3>${finished ? `Position after v${e.version}` : "Current position (the steps are drawn once the match is over)"}</h3>${renderBoard(status.game, finished && e.view !== undefined ? e.view : status.view, { comp, prev: finished && at > 0 ? steps[at - 1].view : null, finished: finished && at === steps.length - 1 })}</section>
      <section class="panel"><h3>Log</h3><ol class="log">${steps.map((s, i) => `<li class="${i === at ? "current" : ""}">v${s.version} ${esc(s.text || String(s.kind).replace(/_/g, " "))}</li>`).join("")}</ol>
      ${finished && replay.result ? resultHtml({ ...status, result: replay.result }, steps) : ""}</section></div>`;
    document.getElementById("first").onclick = () => go(0);
    document.getElementById("prev").onclick = () => go(at - 1);
    document.getElementById("next").onclick = () => go(at + 1);
    document.getElementById("last").onclick = () => go(steps.length - 1);
    document.getElementById("step").oninput = ev => go(Number(ev.target.value));
    app.querySelector(".log .current")?.scrollIntoView({ block: "nearest" });
    wireCards(comp);
  };
  const go = n => {  // redraw at step n, keeping the keyboard focus on the control that was used
    const focused = document.activeElement && document.activeElement.id;
    at = Math.max(0, Math.min(steps.length - 1, n));
    draw();
    if (focused) document.getElementById(focused)?.focus();
  };
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
  const info = document.getElementById("card-info");
  if (info) info.hidden = true;
  const [, kind, id] = location.hash.match(/^#\/(m|w|join|replay|tournament|rules)\/([^/?#]+)/) || [];
  const given = (location.hash.match(/\?(?:.*&)?t=([^&]+)/) || [])[1];
  if (given && (kind === "m" || kind === "w")) {  // a party member's seat or a watch link: kept here, then out of sight
    const matchId = decodeURIComponent(id), token = decodeURIComponent(given);
    if (kind === "w") saveWatch(matchId, token); else saveSeat(matchId, null, token);
    history.replaceState(null, "", `${location.pathname}#/${kind}/${id}`);
  }
  try {
    await catalogue();
    if (kind === "tournament") page = await tournamentPage(app, decodeURIComponent(id), showError);
    else if (/^#\/tournaments\b/.test(location.hash)) page = await tournamentsPage(app, showError);
    else if (kind === "m") await matchPage(decodeURIComponent(id));
    else if (kind === "w") await matchPage(decodeURIComponent(id), { watch: true });
    else if (kind === "join") await joinPage(decodeURIComponent(id));
    else if (kind === "replay") await replayPage(decodeURIComponent(id));
    else if (kind === "rules") await rulesPage(decodeURIComponent(id));
    else await lobby();
  } catch (err) {
    showError(err);
    if (app.textContent.trim() === "Loading…") app.innerHTML = '<p class="meta"><a href="#/">Back to the lobby</a></p>';
  }
}

document.addEventListener("click", ev => {  // a tap elsewhere closes the rules text
  const box = document.getElementById("card-info");
  if (box && !box.hidden && !box.contains(ev.target) && !ev.target.closest("[data-card]")) box.hidden = true;
});
window.addEventListener("hashchange", route);
route();
