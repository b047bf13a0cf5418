// Tournaments in the browser: #/tournaments (the tenant's list) and #/tournament/ID (standings, the current round's
// tables, and the way into one's own match). A tournament is a tenant's (docs/guides/leaderboards-tournaments.md):
// the page asks for the tenant's API key, kept in this tab's sessionStorage only, and, to play, a player id. It
// takes that player's seat with the key (POST /v1/matches/{id}/join {"player"}: the seat the tournament keeps for
// them) and opens the match with the seat's own token, as any other match.
import { ApiError, call, loadSeat, saveSeat } from "./api.js";
import { esc } from "./boards.js";

const KEY = "meeple.apiKey", ME = "meeple.player", REFRESH_MS = 3000;

const apiKey = () => sessionStorage.getItem(KEY) || "";
const me = () => sessionStorage.getItem(ME) || "";

/** The form that asks for the key (and the player id); calls `done` once they are saved. */
function keyForm(app, intro, done) {
  app.innerHTML = `<section class="panel tournament-key" aria-labelledby="tk-h"><h2 id="tk-h">Tournaments</h2>
    <p class="meta">${intro}</p>
    <form id="tk-form"><label>API key <input id="tk-key" name="key" required autocomplete="off" value="${esc(apiKey())}"></label>
      <label>Your player id (to play) <input id="tk-player" name="player" autocomplete="off" value="${esc(me())}"></label>
      <button class="primary" type="submit" id="tk-save">Show</button></form></section>`;
  document.getElementById("tk-form").addEventListener("submit", ev => {
    ev.preventDefault();
    sessionStorage.setItem(KEY, document.getElementById("tk-key").value.trim());
    sessionStorage.setItem(ME, document.getElementById("tk-player").value.trim());
    done();
  });
}

const INTRO = "A tournament belongs to an app (a tenant): enter its API key. It stays in this tab only.";

/** #/tournaments: the tenant's tournaments, newest first. */
export async function tournamentsPage(app, showError) {
  if (!apiKey()) { keyForm(app, INTRO, () => tournamentsPage(app, showError)); return { stop() {} }; }
  const { tournaments } = await call("GET", "/tournaments", { token: apiKey(), query: { limit: 50 } });
  const rows = tournaments.map(t => `<li data-tournament="${esc(t.id)}"><a href="#/tournament/${esc(t.id)}">${esc(t.name)}</a>
    <span class="meta">${esc(t.game)} · ${esc(t.format)} · ${esc(t.status)} · ${t.registered} registered</span></li>`);
  app.innerHTML = `<section class="panel" aria-labelledby="tl-h"><h2 id="tl-h">Tournaments</h2>
    ${rows.length ? `<ul class="tournaments">${rows.join("")}</ul>` : '<p class="meta">None yet.</p>'}
    <p><button id="tk-change">Another key or player</button></p></section>`;
  document.getElementById("tk-change").onclick = () => keyForm(app, INTRO, () => tournamentsPage(app, showError));
  showError(null);
  return { stop() {} };
}

function seatText(seat) {
  return seat.player ? esc(seat.player) : `<span class="meta">bot (${esc(seat.bot)})</span>`;
}

function tablesHtml(doc, player) {
  if (!doc.tables.length) return '<p class="meta">No table is playing now.</p>';
  return `<table class="breakdown tables"><thead><tr><th>Table</th><th>Seats</th><th>Status</th><th></th></tr></thead><tbody>
    ${doc.tables.map(t => {
      const mine = player && t.seats.some(s => s.player === player);
      const points = t.result ? Object.entries(t.result.points).map(([p, v]) => `${esc(p)} ${v}`).join(", ") : "";
      const play = mine && t.status === "running" && t.match_id
        ? `<button class="primary play-mine" data-match="${esc(t.match_id)}">Play your match</button>` : "";
      return `<tr data-table="${esc(t.table)}" class="${mine ? "mine" : ""}"><td>${esc(t.table)}</td>
        <td>${t.seats.map(seatText).join(" vs ")}</td><td>${esc(t.status)}${points ? ` (${points})` : ""}</td><td>${play}</td></tr>`;
    }).join("")}</tbody></table>`;
}

