// One board per game, drawn from the view JSON (docs/games/*.md) and the game's components (GET /v1/games/{game}):
// names, colours, Sideboards' real drawers and handles. Every card carries data-card: a tap or hover shows its
// rules text (app.js). Every function takes the caller's own view (hidden things are simply absent).

export const esc = s => String(s ?? "").replace(/[&<>"']/g, c => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
export const SEAT_COLOURS = ["#2563eb", "#16a34a", "#dc2626", "#9333ea", "#ea580c", "#0891b2"];
const CSS = { blue: "#2563eb", green: "#16a34a", grey: "#6b7280", purple: "#7c3aed", pink: "#ec4899", gold: "#ca8a04",
              orange: "#ea580c", turquoise: "#0d9488", red: "#dc2626", black: "#111827" };
export const colourOf = name => CSS[name] || name || "#6b7280";

/** The components of a game as one lookup: id -> entry (goals as "goal:N"), plus the raw lists. */
export function indexComponents(comp) {
  const byId = {};
  for (const [kind, list] of Object.entries(comp || {})) {
    if (!Array.isArray(list)) continue;
    for (const e of list) {
      if (!e || e.id === undefined) continue;
      // a rules text names its window by key ("Play at any time (turn_start window)"): read as words
      if (typeof e.text === "string") e.text = e.text.replace(/\b([a-z]+(?:_[a-z0-9]+)+)\b/g, m => m.replace(/_/g, " "));
      byId[kind === "goals" ? `goal:${e.id}` : String(e.id)] = e;
    }
  }
  return { ...comp, byId };
}

export const nameOf = (comp, id) => (comp && comp.byId[id] && comp.byId[id].name) || id;
export const label = (comp, id) => {
  if (id === null || id === undefined) return "a hidden card";
  const name = nameOf(comp, id), e = comp && comp.byId[id];
  const shown = name.includes(id) ? name : `${id} ${name}`;
  // a woman with her categories, which a Fierce Women player plans with (as meeple play shows her)
  return e && e.categories ? `${shown} (${e.categories.map(c => catName(comp, c)).join(", ")})` : shown;
};

/** A card as a chip: its id, name and colour stripe; data-card for the rules text on hover or tap. */
export function card(comp, id, extra = "") {
  if (id === null || id === undefined) return `<span class="card hidden-card" aria-label="a hidden card">?</span>`;
  const e = comp && comp.byId[id];
  if (!e) return `<span class="card" data-card="${esc(id)}" tabindex="0">${esc(id)}</span>`;
  let stripe = "";
  if (e.kind === "tile") stripe = `<span class="stripe" style="background:${colourOf(e.colour)}"></span>`;
  if (e.kind === "woman") stripe = e.categories.map(c => `<span class="stripe" title="${esc(catName(comp, c))}" style="background:${colourOf(catColour(comp, c))}"></span>`).join("");
  if (e.kind === "card" && e.drawers) stripe = e.drawers.map(d => `<span class="stripe" style="background:${colourOf(d.colour)}"></span>`).join("");
  return `<span class="card kind-${esc(e.kind)}${extra}" data-card="${esc(id)}" tabindex="0" role="button" aria-label="${esc(id)} ${esc(e.name)}: show its rules">
    <span class="stripes">${stripe}</span><b>${esc(id)}</b>${e.name.includes(id) ? "" : ` <span class="card-name">${esc(e.name)}</span>`}</span>`;
}

const cards = (comp, ids, what) => `<div class="chips" aria-label="${esc(what)}">${(ids || []).map(i => card(comp, i)).join("") || '<span class="meta">none</span>'}</div>`;
export const catColour = (comp, cat) => ((comp.categories || []).find(c => c.id === cat) || {}).colour;
export const catName = (comp, cat) => ((comp.categories || []).find(c => c.id === cat) || {}).name || String(cat).replace(/_/g, " ");

/** A game's phase in words (the view's phase is an identifier); "over" once the match has finished. */
const PHASE_WORDS = {
  draft: "open draft", secret_draft: "secret draft", play: "placing tiles", choose_first: "choosing who starts",
  match_over: "match over", start: "choosing the first two cards", place: "adding cards", game_over: "game over",
  draw: "drawing", remove_column: "removing a column", remove_cards: "removing cards", rearrange: "rearranging",
  turn_start: "start of a turn", endymina_discard: "Endymina's discard", play_after_redraw: "playing after a redraw",
  targeted: "answers to a target", passing: "passing cards", dealing: "dealing", kymele_take: "Kymele's pick",
};
export const phaseWords = (view, ctx, play = "playing") => ctx.finished ? "over"
  : view.phase === "play" ? play : PHASE_WORDS[view.phase] || String(view.phase || "").replace(/_/g, " ");

// ---- CLASH: the 3×3 board; a tile's tip shows whom it supports (blue: south, green: north).
export const FIELD_NAMES = { "0,0": "top-left", "0,1": "top", "0,2": "top-right", "1,0": "left", "1,1": "centre",
  "1,2": "right", "2,0": "bottom-left", "2,1": "bottom", "2,2": "bottom-right" };

function hexPoints(cx, cy, r) {
  return [...Array(6)].map((_, k) => {
    const a = Math.PI / 180 * (60 * k - 90);
    return `${(cx + r * Math.cos(a)).toFixed(1)},${(cy + r * Math.sin(a)).toFixed(1)}`;
  }).join(" ");
}

/** A tile's printed dots on its hex: each offset [f, s] of its frame turned by whom it supports (blue: the tip
 * points south, green: north); coloured dots in the tile's colour, white and black ones as printed. */
function tileDots(entry, cell, cx, cy, R) {
  if (!entry || !entry.dots || !entry.dots.length) return "";
  const blue = cell.supports === "blue";
  let out = "";
  for (const set of entry.dots) {
    const fill = set.colour === "white" ? "#fff" : set.colour === "black" ? "#111827" : colourOf(entry.colour === "grey" ? "purple" : entry.colour);
    for (const [f, s] of set.at) {
      const dr = blue ? f : -f, dc = blue ? -s : s;
      const x = cx + dc * (dr ? 0.5 : 0.7) * R, y = cy + dr * (dc ? 0.58 : 0.72) * R;
      out += `<circle class="dot-mark" data-dot="${esc(set.colour)}" cx="${x.toFixed(1)}" cy="${y.toFixed(1)}" r="5" fill="${fill}" stroke="#111827" stroke-width="1.2"/>`;
    }
  }
  return `<g class="dots" aria-hidden="true">${out}</g>`;
}

function clash(view, ctx) {
  const comp = ctx.comp, S = 112, R = 54, X0 = 70, Y0 = 84;
  const prev = ctx.prev && ctx.prev.board ? ctx.prev.board : null;
  const preview = ctx.preview || {};
  const blocked = new Set((view.blocked || []).map(f => f.join(","))), stab = new Set((view.stabilised || []).map(f => f.join(",")));
  const choosable = new Set(ctx.fields || []);
  let cells = "";
  view.board.forEach((row, r) => row.forEach((cell, c) => {
    const cx = X0 + c * S, cy = Y0 + r * S, key = `${r},${c}`;
    const last = prev && JSON.stringify((prev[r] || [])[c] ?? null) !== JSON.stringify(cell ?? null);
    const cls = (ctx.selectedField === key ? " selected" : "") + (choosable.has(key) ? " choosable" : "")
      + (last ? " last" : "") + (preview.field === key ? " preview-field" : "") + ((preview.hits || []).includes(key) ? " preview-hit" : "");
    let fill = choosable.has(key) ? "#fef3c7" : "#fff", lab = `${FIELD_NAMES[key]} field: empty`, inner = "";
    if (cell) {
      const down = cell.face === "down", name = nameOf(comp, cell.tile);
      fill = down ? "#9ca3af" : cell.supports === "blue" ? "#bfdbfe" : "#bbf7d0";
      lab = `${FIELD_NAMES[key]} field: ${cell.tile} ${name}${down ? " face down" : `, supports ${cell.supports}`}${cell.security ? ", Security" : ""}`;
      const dir = cell.supports === "blue" ? 1 : -1;  // the tip: south for blue, north for green
      if (!down) inner += `<polygon points="${cx - 12},${cy + dir * 28} ${cx + 12},${cy + dir * 28} ${cx},${cy + dir * 46}" fill="${cell.supports === "blue" ? "var(--blue)" : "var(--green)"}"/>`;
      inner += `<text x="${cx}" y="${cy}" text-anchor="middle" font-size="19" font-weight="700">${esc(cell.tile)}</text>
        <text x="${cx}" y="${cy + 16}" text-anchor="middle" font-size="11">${esc(name.length > 14 ? name.slice(0, 13) + "…" : name)}</text>`;
      if (cell.covered) inner += `<text x="${cx}" y="${cy - 20}" text-anchor="middle" font-size="10">over ${esc(cell.covered)}</text>`;
      if (cell.security) inner += `<text x="${cx + 20}" y="${cy - 22}" font-size="12" font-weight="700" fill="#b45309">SEC</text>`;
      if (!down) inner += tileDots(comp.byId[cell.tile], cell, cx, cy, R);
    }
    if (preview.field === key) inner += `<text x="${cx}" y="${cy + 4}" text-anchor="middle" font-size="13" font-weight="700" fill="#b45309">${cell ? "" : `${esc(preview.tile || "")} here`}</text>`;
    if ((preview.hits || []).includes(key)) inner += `<text x="${cx}" y="${cy - 34}" text-anchor="middle" font-size="11" font-weight="700" fill="#b91c1c">${esc(preview.verb || "hit")}</text>`;
    if (blocked.has(key)) inner += `<text x="${cx - 40}" y="${cy - 22}" font-size="12" fill="#dc2626">blocked</text>`;
    if (stab.has(key)) inner += `<text x="${cx - 40}" y="${cy + 34}" font-size="12" fill="#0891b2">UN</text>`;
    cells += `<g class="cell${cls}" data-field="${key}" ${cell ? `data-card="${esc(cell.tile)}"` : ""} tabindex="0" role="button" aria-label="${esc(lab)}">
      <polygon points="${hexPoints(cx, cy, R)}" fill="${fill}" stroke="${last ? "#f59e0b" : "#374151"}" stroke-width="${last ? 5 : 2}" ${cell || last ? "" : 'stroke-dasharray="6 4"'}/>${inner}</g>`;
  }));
  const svg = `<svg viewBox="0 0 ${X0 * 2 + 2 * S} ${Y0 * 2 + 2 * S + 20}" role="img" aria-label="CLASH board">
    <text x="4" y="18" font-size="15" fill="var(--blue)">Blue's side (McWorld)</text>
    <text x="4" y="${Y0 * 2 + 2 * S + 14}" font-size="15" fill="var(--green)">Green's side (Jihad)</text>${cells}</svg>`;
  const zone = (z, s) => `<div><b style="color:${s ? "var(--green)" : "var(--blue)"}">${s ? "Green" : "Blue"}'s zone${view.viewer === s ? " (yours)" : ""}</b>${cards(comp, z.open, "open zone")}
      ${z.hidden && z.hidden.length ? `<span class="meta">your hidden tiles:</span>${cards(comp, z.hidden, "hidden zone")}` : z.hidden_count ? `<span class="meta">${z.hidden_count} hidden</span>` : ""}</div>`;
  const wins = `<span class="meta">game ${view.game_no} · ${esc(phaseWords(view, ctx, "placing tiles"))} · placement ${view.move_no} · games won: Blue ${view.wins[0]} – Green ${view.wins[1]}</span>`;
  return `${wins}${svg}${view.zones.map(zone).join("")}
    <div><b>Neutral zone</b>${cards(comp, view.neutral_zone, "neutral zone")}</div>
    <div><b>Removed</b>${cards(comp, view.removed, "removed pile")}</div>`;
}

// ---- Sideboards: each seat's dresser, cards with their 5 coloured drawers and handles, 180° cards upside down.
function handleShape(h, x, y) {
  if (h === "flower") return `<circle cx="${x}" cy="${y}" r="3.5" fill="#fff" stroke="#111" stroke-width="1.4"/><circle cx="${x}" cy="${y}" r="1.2" fill="#111"/>`;
  if (h === "square") return `<rect x="${x - 3.5}" y="${y - 3.5}" width="7" height="7" fill="#fff" stroke="#111" stroke-width="1.4"/>`;
  if (h === "line") return `<rect x="${x - 7}" y="${y - 1.6}" width="14" height="3.2" rx="1.5" fill="#fff" stroke="#111" stroke-width="1.2"/>`;
  return "";
}

export function dresserCard(comp, id, orientation, x, y, W = 54, H = 100, last = false) {
  const e = comp && comp.byId[id];
  const drawers = e && e.drawers ? (orientation === 180 ? [...e.drawers].reverse() : e.drawers) : [];
  const dh = (H - 14) / 5;
  const body = drawers.map((d, i) => `<rect x="${x + 4}" y="${y + 10 + i * dh}" width="${W - 8}" height="${dh - 2}" rx="2" fill="${colourOf(d.colour)}"/>
      ${handleShape(d.handle, x + W / 2, y + 10 + i * dh + (dh - 2) / 2)}`).join("");
  return `<g class="${last ? "last" : ""}" data-card="${esc(id)}" tabindex="0" role="button" aria-label="${esc(id)} turned ${orientation}°: ${esc(drawers.map(d => d.colour + (d.handle ? " " + d.handle : "")).join(", "))}">
    <rect x="${x}" y="${y}" width="${W}" height="${H}" rx="5" fill="#a16207" stroke="${last ? "#f59e0b" : "#713f12"}" stroke-width="${last ? 4 : 1}"/>
    <text x="${x + W / 2}" y="${y + 8}" text-anchor="middle" font-size="8" fill="#fff">${esc(id)}${orientation === 180 ? " ↻" : ""}</text>${body}</g>`;
}

export function dresserSvg(comp, items, label, last = new Set()) {
  const W = 54, H = 100, width = Math.max(1, items.length) * (W + 4) + 4;
  return `<svg class="dresser" viewBox="0 0 ${width} ${H + 6}" preserveAspectRatio="xMinYMin meet" role="img" aria-label="${esc(label)}">
    ${items.map((c, i) => dresserCard(comp, c.card, c.orientation, 4 + i * (W + 4), 3, W, H, last.has(c.card))).join("")}</svg>`;
}

function sideboards(view, ctx) {
  const comp = ctx.comp;
  const before = ctx.prev && ctx.prev.dressers ? new Set(ctx.prev.dressers.flat().map(c => c.card)) : null;
  const newIn = items => new Set(before ? items.map(c => c.card).filter(id => !before.has(id)) : []);
  const dresser = (cardsOf, s) => {
    const p = view.provisional[s] || {};
    return `<div class="dresser-row"><b style="color:${SEAT_COLOURS[s]}">Seat ${s}${view.viewer === s ? " (you)" : ""}</b>
      <span class="meta">colour goal ×${p.colour_count} · handle goal ×${p.handle_count} · row drawers ${p.row_drawers} · exchange ${esc(view.exchange[s])}${view.submitted[s] ? " · has chosen" : ""}</span>
      ${dresserSvg(comp, cardsOf, `dresser of seat ${s}`, newIn(cardsOf))}</div>`;
  };
  const g = view.goals || {};
  const goal = id => { const e = comp.byId[`goal:${id}`] || { name: id }; return `<span class="card kind-goal" data-card="goal:${id}" tabindex="0" role="button">goal ${id}: ${esc(e.name)} (${e.points ?? 2} pts)</span>`; };
  const hand = view.hand ? `<div><b>Your hand</b><div class="hand">${dresserSvg(comp, view.hand.map(c => ({ card: c, orientation: 0 })), "your hand")}</div></div>` : "";
  return `<div class="meta">step ${view.step} of 6 · ${esc(phaseWords(view, ctx))} · deck ${view.deck_count}</div>
    <div class="chips"><b>Goals</b> ${goal(g.colour)} ${goal(g.handle)} ${goal(g.row)}</div>
    ${hand}${view.dressers.map(dresser).join("")}
    <div><b>Discard</b>${cards(comp, view.discard, "discard pile")}</div>`;
}

// ---- Fierce Women: the piles and every seat's columns, category colours from the components.
function fierceWomen(view, ctx) {
  const comp = ctx.comp;
  const before = ctx.prev && ctx.prev.tables ? new Set(ctx.prev.tables.flat().flatMap(col => col.cards)) : null;
  const mark = id => (before && !before.has(id) ? " last" : "");
  const preview = ctx.preview || {};
  const piles = view.piles.map((p, i) => `<div class="pile"><span class="meta">${["left", "middle", "right"][i]} pile · ${p.size ? `${p.size} ${p.size === 1 ? "card" : "cards"}` : "empty"}</span> ${p.top ? card(comp, p.top) : ""}</div>`).join("");
  const table = (columns, s) => {
    const hand = view.hands[s] || { size: 0, known: [] };
    const who = view.automa_seat === s ? "Automa" : `Seat ${s}`;
    const mine = view.viewer === s && preview.column !== undefined;
    let cols = columns.map((col, ci) => `<div class="column${mine && preview.column === ci ? " preview-column" : ""}" data-column="${ci}" style="border-color:${colourOf(catColour(comp, col.category))}">
        <div class="meta">column ${ci + 1}: ${col.category ? esc(catName(comp, col.category)) : "no single category"}${col.points !== undefined ? ` · ${col.points} ${col.points === 1 ? "point" : "points"}` : ""}</div>
        ${col.cards.map(c => card(comp, c, mark(c))).join("")}${mine && preview.column === ci ? `<span class="preview-note">+ ${esc(label(comp, preview.card))}</span>` : ""}</div>`).join("");
    if (mine && preview.column >= columns.length) cols += `<div class="column preview-column" data-column="${preview.column}"><div class="meta">new column ${preview.column + 1}</div><span class="preview-note">+ ${esc(label(comp, preview.card))}</span></div>`;
    const now = view.points_now ? ` <span class="points-now" data-seat="${s}">${view.points_now[s]} points now</span>` : "";
    return `<div class="table-row"><b style="color:${SEAT_COLOURS[s]}">${who}${view.viewer === s ? " (you)" : ""}</b>${now}
      <span class="meta">${hand.size} ${hand.size === 1 ? "card" : "cards"} in hand${hand.known && hand.known.length && !hand.cards ? ` · drawn face up from the piles: ${hand.known.map(c => esc(label(comp, c))).join(", ")}` : ""}</span>
      ${hand.cards ? `<div><span class="meta">${view.viewer === s ? "your hand:" : "hand at the end:"}</span>${cards(comp, hand.cards, `hand of seat ${s}`)}</div>` : ""}
      <div class="columns" aria-label="columns of ${who}">${cols || '<span class="meta">no columns yet</span>'}</div></div>`;
  };
  const legend = (comp.categories || []).map(c => `<span class="legend"><span class="stripe" style="background:${colourOf(c.colour)}"></span>${esc(c.name)}</span>`).join(" ");
  return `<div class="meta">turn ${view.turn} · ${esc(phaseWords(view, ctx, "playing a card"))}</div><div class="legend-row">${legend}</div>
    <div class="piles">${piles}</div>${view.tables.map(table).join("")}
    <div><b>Discard</b>${cards(comp, view.discard, "discard pile")}</div>`;
}

// ---- They Who Were 8: the eight gods around a circle, the two teams' track, your hand.
function theyWhoWere8(view, ctx) {
  const comp = ctx.comp;
  const was = ctx.prev && ctx.prev.gods ? Object.fromEntries(ctx.prev.gods.map(g => [g.id, `${g.glory}/${g.infamy}/${g.used}`])) : null;
  const teamOf = seat => view.teams.findIndex(t => t.includes(seat));
  const colour = seat => teamOf(seat) === 0 ? "var(--blue)" : "var(--green)";
  const gods = view.gods.map((g, i) => {
    const a = Math.PI * 2 * i / view.gods.length - Math.PI / 2, cx = 170 + 120 * Math.cos(a), cy = 170 + 120 * Math.sin(a);
    const name = nameOf(comp, g.id), fit = name.length > 7 ? ` textLength="64" lengthAdjust="spacingAndGlyphs"` : "";
    const last = was && was[g.id] !== undefined && was[g.id] !== `${g.glory}/${g.infamy}/${g.used}`;
    return `<g class="${last ? "last" : ""}" data-card="${g.id}" tabindex="0" role="button" aria-label="${g.id} ${esc(nameOf(comp, g.id))}: seat ${g.owner}, glory ${g.glory}, infamy ${g.infamy}${g.used ? ", power used" : ""}">
      ${last ? `<circle cx="${cx}" cy="${cy}" r="43" fill="none" stroke="#f59e0b" stroke-width="4"/>` : ""}<circle cx="${cx}" cy="${cy}" r="38" fill="${g.used ? "#e5e7eb" : "#fff"}" stroke="${colour(g.owner)}" stroke-width="4"/>
      <text x="${cx}" y="${cy - 10}" text-anchor="middle" font-size="12" font-weight="700"${fit}>${esc(name)}</text>
      <text x="${cx}" y="${cy + 5}" text-anchor="middle" font-size="10">${g.id} · seat ${g.owner}</text>
      <text x="${cx}" y="${cy + 20}" text-anchor="middle" font-size="11">★${g.glory} ☠${g.infamy}</text></g>`;
  }).join("");
  const totals = view.teams.map(seats => view.gods.filter(g => seats.includes(g.owner))
    .reduce((t, g) => ({ glory: t.glory + g.glory, infamy: t.infamy + g.infamy, used: t.used + (g.used ? 1 : 0) }), { glory: 0, infamy: 0, used: 0 }));
  const track = totals.map((t, i) => `<div class="team" style="border-color:${i ? "var(--green)" : "var(--blue)"}"><b>Team ${i}</b> (seats ${view.teams[i].join(" + ")}):
      ★ ${t.glory} glory · ☠ ${t.infamy} infamy · ${t.used} powers used → ${2 * t.glory - t.infamy - 2 * t.used} points now</div>`).join("");
  const play = view.current_play;
  return `<div class="meta">round ${view.round}/${view.max_rounds} · ${esc(phaseWords(view, ctx, "playing a card"))} · supply ★${view.supply.glory} ☠${view.supply.infamy} · pile ${view.pile_size}</div>
    ${track}
    <svg viewBox="0 0 340 340" role="img" aria-label="gods">${gods}
      <text x="170" y="166" text-anchor="middle" font-size="12">cards in hand: ${view.hand_sizes.join(" · ")}</text>
      ${view.turn_seat !== null && view.turn_seat !== undefined ? `<text x="170" y="184" text-anchor="middle" font-size="13">seat ${view.turn_seat}'s turn</text>` : ""}</svg>
    ${play ? `<div>In play: seat ${play.seat} plays ${card(comp, play.card)} on ${esc(label(comp, play.target))}</div>` : ""}
    ${view.hand ? `<div><b>Your hand</b>${cards(comp, view.hand, "your hand")}</div>` : ""}`;
}

export const BOARDS = { clash, sideboards, "fierce-women": fierceWomen, "they-who-were-8": theyWhoWere8 };

export function renderBoard(game, view, ctx = {}) {
  if (!view) return '<p class="meta">No view yet.</p>';
  const draw = BOARDS[game];
  ctx = { comp: indexComponents({}), ...ctx };
  try { return draw ? draw(view, ctx) : `<pre>${esc(JSON.stringify(view, null, 1))}</pre>`; }
  catch (e) { console.error(e); return `<pre>${esc(JSON.stringify(view, null, 1))}</pre>`; }
}
