// The step-wise move chooser: a legal move is chosen one part at a time (CLASH: tile → field → side → effect),
// each step offering only the values that some legal move still has, in words. Parts come from the moves
// themselves (their keys, in the spec's order), so every game and option works without a list of its own.
import { FIELD_NAMES, catName, dresserSvg, esc, label, nameOf } from "./boards.js";

const TYPE_WORDS = {
  clash: { place: "Place a tile", pick: "Pick a tile", choose_first: "Choose who starts the next game" },
  sideboards: { start: "Choose your two starting cards", place: "Add a card to your dresser",
                exchange: "Use your exchange card: discard your hand, draw 2 new cards" },
  "fierce-women": { draw: "Draw a card", place: "Place a woman in a column", play_action: "Play an action card",
                    discard: "Discard a card", remove_column: "Remove one of your columns",
                    remove_cards: "Remove women from your table", rearrange: "Rearrange your free columns" },
  "they-who-were-8": { play: "Play an action card", discard_and_draw: "Discard a card and draw (none is playable)",
                       discard: "Discard a card (none is playable)", use_power: "Use a god's power",
                       decline: "Use no power now", endymina_discard: "Discard two cards (Endymina)",
                       kymele_take: "Take one card (Kymele)" },
};

const PROMPTS = { type: "What do you do?", tile: "Which tile?", from: "From where?", field: "On which field? (or tap the board)",
  supports: "Which side does it support?", effect: "Use its effect?", seat: "Who starts?", cards: "Which cards?",
  card: "Which card?", orientations: "Turned how?", side: "Which end of your dresser?", orientation: "Turned how?",
  pile: "From which pile?", column: "Into which column?", columns: "How?", target: "On which god?", to: "To which god?",
  swap_with: "Swap with which god?", god: "Which god's power?", as: "Copy which god?", gods: "Which two gods?" };

export const stepsOf = move => ["type", ...Object.keys(move).filter(k => k !== "type")];
const key = v => JSON.stringify(v === undefined ? null : v);

/** One step back: the last choice the player made (and the parts that followed from it). */
export function stepBack(chosen) {
  while (chosen.length && chosen[chosen.length - 1][2]) chosen.pop();
  chosen.pop();
}

/** The chooser's state for a list of legal moves: the chosen values so far and what the current step offers.
 * A step with one possible value is taken at once (and shown in the trail); once one move is left, the rest of its
 * parts fill the trail and the step is null (confirm). */
export function chooserState(moves, chosen) {
  let left = moves.filter(m => chosen.every(([k, v]) => key(m[k]) === v));
  if (!left.length) { chosen.length = 0; left = moves.slice(); }
  for (;;) {
    if (left.length === 1 && chosen.length > 0) {
      for (const k of stepsOf(left[0])) if (!chosen.some(([c]) => c === k)) chosen.push([k, key(left[0][k]), true]);
      return { left, chosen, step: null, options: [] };
    }
    const next = left.flatMap(stepsOf).find(k => !chosen.some(([c]) => c === k));
    if (next === undefined) return { left, chosen, step: null, options: [] };
    const values = [];
    for (const m of left) { const v = key(m[next]); if (!values.includes(v)) values.push(v); }
    if (values.length === 1) { chosen.push([next, values[0], true]); left = left.filter(m => key(m[next]) === values[0]); continue; }
    return { left, chosen, step: next, options: values };
  }
}

function godLabel(comp, view, id) {
  const gid = id && id.god ? id.god : id;
  const g = (view.gods || []).find(x => x.id === gid);
  return `${gid} ${nameOf(comp, gid)}${g ? ` (seat ${g.owner}, glory ${g.glory}, infamy ${g.infamy})` : ""}`;
}

function cell(view, f) { try { return view.board[f[0]][f[1]]; } catch { return null; } }
const field = f => `the ${FIELD_NAMES[f.join(",")] || f.join(",")} field`;

/** A CLASH effect object in words, for the tile whose effect it is, placed on ``at``. */
export function clashEffect(comp, view, tileId, effect, at) {
  if (effect === null) return "Do not use the effect";
  const entry = comp.byId[tileId] || {};
  const kind = entry.effect;
  const target = effect.target ? cell(view, effect.target) : null;
  const what = target ? `${label(comp, target.tile)} on ${field(effect.target)}` : effect.target ? field(effect.target) : "";
  if (effect.effect) return `Repeat the effect of ${what}: ${clashEffect(comp, view, target && target.tile, effect.effect, effect.target)}`;
  if (effect.to) return `Move ${what} to ${field(effect.to)}`;
  if (effect.direction) return `Turn every tile to the ${effect.direction} of ${at ? field(at) : "it"}`;
  if (effect.pattern) return `Turn the ${effect.pattern} neighbours`;
  if (effect.tile !== undefined) return tileId === "N07" ? `Take ${label(comp, effect.tile)} from the removed pile` : `Send ${label(comp, effect.tile)} from your opponent's zone to the removed pile`;
  if (effect.hidden !== undefined) return `Send your opponent's hidden tile no. ${effect.hidden + 1} to the removed pile`;
  if (effect.target) {
    const verb = { destroy: "Destroy", flip: "Turn", discard: "Discard", zone_transfer: "Take back into your zone" }[kind] || "Target";
    return `${verb} ${what}`;
  }
  return { N09: "Turn the 3 tiles in front", N10: "Turn every adjacent tile", N16: "Draw a random unused neutral tile" }[tileId] || (entry.text || "Use the effect");
}