function standingsHtml(doc, player) {
  if (!doc.standings.length) return '<p class="meta">Nobody registered yet.</p>';
  return `<table class="breakdown standings"><thead><tr><th>#</th><th>Player</th><th>Points</th><th>Played</th>
    <th>${doc.format.kind === "swiss" ? "Buchholz" : "Per match"}</th><th></th></tr></thead><tbody>
    ${doc.standings.map(s => `<tr data-player="${esc(s.player)}" class="${s.player === player ? "me" : ""}">
      <td>${s.rank}</td><td>${esc(s.player)}</td><td>${s.points}</td><td>${s.played}</td><td>${s.tiebreak}</td>
      <td class="meta">${s.absent ? "absent" : ""}${s.withdrawn ? "withdrawn" : ""}</td></tr>`).join("")}</tbody></table>`;
}

function heading(doc) {
  const fmt = doc.format.kind === "swiss" ? `Swiss, ${doc.format.rounds} rounds` : `arena, ${Math.round(doc.format.duration_s / 60)} min`;
  const round = doc.round ? ` · round ${doc.round.n}${doc.round.finished_at ? " (finished)" : ""}` : "";
  const when = doc.status === "registering" ? ` · starts ${new Date(doc.starts_at * 1000).toLocaleString()}` : "";
  return `<h2 id="t-h">${esc(doc.name)}</h2><p class="meta" id="t-status" data-status="${esc(doc.status)}">${esc(doc.game)} · ${fmt} · ${esc(doc.status)}${round}${when}
    · ${doc.registered} registered${doc.rated ? " · rated" : ""}</p>`;
}

/** Take the player's seat (the tournament keeps it for them) with the key, then open the match with its token. */
async function playMine(matchId, game) {
  const held = loadSeat(matchId);
  if (!held || !held.token) {
    const doc = await call("POST", `/matches/${encodeURIComponent(matchId)}/join`, { token: apiKey(), body: { player: me() } });
    saveSeat(matchId, doc.seat, doc.token, game);
  }
  location.hash = `#/m/${matchId}`;
}

/** #/tournament/ID: refreshed every few seconds until the page is left. */
export async function tournamentPage(app, id, showError) {
  if (!apiKey()) { keyForm(app, INTRO, () => { location.hash = `#/tournament/${id}`; tournamentPage(app, id, showError); }); return { stop() {} }; }
  let timer = null, stopped = false;
  const draw = async () => {
    let doc;
    try {
      doc = await call("GET", `/tournaments/${encodeURIComponent(id)}`, { token: apiKey() });
    } catch (err) {
      if (err instanceof ApiError && (err.status === 401 || err.status === 404)) {
        keyForm(app, `${esc(err.code)}: this key cannot see tournament ${esc(id)}. ${INTRO}`, () => tournamentPage(app, id, showError));
        return;
      }
      throw err;
    }
    if (stopped) return;
    const player = me();
    app.innerHTML = `<div class="tournament" data-tournament="${esc(doc.id)}"><section class="panel" aria-labelledby="t-h">${heading(doc)}
        ${player ? `<p class="you">You are <strong>${esc(player)}</strong>.</p>` : '<p class="meta">Enter your player id to play your match.</p>'}
        <button id="tk-change">Another key or player</button> <a href="#/tournaments">All tournaments</a></section>
      <section class="panel" aria-labelledby="tt-h"><h3 id="tt-h">${doc.format.kind === "swiss" ? "This round's tables" : "Tables playing"}</h3>${tablesHtml(doc, player)}</section>
      <section class="panel" aria-labelledby="ts-h"><h3 id="ts-h">${doc.status === "finished" ? "Final standings" : "Standings"}</h3>${standingsHtml(doc, player)}</section></div>`;
    document.getElementById("tk-change").onclick = () => { stopped = true; keyForm(app, INTRO, () => tournamentPage(app, id, showError)); };
    for (const b of app.querySelectorAll("button.play-mine")) {
      b.onclick = async () => { try { showError(null); await playMine(b.dataset.match, doc.game); } catch (err) { showError(err); } };
    }
    if (doc.status === "registering" || doc.status === "running") timer = setTimeout(() => draw().catch(showError), REFRESH_MS);
  };
  await draw();
  return { stop() { stopped = true; clearTimeout(timer); } };
}
