// The match's chat (docs/api.md "Chat"): a panel built once per match page and put back into the page after each
// redraw (the board is redrawn as HTML at every update; the chat keeps its messages, what is being typed and its
// focus). Messages are plain text: they are put on the page with textContent, never as HTML, so a card id or a
// tag in a message stays words. Mute hides the others' messages (remembered in this browser); quick-chat presets
// come from the game's catalogue entry (chat_presets).

const MUTE = "meeple.chat.mute";
export const chatMuted = () => localStorage.getItem(MUTE) === "on";
const MAX_TEXT = 200;  // the server's limit (services/contract/limits.py): 1..200 characters

/** An element with its text (never parsed as HTML) and attributes. */
function el(tag, attrs = {}, text = null) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  if (text !== null) node.textContent = text;
  return node;
}

/** One message as a list item: who spoke, then the text (a redacted message says it was removed). */
function messageItem(message, whoOf, mine) {
  const li = el("li", { "data-chat-id": String(message.id), class: `chat-line${mine ? " mine" : ""}` });
  li.append(el("b", { class: "who" }, `${whoOf(message.seat)}: `));
  li.append(el("span", { class: "text" }, message.redacted ? "(message removed)" : message.text));
  if (message.redacted) li.classList.add("redacted");
  return li;
}

/**
 * The panel. `presets`: the game's [{id, text}]; `whoOf(seat)`: a seat's name (null: a spectator);
 * `me()`: the viewer's seat (null when watching); `send(body)`: posts {text} or {preset}, resolves with the message.
 * Returns {node, add(messages), lastId(), setCanPost(can, why)}.
 */
export function chatPanel({ presets = [], whoOf, me, send }) {
  const node = el("section", { class: "panel chat", id: "chat", "aria-labelledby": "chat-h" });
  const head = el("div", { class: "chat-head" });
  head.append(el("h3", { id: "chat-h" }, "Chat"));
  const muteLabel = el("label", { class: "meta" });
  const mute = el("input", { type: "checkbox", id: "chat-mute" });
  mute.checked = chatMuted();
  muteLabel.append(mute, " mute");
  head.append(muteLabel);
  const list = el("ol", { class: "chat-log", id: "chat-log", "aria-label": "chat messages", "aria-live": "polite" });
  const muted = el("p", { class: "meta", id: "chat-muted", hidden: "" });
  const form = el("form", { id: "chat-form", class: "chat-form" });
  const input = el("input", { id: "chat-text", maxlength: String(MAX_TEXT), autocomplete: "off", "aria-label": "message",
                              placeholder: "Say something" });
  form.append(input, el("button", { type: "submit", id: "chat-send" }, "Send"));
  const quick = el("div", { class: "chat-presets", id: "chat-presets", "aria-label": "quick chat" });
  for (const p of presets) quick.append(el("button", { type: "button", class: "chat-preset", "data-preset": p.id }, p.text));
  const status = el("p", { class: "meta", id: "chat-status", role: "status" });
  node.append(head, list, muted, form, quick, status);

  const seen = new Map();  // message id -> {message, item}
  let last = 0;

  const applyMute = () => {
    let hidden = 0;
    for (const li of list.children) {
      const hide = mute.checked && !li.classList.contains("mine");
      li.hidden = hide;
      if (hide) hidden++;
    }
    muted.hidden = !mute.checked;
    muted.textContent = `Chat muted${hidden ? `: ${hidden} message${hidden === 1 ? "" : "s"} hidden` : ""}.`;
  };

  /** Messages in, once each (one may come over the socket and in a send's answer); a redaction replaces one. */
  const add = messages => {
    for (const incoming of messages || []) {
      const before = seen.get(incoming.id);
      if (before && (!incoming.redacted || before.message.redacted)) continue;
      const message = before ? { ...before.message, redacted: true, text: null } : incoming;
      if (!before && message.seat === undefined) continue;  // a redaction of a message never shown here
      const item = messageItem(message, whoOf, message.seat !== null && message.seat === me());
      if (before) before.item.replaceWith(item); else list.append(item);
      seen.set(message.id, { message, item });
      last = Math.max(last, message.id);
    }
    applyMute();
    list.scrollTop = list.scrollHeight;
  };

  const post = async body => {
    status.textContent = "";
    try {
      add([await send(body)]);
      return true;
    } catch (err) {
      status.textContent = err.code === "chat_rate_limited" ? "Slow down: at most 5 messages in 10 seconds."
        : `Not sent: ${err.code || ""} ${String(err.message || err).replace(/^[^:]*: /, "")}`.trim();
      return false;
    }
  };
  form.addEventListener("submit", async ev => {
    ev.preventDefault();
    const text = input.value.trim();
    if (!text) return;
    if (await post({ text })) input.value = "";
  });
  quick.addEventListener("click", ev => {
    const b = ev.target.closest("button.chat-preset");
    if (b) post({ preset: b.dataset.preset });
  });
  mute.addEventListener("change", () => { localStorage.setItem(MUTE, mute.checked ? "on" : "off"); applyMute(); });

  const setCanPost = (can, why = "") => {
    form.hidden = quick.hidden = !can;
    if (!can && why) status.textContent = why;
  };
  return { node, add, lastId: () => last, setCanPost };
}