/** Words for one value of one step. */
export function valueWords(game, stepKey, raw, ctx) {
  const { comp, view, move, you } = ctx;
  const v = JSON.parse(raw);
  if (stepKey === "type") return (TYPE_WORDS[game] || {})[v] || v;
  if (game === "clash") {
    if (stepKey === "tile") return label(comp, v);
    if (stepKey === "from") return { own: "from your zone", neutral: "from the neutral zone", start: "the start tile" }[v] || v;
    if (stepKey === "field") return field(v);
    if (stepKey === "supports") return `supporting ${v === "blue" ? "Blue" : "Green"}${(you === 0) === (v === "blue") ? " (you)" : " (your opponent)"}`;
    if (stepKey === "effect") return clashEffect(comp, view, move.tile, v, move.field);
    if (stepKey === "seat") return v === you ? "I start" : `seat ${v} starts`;
  }
  if (game === "sideboards") {
    if (stepKey === "cards") return `${label(comp, v[0])} on the left, ${label(comp, v[1])} on the right`;
    if (stepKey === "orientations") return `${move.cards ? move.cards[0] : "first"} turned ${v[0]}°, ${move.cards ? move.cards[1] : "second"} turned ${v[1]}°`;
    if (stepKey === "side") return `at the ${v} end`;
    if (stepKey === "orientation") return v === 0 ? "turned 0° (as printed)" : "turned 180° (upside down)";
    if (stepKey === "card") return label(comp, v);
  }
  if (game === "fierce-women") {
    if (stepKey === "pile") { const p = view.piles[v]; return `the ${["left", "middle", "right"][v]} pile: ${p && p.top ? label(comp, p.top) : "empty"}`; }
    if (stepKey === "column") {
      if (v === "new") return "a new column";
      const col = (view.tables[you] || [])[v];
      return `column ${v + 1}${col ? ` (${col.category ? catName(comp, col.category) : "no single category"}: ${col.cards.join(", ")})` : ""}`;
    }
    if (stepKey === "card") return label(comp, v);
    if (stepKey === "cards") return v.map(c => label(comp, c)).join(" and ");
    if (stepKey === "columns") return v.map(c => `[${c.join(" ")}]`).join(" ");
  }
  if (game === "they-who-were-8") {
    if (["target", "to", "swap_with"].includes(stepKey)) return godLabel(comp, view, v);
    if (stepKey === "god" || stepKey === "as") return `${godLabel(comp, view, v)}: ${(comp.byId[v] || {}).text || ""}`;
    if (stepKey === "gods") return v.map(g => godLabel(comp, view, g)).join(" and ");
    if (stepKey === "card") return label(comp, v);
    if (stepKey === "cards") return v.map(c => label(comp, c)).join(" and ");
  }
  return typeof v === "object" ? JSON.stringify(v) : String(v);
}

/** A whole move in words (the confirm line and the hint). */
export function moveWords(game, move, ctx) {
  return stepsOf(move).map(k => valueWords(game, k, key(move[k]), { ...ctx, move })).join(" · ");
}

/** The chooser's HTML: the trail of choices, the current step's options (or the confirm button). */
export function renderChooser(game, moves, chosen, ctx) {
  const st = chooserState(moves, chosen);
  const sample = st.left[0];
  const trail = st.chosen.map(([k, v], i) => `<li><button class="trail" data-back="${i}" title="change this choice">${esc(valueWords(game, k, v, { ...ctx, move: sample }))}</button></li>`).join("");
  let body;
  if (st.step === null) {
    body = `<p class="confirm-line" id="confirm-text">${esc(moveWords(game, sample, ctx))}</p>
      <button class="primary" id="confirm" data-index="${moves.indexOf(sample)}">Play this move</button>`;
  } else {
    const options = st.options.map((v, i) => {
      const words = valueWords(game, st.step, v, { ...ctx, move: sample });
      const parsed = JSON.parse(v);
      const cardId = typeof parsed === "string" && ctx.comp.byId[parsed] ? parsed : null;
      const entry = cardId ? ctx.comp.byId[cardId] : null;
      const text = entry && !entry.drawers ? entry.text : "";
      let picture = "";  // Sideboards: the card itself, as it would be turned
      if (entry && entry.drawers) picture = dresserSvg(ctx.comp, [{ card: cardId, orientation: 0 }], cardId);
      if (st.step === "orientation" && sample.card) picture = dresserSvg(ctx.comp, [{ card: sample.card, orientation: parsed }], sample.card);
      if (st.step === "cards" && Array.isArray(parsed)) picture = dresserSvg(ctx.comp, parsed.map(c => ({ card: c, orientation: 0 })), "cards");
      if (st.step === "orientations" && sample.cards) picture = dresserSvg(ctx.comp, sample.cards.map((c, k) => ({ card: c, orientation: parsed[k] })), "cards");
      return `<li><button class="choice" data-value="${esc(v)}" ${cardId ? `data-card-id="${esc(cardId)}"` : ""}>${i < 9 ? `<kbd>${i + 1}</kbd> ` : ""}${picture ? `<span class="mini">${picture}</span>` : ""}${esc(words)}${text && st.step !== "god" && st.step !== "as" ? `<small class="rules">${esc(text)}</small>` : ""}</button></li>`;
    }).join("");
    body = `<p class="prompt" id="prompt">${esc(PROMPTS[st.step] || st.step)}</p><ol class="choices" id="choices">${options}</ol>`;
  }
  return { html: `${trail ? `<ol class="trail-list" aria-label="your choices so far">${trail}</ol>` : ""}${body}`, state: st };
}
