// One board per game, drawn from the view JSON of docs/games/*.md (SVG plus a little HTML).
// Every function takes the view (the caller's own: hidden things are simply absent) and returns HTML.

export const esc = s => String(s ?? "").replace(/[&<>"']/g, c => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
const chips = (ids, label) => `<div class="chips" aria-label="${esc(label)}">${(ids || []).map(i => `<span class="chip">${esc(i)}</span>`).join("") || '<span class="meta">none</span>'}</div>`;
const SEAT_COLOURS = ["#2563eb", "#16a34a", "#dc2626", "#9333ea", "#ea580c", "#0891b2"];

function fmt(v) {
  if (Array.isArray(v) && v.length === 2 && v.every(Number.isInteger)) return `[${v[0]},${v[1]}]`;
  if (Array.isArray(v)) return `[${v.map(fmt).join(" ")}]`;
  if (v && typeof v === "object") {
    const keys = Object.keys(v);
    if (keys.length === 1 && keys[0] === "god") return v.god;
    return `{${keys.map(k => `${k} ${fmt(v[k])}`).join(", ")}}`;
  }
  return v === null || v === undefined ? "none" : String(v);
}

/** A readable label for a move: its type, then its fields in the spec's order. */
export function describeMove(move) {
  const parts = [move.type];
  for (const [k, v] of Object.entries(move)) {
    if (k === "type") continue;
    if (k === "effect" && v === null) parts.push("no effect");
    else if (["tile", "card", "cards", "god", "pile"].includes(k)) parts.push(fmt(v));
    else parts.push(`${k} ${fmt(v)}`);
  }
  return parts.join(" ");
}

// ---- CLASH: the 3×3 board of hex tiles; a tile's tip shows whom it supports (blue: south, green: north).
function hexPoints(cx, cy, r) {
  return [...Array(6)].map((_, k) => {
    const a = Math.PI / 180 * (60 * k - 90);
    return `${(cx + r * Math.cos(a)).toFixed(1)},${(cy + r * Math.sin(a)).toFixed(1)}`;
  }).join(" ");
}

function clash(view, ctx) {
  const S = 112, R = 54, X0 = 70, Y0 = 84;
  const blocked = new Set((view.blocked || []).map(f => f.join(","))), stab = new Set((view.stabilised || []).map(f => f.join(",")));
  let cells = "";
  view.board.forEach((row, r) => row.forEach((cell, c) => {
    const cx = X0 + c * S, cy = Y0 + r * S, key = `${r},${c}`;
    const selected = ctx.selectedField === key ? " selected" : "";
    let fill = "#fff", label = `field ${r},${c}: empty`, inner = "";
    if (cell) {
      const down = cell.face === "down";
      fill = down ? "#9ca3af" : cell.supports === "blue" ? "#bfdbfe" : "#bbf7d0";
      label = `field ${r},${c}: ${cell.tile}${down ? " face down" : ` supports ${cell.supports}`}${cell.security ? ", Security" : ""}`;
      const dir = cell.supports === "blue" ? 1 : -1;  // the tip: south for blue, north for green
      const tipColour = cell.supports === "blue" ? "var(--blue)" : "var(--green)";
      if (!down) inner += `<polygon points="${cx - 12},${cy + dir * 28} ${cx + 12},${cy + dir * 28} ${cx},${cy + dir * 46}" fill="${tipColour}"/>`;
      inner += `<text x="${cx}" y="${cy + 6}" text-anchor="middle" font-size="20" font-weight="700">${esc(cell.tile)}</text>`;
      if (cell.covered) inner += `<text x="${cx}" y="${cy - 18}" text-anchor="middle" font-size="11">over ${esc(cell.covered)}</text>`;
      if (cell.security) inner += `<text x="${cx + 22}" y="${cy - 20}" font-size="13" font-weight="700" fill="#b45309">SEC</text>`;
    }
    if (blocked.has(key)) inner += `<text x="${cx - 40}" y="${cy - 22}" font-size="12" fill="#dc2626">blocked</text>`;
    if (stab.has(key)) inner += `<text x="${cx - 40}" y="${cy + 34}" font-size="12" fill="#0891b2">UN</text>`;
    cells += `<g class="cell${selected}" data-field="${key}" tabindex="0" role="button" aria-label="${esc(label)}">
      <polygon points="${hexPoints(cx, cy, R)}" fill="${fill}" stroke="#374151" stroke-width="2" ${cell ? "" : 'stroke-dasharray="6 4"'}/>${inner}</g>`;
  }));
  const svg = `<svg viewBox="0 0 ${X0 * 2 + 2 * S} ${Y0 * 2 + 2 * S + 20}" role="img" aria-label="CLASH board">
    <text x="4" y="18" font-size="15" fill="var(--blue)">Blue's side (row 0)</text>
    <text x="4" y="${Y0 * 2 + 2 * S + 14}" font-size="15" fill="var(--green)">Green's side (row 2)</text>${cells}</svg>`;
  const zone = (z, s) => `<div><b style="color:${s ? "var(--green)" : "var(--blue)"}">${s ? "Green" : "Blue"} zone</b>${chips(z.open, "open zone")}
      ${z.hidden && z.hidden.length ? `<span class="meta">your hidden:</span>${chips(z.hidden, "hidden zone")}` : z.hidden_count ? `<span class="meta">${z.hidden_count} hidden</span>` : ""}</div>`;
  return `<div class="meta">game ${view.game_no} · ${esc(view.phase)} · placement ${view.move_no} · wins blue ${view.wins[0]} – green ${view.wins[1]}</div>
    ${svg}${view.zones.map(zone).join("")}
    <div><b>Neutral zone</b>${chips(view.neutral_zone, "neutral zone")}</div>
    <div><b>Removed</b>${chips(view.removed, "removed pile")}</div>
    <p class="meta">Tap a field to list only the moves that place there.</p>`;
}

// ---- Sideboards: each seat's dresser (cards left to right, 180° cards drawn upside down) and the goals.
function sideboards(view) {
  const W = 58, H = 84;
  const dresser = (cards, s) => {
    const width = Math.max(1, cards.length) * (W + 6) + 6;
    const body = cards.map((c, i) => {
      const x = 6 + i * (W + 6), flip = c.orientation === 180;
      return `<g aria-label="${esc(c.card)} at ${c.orientation} degrees" role="img">
        <rect x="${x}" y="4" width="${W}" height="${H}" rx="6" fill="#fde68a" stroke="#92400e"/>
        ${[0, 1, 2].map(d => `<rect x="${x + 8}" y="${12 + d * 24}" width="${W - 16}" height="18" fill="#fff7ed" stroke="#b45309"/>`).join("")}
        <text x="${x + W / 2}" y="${4 + H / 2 + 5}" text-anchor="middle" font-size="14" font-weight="700"
          transform="${flip ? `rotate(180 ${x + W / 2} ${4 + H / 2})` : ""}">${esc(c.card)}</text>
        <text x="${x + W / 2}" y="${H + 2}" text-anchor="middle" font-size="10">${flip ? "180°" : "0°"}</text></g>`;
    }).join("");
    const p = view.provisional[s] || {};
    return `<div><b style="color:${SEAT_COLOURS[s]}">Seat ${s}${view.viewer === s ? " (you)" : ""}</b>
      <span class="meta">colour ${p.colour_count} · handle ${p.handle_count} · row ${p.row_drawers} · exchange ${esc(view.exchange[s])}${view.submitted[s] ? " · submitted" : ""}</span>
      <svg viewBox="0 0 ${width} ${H + 8}" preserveAspectRatio="xMinYMin meet" style="max-height:110px" role="img" aria-label="dresser of seat ${s}">${body}</svg></div>`;
  };
  const g = view.goals || {};
  return `<div class="meta">step ${view.step} · ${esc(view.phase)} · deck ${view.deck_count}</div>
    <div><b>Goals</b> <span class="chip">colour ${g.colour}</span> <span class="chip">handle ${g.handle}</span> <span class="chip">row ${g.row}</span></div>
    ${view.dressers.map(dresser).join("")}
    ${view.hand ? `<div><b>Your hand</b>${chips(view.hand, "your hand")}</div>` : ""}
    <div><b>Discard</b>${chips(view.discard, "discard pile")}</div>`;
}

// ---- Fierce Women: the piles and every seat's columns (with their category once defined).
function fierceWomen(view) {
  const piles = view.piles.map((p, i) => `<g role="img" aria-label="pile ${i}: ${p.top || "empty"}, ${p.size} cards">
      <rect x="${8 + i * 90}" y="6" width="76" height="56" rx="6" fill="${p.top ? "#fbcfe8" : "#f3f4f6"}" stroke="#9d174d"/>
      <text x="${46 + i * 90}" y="32" text-anchor="middle" font-size="16" font-weight="700">${esc(p.top || "—")}</text>
      <text x="${46 + i * 90}" y="52" text-anchor="middle" font-size="11">pile ${i} · ${p.size}</text></g>`).join("");
  const table = (columns, s) => {
    const tallest = Math.max(1, ...columns.map(c => c.cards.length));
    const body = columns.map((col, ci) => col.cards.map((card, k) => `
        <rect x="${6 + ci * 86}" y="${6 + k * 26}" width="78" height="24" rx="4" fill="${card.startsWith("A") ? "#e9d5ff" : "#fce7f3"}" stroke="#831843"/>
        <text x="${45 + ci * 86}" y="${23 + k * 26}" text-anchor="middle" font-size="13">${esc(card)}</text>`).join("")
      + `<text x="${45 + ci * 86}" y="${22 + tallest * 26}" text-anchor="middle" font-size="11" fill="#6b7280">${esc(col.category || "?")}</text>`).join("");
    const hand = view.hands[s] || { size: 0, known: [] };
    return `<div><b style="color:${SEAT_COLOURS[s]}">Seat ${s}${view.viewer === s ? " (you)" : ""}${view.automa_seat === s ? " (automa)" : ""}</b>
      <span class="meta">hand ${hand.size}${hand.known && hand.known.length ? ` · known ${hand.known.join(" ")}` : ""}</span>
      ${hand.cards ? chips(hand.cards, `hand of seat ${s}`) : ""}
      <svg viewBox="0 0 ${Math.max(1, columns.length) * 86 + 8} ${tallest * 26 + 30}" preserveAspectRatio="xMinYMin meet" style="max-height:${tallest * 26 + 40}px" role="img" aria-label="columns of seat ${s}">${body}</svg></div>`;
  };
  return `<div class="meta">turn ${view.turn} · ${esc(view.phase)}</div>
    <svg viewBox="0 0 ${view.piles.length * 90 + 10} 68" preserveAspectRatio="xMinYMin meet" style="max-height:90px" role="img" aria-label="piles">${piles}</svg>
    ${view.tables.map(table).join("")}
    <div><b>Discard</b>${chips(view.discard, "discard pile")}</div>`;
}

// ---- They Who Were 8: the eight gods around a circle, the two teams' track, your hand.
function theyWhoWere8(view) {
  const teamOf = seat => view.teams.findIndex(t => t.includes(seat));
  const colour = seat => teamOf(seat) === 0 ? "var(--blue)" : "var(--green)";
  const gods = view.gods.map((g, i) => {
    const a = Math.PI * 2 * i / view.gods.length - Math.PI / 2, cx = 160 + 115 * Math.cos(a), cy = 150 + 115 * Math.sin(a);
    return `<g role="img" aria-label="${g.id}: seat ${g.owner}, glory ${g.glory}, infamy ${g.infamy}${g.used ? ", power used" : ""}">
      <circle cx="${cx}" cy="${cy}" r="34" fill="${g.used ? "#e5e7eb" : "#fff"}" stroke="${colour(g.owner)}" stroke-width="4"/>
      <text x="${cx}" y="${cy - 6}" text-anchor="middle" font-size="15" font-weight="700">${g.id}</text>
      <text x="${cx}" y="${cy + 10}" text-anchor="middle" font-size="11">seat ${g.owner}</text>
      <text x="${cx}" y="${cy + 24}" text-anchor="middle" font-size="11">★${g.glory} ☠${g.infamy}</text></g>`;
  }).join("");
  const totals = view.teams.map(seats => view.gods.filter(g => seats.includes(g.owner))
    .reduce((t, g) => ({ glory: t.glory + g.glory, infamy: t.infamy + g.infamy }), { glory: 0, infamy: 0 }));
  const track = totals.map((t, i) => `<g role="img" aria-label="team ${i}: glory ${t.glory}, infamy ${t.infamy}">
      <text x="4" y="${20 + i * 40}" font-size="12">team ${i} (${view.teams[i].join("+")})</text>
      <rect x="120" y="${8 + i * 40}" width="${t.glory * 12}" height="14" fill="${i ? "var(--green)" : "var(--blue)"}"/>
      <text x="${126 + t.glory * 12}" y="${20 + i * 40}" font-size="12">★ ${t.glory}</text>
      <rect x="120" y="${24 + i * 40}" width="${t.infamy * 12}" height="8" fill="#991b1b"/>
      <text x="${126 + t.infamy * 12}" y="${32 + i * 40}" font-size="10">☠ ${t.infamy}</text></g>`).join("");
  const play = view.current_play;
  return `<div class="meta">round ${view.round}/${view.max_rounds} · ${esc(view.phase)} · supply ★${view.supply.glory} ☠${view.supply.infamy} · pile ${view.pile_size}</div>
    <svg viewBox="0 0 320 300" role="img" aria-label="gods">${gods}
      <text x="160" y="146" text-anchor="middle" font-size="13">hands ${view.hand_sizes.join(" · ")}</text>
      ${view.turn_seat !== null && view.turn_seat !== undefined ? `<text x="160" y="164" text-anchor="middle" font-size="13">turn: seat ${view.turn_seat}</text>` : ""}</svg>
    <svg viewBox="0 0 340 84" preserveAspectRatio="xMinYMin meet" style="max-height:110px" role="img" aria-label="team track">${track}</svg>
    ${play ? `<div>In play: seat ${play.seat} plays <span class="chip">${esc(play.card)}</span> on ${esc(fmt(play.target))}</div>` : ""}
    ${view.hand ? `<div><b>Your hand</b>${chips(view.hand, "your hand")}</div>` : ""}`;
}

export const BOARDS = { clash, sideboards, "fierce-women": fierceWomen, "they-who-were-8": theyWhoWere8 };

export function renderBoard(game, view, ctx = {}) {
  if (!view) return '<p class="meta">No view yet.</p>';
  const draw = BOARDS[game];
  try { return draw ? draw(view, ctx) : `<pre>${esc(JSON.stringify(view, null, 1))}</pre>`; }
  catch (e) { return `<pre>${esc(JSON.stringify(view, null, 1))}</pre>`; }
}

/** Moves that involve a CLASH field (the board filter). */
export function movesAtField(moves, key) {
  return moves.filter(m => Array.isArray(m.field) && m.field.join(",") === key);
}
