// openprogram viewer: the sessions list and one session's call tree, timeline and details.
// Plain JavaScript, no build step. Every value that comes from the store is put into the page as text
// (text nodes, textContent, attribute values); nothing from the store is ever parsed as HTML.
"use strict";

(function () {
  const PAGE = 200; // children asked for at a time
  const TURNS = 20; // turns of the conversation asked for at a time
  const POLL_MS = 1500; // a running session is polled this often
  const LIST_POLL_MS = 5000;
  const KINDS = new Set(["turn", "graph", "node", "llm", "tool", "function", "agent", "task", "crew", "flow",
    "interrupt", "call"]);
  const STATUSES = new Set(["ok", "error", "running", "interrupted"]);
  // Status icons are drawn, not typed: a symbol such as U+23F8 (pause) shows only where an emoji font is installed.
  const SVG = "http://www.w3.org/2000/svg";
  const ICON_SHAPES = {
    error: [["path", { d: "M3 3 9 9M9 3 3 9", fill: "none", stroke: "currentColor", "stroke-width": "2",
      "stroke-linecap": "round" }]],
    running: [["circle", { cx: "6", cy: "6", r: "3.5", fill: "currentColor" }]],
    interrupted: [["rect", { x: "2.5", y: "2", width: "2.5", height: "8", rx: "0.5", fill: "currentColor" }],
      ["rect", { x: "7", y: "2", width: "2.5", height: "8", rx: "0.5", fill: "currentColor" }]],
  };

  // --- the page, built from text only ------------------------------------------------------------
  function el(tag, props, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(props || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (key === "class") node.className = value;
      else if (key === "text") node.textContent = String(value);
      else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
      else node.setAttribute(key, value === true ? "" : String(value));
    }
    for (const child of children.flat(Infinity)) {
      if (child === null || child === undefined || child === false) continue;
      node.append(child instanceof Node ? child : String(child));
    }
    return node;
  }
  const $ = (selector, root) => (root || document).querySelector(selector);
  const kindClass = (kind) => "k-" + (KINDS.has(kind) ? kind : "call");
  const statusClass = (status) => (STATUSES.has(status) ? status : "interrupted");
  const kindTag = (kind) => el("span", { class: "kind " + kindClass(kind), text: kind });
  const statusBadge = (status) => el("span", { class: "badge " + statusClass(status), text: status });
  function statusIcon(status) {
    const icon = document.createElementNS(SVG, "svg");
    for (const [key, value] of Object.entries({ viewBox: "0 0 12 12", width: "12", height: "12", "aria-hidden": "true",
      class: "icon icon-" + status })) icon.setAttribute(key, value);
    for (const [tag, attributes] of ICON_SHAPES[status] || []) {
      const shape = document.createElementNS(SVG, tag);
      for (const [key, value] of Object.entries(attributes)) shape.setAttribute(key, value);
      icon.append(shape);
    }
    return icon;
  }

  // --- numbers and times ---------------------------------------------------------------------------
  function fmtDuration(seconds) {
    if (seconds === null || seconds === undefined || Number.isNaN(seconds)) return "—";
    if (seconds < 0.001) return (seconds * 1e6).toFixed(0) + " µs";
    if (seconds < 1) return (seconds * 1000).toFixed(1) + " ms";
    if (seconds < 60) return seconds.toFixed(2) + " s";
    if (seconds < 3600) return Math.floor(seconds / 60) + "m " + Math.floor(seconds % 60) + "s";
    return Math.floor(seconds / 3600) + "h " + Math.floor((seconds % 3600) / 60) + "m";
  }
  const fmtOffset = (seconds) => (seconds > 0 ? "+" + fmtDuration(seconds) : "0");
  const fmtInt = (n) => (typeof n === "number" ? n.toLocaleString("en-US") : "—");
  const two = (n) => String(n).padStart(2, "0");
  function fmtTime(ts) {
    if (typeof ts !== "number") return "—";
    const d = new Date(ts * 1000);
    return `${d.getFullYear()}-${two(d.getMonth() + 1)}-${two(d.getDate())} ${fmtClock(ts)}`;
  }
  function fmtClock(ts) {
    const d = new Date(ts * 1000);
    return `${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}`;
  }
  const plural = (n, word) => `${fmtInt(n)} ${word}${n === 1 ? "" : "s"}`;

  // --- the JSON API ------------------------------------------------------------------------------------
  class HttpError extends Error {
    constructor(status, message) {
      super(message);
      this.status = status;
    }
  }
  async function getJson(url) {
    const response = await fetch(url, { headers: { Accept: "application/json" }, cache: "no-store" });
    if (!response.ok) {
      let message = `${response.status} ${response.statusText}`;
      try {
        message = (await response.json()).error || message;
      } catch (ignored) { /* not JSON: keep the status line */ }
      throw new HttpError(response.status, message);
    }
    return response.json();
  }
  function sessionUrl(sid, part, params) {
    let url = "/api/sessions/" + encodeURIComponent(sid) + (part ? "/" + part : "");
    if (params) url += "?" + new URLSearchParams(params).toString();
    return url;
  }
  const sessionPageUrl = (sid) => "/sessions/" + encodeURIComponent(sid);

  function setHeader(crumbs, storeUrl) {
    $("#crumbs").replaceChildren(...crumbs);
    if (storeUrl !== undefined) {
      $("#store").textContent = storeUrl;
      $("#store").setAttribute("title", "store: " + storeUrl);
    }
  }
  function showProblem(message) {
    $("#app").replaceChildren(el("div", { class: "problem", role: "alert", text: message }));
  }

  // --- captured values -----------------------------------------------------------------------------
  function jsonView(value) {
    const pre = el("pre", { class: "json" });
    if (typeof value === "string") {
      pre.textContent = value;
      return pre;
    }
    const text = JSON.stringify(value, null, 2);
    if (text === undefined || text.length > 200000) {
      pre.textContent = text === undefined ? String(value) : text; // too big to colour usefully
      return pre;
    }
    writeJson(pre, value, 0);
    return pre;
  }
  function writeJson(pre, value, depth) {
    const span = (cls, text) => pre.append(el("span", { class: cls, text }));
    const pad = "  ".repeat(depth);
    if (value === null || typeof value === "boolean") span("j-lit", String(value));
    else if (typeof value === "number") span("j-num", String(value));
    else if (typeof value === "string") span("j-str", JSON.stringify(value));
    else if (Array.isArray(value)) {
      if (!value.length) return span("j-punct", "[]");
      span("j-punct", "[");
      value.forEach((item, i) => {
        pre.append("\n" + pad + "  ");
        writeJson(pre, item, depth + 1);
        if (i < value.length - 1) span("j-punct", ",");
      });
      pre.append("\n" + pad);
      span("j-punct", "]");
    } else {
      const keys = Object.keys(value);
      if (!keys.length) return span("j-punct", "{}");
      span("j-punct", "{");
      keys.forEach((key, i) => {
        pre.append("\n" + pad + "  ");
        span("j-key", JSON.stringify(key));
        span("j-punct", ": ");
        writeJson(pre, value[key], depth + 1);
        if (i < keys.length - 1) span("j-punct", ",");
      });
      pre.append("\n" + pad);
      span("j-punct", "}");
    }
  }
  const isObject = (value) => value !== null && typeof value === "object" && !Array.isArray(value);

  function messageView(message, note) {
    if (!isObject(message)) return jsonView(message);
    const role = typeof message.role === "string" ? message.role : "message";
    const known = ["system", "user", "assistant", "tool"].includes(role) ? role : "other";
    const head = el("div", { class: "role" }, el("span", { text: role }),
      message.tool_call_id ? el("span", { class: "muted", text: "→ " + message.tool_call_id }) : null,
      note ? el("span", { class: "muted", text: note }) : null);
    const parts = [head];
    const content = message.content;
    const calls = Array.isArray(message.tool_calls) ? message.tool_calls : [];
    if (typeof content === "string" && content !== "") parts.push(el("div", { class: "content", text: content }));
    else if (content !== undefined && content !== null && content !== "") parts.push(jsonView(content));
    else if (!calls.length) parts.push(el("div", { class: "content empty", text: "no text" }));
    for (const call of calls) {
      const args = isObject(call) ? call.arguments : undefined;
      const argsText = typeof args === "string" ? args : JSON.stringify(args === undefined ? {} : args);
      parts.push(el("div", { class: "tool-call" },
        el("span", { class: "fn", text: isObject(call) ? String(call.name) : String(call) }),
        "(" + argsText + ")",
        isObject(call) && call.id ? el("span", { class: "muted", text: "  " + call.id }) : null));
    }
    return el("div", { class: "msg role-" + known }, parts);
  }
  // LangChain's serialized messages (a LangGraph state's "messages") are drawn as the chat an llm call shows.
  const LANGCHAIN_ROLES = { human: "user", ai: "assistant", system: "system", tool: "tool", function: "tool" };
  const isLangChainMessage = (value) => isObject(value) && typeof value.type === "string" && "content" in value &&
    ("additional_kwargs" in value || "response_metadata" in value);
  const isLangChainList = (value) => Array.isArray(value) && value.length > 0 && value.every(isLangChainMessage);
  function langChainMessageView(message) {
    const type = message.type.replace(/MessageChunk$/, "").toLowerCase();
    const role = LANGCHAIN_ROLES[type] || (typeof message.role === "string" ? message.role : type);
    const calls = Array.isArray(message.tool_calls) ? message.tool_calls : [];
    const said = { role, content: message.content, tool_call_id: message.tool_call_id,
      tool_calls: calls.map((call) => isObject(call) ? { name: call.name, arguments: call.args, id: call.id } : call) };
    return messageView(said, typeof message.name === "string" && message.name ? message.name : null);
  }
  // A captured value; where it holds LangChain messages, those are drawn as a chat and the rest as JSON.
  function capturedView(value) {
    if (isLangChainList(value)) return el("div", { class: "messages" }, value.map(langChainMessageView));
    if (!isObject(value) || !Object.values(value).some(isLangChainList)) return jsonView(value);
    const parts = [];
    const rest = {};
    const keys = Object.keys(value);
    for (const key of keys) {
      if (!isLangChainList(value[key])) { rest[key] = value[key]; continue; }
      if (keys.length > 1) parts.push(el("div", { class: "field-name", text: key }));
      parts.push(el("div", { class: "messages" }, value[key].map(langChainMessageView)));
    }
    if (Object.keys(rest).length) parts.push(jsonView(rest));
    return el("div", { class: "captured" }, parts);
  }
  // A model call opens on what was new since the previous request of its conversation: the messages
  // it repeats are folded into one row, drawn only when opened (a long agent's prompt holds thousands).
  function promptView(messages, prompt) {
    const shared = prompt ? Math.min(prompt.shared || 0, messages.length) : 0;
    const drawn = (message, index) => {
      const view = messageView(message);
      view.dataset.index = String(index);
      return view;
    };
    const list = el("div", { class: "messages" });
    if (shared > 0) {
      const earlier = el("div", { class: "messages earlier", hidden: true });
      const label = el("span", { class: "fold-label", text: plural(shared, "earlier message") });
      const fold = el("button", { class: "fold", type: "button", "aria-expanded": "false",
        title: "Show the messages this request repeats from the previous one" }, label);
      fold.addEventListener("click", () => {
        const open = earlier.hidden;
        if (open && !earlier.childElementCount) earlier.append(...messages.slice(0, shared).map(drawn));
        earlier.hidden = !open;
        fold.setAttribute("aria-expanded", String(open));
        label.textContent = (open ? "Hide " : "") + plural(shared, "earlier message");
      });
      const previous = prompt.after ? el("a", { href: "#call=" + encodeURIComponent(prompt.after), "data-goto": prompt.after,
        text: "the previous request" }) : "an earlier request";
      list.append(el("div", { class: "fold-row" }, fold, el("span", { class: "muted" }, "repeated from ", previous)), earlier);
    }
    const fresh = messages.slice(shared).map((message, i) => drawn(message, shared + i));
    if (!fresh.length) list.append(el("p", { class: "not-captured", text: "No new messages: this request repeats an earlier one." }));
    list.append(...fresh);
    return list;
  }
  function modelInputsView(inputs, prompt) {
    const parts = [];
    const rest = Object.assign({}, inputs);
    if (Array.isArray(inputs.messages)) {
      parts.push(promptView(inputs.messages, prompt));
      delete rest.messages;
    }
    if (Array.isArray(inputs.tools) && inputs.tools.length) {
      parts.push(el("h3", { text: "Tools offered" }),
        el("div", { class: "tags" }, inputs.tools.map((t) => el("span", { class: "tag", text: String(t) }))));
      delete rest.tools;
    }
    if (isObject(inputs.params) && Object.keys(inputs.params).length) {
      parts.push(el("h3", { text: "Parameters" }), el("dl", { class: "kv" },
        Object.entries(inputs.params).map(([k, v]) => [el("dt", { text: k }),
          el("dd", { text: typeof v === "string" ? v : JSON.stringify(v) })])));
      delete rest.params;
    }
    if (Object.keys(rest).length) parts.push(jsonView(rest));
    return parts;
  }

  // --- the sessions list ---------------------------------------------------------------------------
  function listPage() {
    document.title = "Sessions · openprogram";
    setHeader([el("span", { text: "Sessions" })]);
    const state = { sessions: [], text: "", status: "all", sort: null, now: Date.now() / 1000, loaded: false };
    const search = el("input", { class: "search", type: "search", id: "session-filter",
      placeholder: "Filter by session id, root or agent", "aria-label": "Filter sessions" });
    const chips = el("div", { class: "chips", role: "group", "aria-label": "Status" });
    const count = el("span", { class: "muted" });
    const body = el("tbody");
    const empty = el("p", { class: "empty", hidden: true });
    const columns = [
      ["Session", null], ["Root", null], ["Agent", null], ["Status", null], ["Calls", "calls", "num"],
      ["Tokens", "tokens", "num"], ["Started", "started", null], ["Duration", "duration", "num"],
    ];
    const head = el("tr", {}, columns.map(([label, key, cls]) => el("th", {
      class: [cls, key ? "sortable" : null].filter(Boolean).join(" ") || null, scope: "col", text: label,
      "data-sort": key, onclick: key ? () => sortBy(key) : null,
    })));
    const page = el("section", { class: "list-page" },
      el("div", { class: "page-head" }, el("h1", { text: "Sessions" }), count),
      el("div", { class: "toolbar" }, search, chips),
      el("div", { class: "table-wrap" }, el("table", { class: "sessions", id: "sessions" }, el("thead", {}, head), body)),
      empty);
    $("#app").replaceChildren(page);

    const started = (s) => (s.summary && s.summary.started_at) || s.created_at;
    const statusOf = (s) => (s.summary ? s.summary.status : null);
    const durationOf = (s) => {
      if (!s.summary) return null;
      if (s.summary.duration !== null) return s.summary.duration;
      return s.summary.status === "running" ? Math.max(0, state.now - started(s)) : null;
    };
    const FILTERS = [
      ["all", "All", () => true],
      ["running", "Running", (s) => statusOf(s) === "running"],
      ["errors", "With errors", (s) => statusOf(s) === "error" || (s.summary && s.summary.errors > 0)],
      ["interrupted", "Interrupted", (s) => statusOf(s) === "interrupted"],
      ["ok", "OK", (s) => statusOf(s) === "ok"],
    ];
    const KEYS = { calls: (s) => s.call_count, tokens: (s) => s.tokens, started, duration: (s) => durationOf(s) || 0 };

    function sortBy(key) {
      state.sort = state.sort && state.sort.key === key ? { key, dir: -state.sort.dir } : { key, dir: -1 };
      render();
    }
    function matchesText(s) {
      if (!state.text) return true;
      const root = s.summary && s.summary.root;
      const hay = [s.session_id, s.agent_id, root ? root.name : "", root ? root.kind : "", statusOf(s) || ""];
      return hay.join("\n").toLowerCase().includes(state.text);
    }
    function render() {
      chips.replaceChildren(...FILTERS.map(([key, label, test]) => el("button", {
        class: "chip", type: "button", "aria-pressed": String(state.status === key), "data-filter": key,
        onclick: () => { state.status = key; render(); },
      }, label, el("span", { class: "n", text: fmtInt(state.sessions.filter(test).length) }))));
      const test = FILTERS.find(([key]) => key === state.status)[2];
      let shown = state.sessions.filter((s) => test(s) && matchesText(s));
      if (state.sort) {
        const key = KEYS[state.sort.key];
        shown = shown.slice().sort((a, b) => (key(a) - key(b)) * state.sort.dir);
      }
      for (const th of head.children) {
        const sorted = state.sort && th.dataset.sort === state.sort.key;
        if (sorted) th.setAttribute("aria-sort", state.sort.dir > 0 ? "ascending" : "descending");
        else th.removeAttribute("aria-sort");
      }
      body.replaceChildren(...shown.map(row));
      count.textContent = state.loaded ? plural(state.sessions.length, "session") : "";
      empty.hidden = !state.loaded || shown.length > 0;
      empty.textContent = state.sessions.length ? "No session matches the filter." :
        "No sessions recorded yet. Run an agent inside openprogram.session_context(), or try `openprogram demo`.";
    }
    function row(s) {
      const href = sessionPageUrl(s.session_id);
      const summary = s.summary;
      const root = summary && summary.root;
      const status = statusOf(s);
      return el("tr", { "data-session": s.session_id, onclick: (event) => {
        if (!event.target.closest("a")) window.location.href = href;
      } },
      el("td", { class: "sid" }, el("a", { href, text: s.session_id })),
      el("td", {}, root ? el("div", { class: "root" }, kindTag(root.kind),
        el("span", { class: "name", title: root.name, text: root.name }),
        summary.turns > 1 ? el("span", { class: "muted", text: "+" + plural(summary.turns - 1, "turn") }) : null)
        : el("span", { class: "muted", text: summary ? "—" : "…" })),
      el("td", { class: "muted", text: s.agent_id }),
      el("td", {}, el("div", { class: "status" }, status ? statusBadge(status) : el("span", { class: "muted", text: "…" }),
        summary && summary.errors ? el("span", { class: "pill", text: plural(summary.errors, "error") }) : null)),
      el("td", { class: "num", text: fmtInt(s.call_count) }),
      el("td", { class: "num", text: s.tokens ? fmtInt(s.tokens) : "—" }),
      el("td", { class: "when", text: fmtTime(started(s)) }),
      el("td", { class: "num", text: summary ? fmtDuration(durationOf(s)) : "…" }));
    }
    async function fillSummaries() {
      const missing = state.sessions.filter((s) => !s.summary).map((s) => s.session_id);
      for (let i = 0; i < missing.length; i += 10) {
        const ids = missing.slice(i, i + 10);
        const data = await getJson("/api/summaries?" + ids.map((id) => "id=" + encodeURIComponent(id)).join("&"));
        for (const s of state.sessions) if (data.summaries[s.session_id]) s.summary = data.summaries[s.session_id];
        render();
      }
    }
    async function load() {
      const data = await getJson("/api/sessions?limit=1000");
      const known = new Map(state.sessions.map((s) => [s.session_id, s]));
      for (const s of data.sessions) {
        const before = known.get(s.session_id);
        if (!s.summary && before && before.summary && before.updated_at === s.updated_at &&
            before.call_count === s.call_count) s.summary = before.summary;
      }
      state.sessions = data.sessions;
      state.now = data.now;
      state.loaded = true;
      setHeader([el("span", { text: "Sessions" })], data.store);
      render();
      await fillSummaries();
    }
    search.addEventListener("input", () => { state.text = search.value.trim().toLowerCase(); render(); });
    render();
    load().catch((error) => showProblem("Could not list the sessions: " + error.message));
    setInterval(() => { if (!document.hidden) load().catch(() => {}); }, LIST_POLL_MS);
  }

  // --- one session -------------------------------------------------------------------------------------
  class SessionView {
    constructor(sid) {
      this.sid = sid;
      this.nodes = new Map(); // call id -> the state of its rendered node
      this.gaps = new WeakMap(); // placeholder element -> {owner, from, to}
      this.root = { id: null, depth: -1, expanded: true, loaded: true, data: { children: 0 } };
      this.selected = null;
      this.detailsToken = 0;
      this.matches = [];
      this.matchIds = new Set();
      this.matchIndex = -1;
      this.errors = [];
      this.errorIndex = -1;
      this.version = null;
      this.timer = null;
      this.zoom = null; // {rootId, offset, span}: the timeline shows this call's span, else each row's whole turn
      this.view = "tree"; // or "conversation"
    }

    async start() {
      document.title = this.sid + " · openprogram";
      setHeader([el("a", { href: "/", text: "Sessions" }), el("span", { class: "sep", text: "/" }),
        el("code", { text: this.sid })]);
      this.build();
      let overview;
      try {
        overview = await getJson(sessionUrl(this.sid));
      } catch (error) {
        showProblem(error.status === 404 ? `There is no session ${this.sid}.` : "Could not read the session: " + error.message);
        return;
      }
      this.apply(overview);
      this.renderRoots(overview.roots);
      // The server sent the newest turn opened; a link to a call opens the way down to it.
      const asked = new URLSearchParams(window.location.hash.slice(1));
      const wanted = asked.get("call");
      if (wanted) await this.reveal(wanted);
      this.tree.dataset.readyMs = String(Math.round(performance.now())); // since navigation began
      this.tree.dataset.ready = "true";
      if (asked.get("view") === "conversation") this.showView("conversation");
      // A link to another call or view of this page changes only the fragment: follow it without a reload.
      window.addEventListener("hashchange", () => {
        const now = new URLSearchParams(window.location.hash.slice(1));
        this.showView(now.get("view") === "conversation" ? "conversation" : "tree");
        const call = now.get("call");
        if (call && call !== this.selected) this.reveal(call);
      });
      if (overview.running) this.startPolling();
    }

    build() {
      this.title = el("code", { id: "session-id", text: this.sid });
      this.badge = el("span");
      this.live = el("span", { class: "live", hidden: true, text: "Live" });
      this.stats = el("dl", { class: "stats" });
      this.turns = el("div", { class: "turns", "aria-label": "Turns" });
      this.search = el("input", { class: "search", type: "search", id: "call-search",
        placeholder: "Search calls by name, model or error", title: "Search calls (/)", "aria-label": "Search calls" });
      this.matchNote = el("span", { class: "count-note", id: "match-note" });
      this.prevMatch = el("button", { class: "btn icon", type: "button", title: "Previous match (Shift+Enter)",
        "aria-label": "Previous match", disabled: true, text: "‹", onclick: () => this.gotoMatch(-1) });
      this.nextMatch = el("button", { class: "btn icon", type: "button", title: "Next match (Enter)",
        "aria-label": "Next match", disabled: true, text: "›", onclick: () => this.gotoMatch(1) });
      this.prevError = el("button", { class: "btn danger", type: "button", id: "prev-error", title: "Previous error (Shift+E)",
        disabled: true, text: "‹", onclick: () => this.gotoError(-1) });
      this.nextError = el("button", { class: "btn danger", type: "button", id: "next-error", title: "Next error (E)",
        disabled: true, text: "Next error ›", onclick: () => this.gotoError(1) });
      this.errorNote = el("span", { class: "count-note", id: "error-note" });
      this.scaleNote = el("span", { class: "scale", text: "whole turn" });
      this.zoomButton = el("button", { class: "zoom", type: "button", id: "zoom", text: "Zoom",
        title: "Scale the timeline to the selected call (Z)", onclick: () => this.toggleZoom() });
      this.tree = el("div", { class: "tree", id: "tree", role: "tree", tabindex: "0", "aria-label": "Call tree" });
      this.viewTree = el("button", { class: "btn", type: "button", id: "view-tree", "aria-pressed": "true", text: "Tree",
        title: "The call tree and its timeline", onclick: () => this.backToTree() });
      this.viewTalk = el("button", { class: "btn", type: "button", id: "view-conversation", "aria-pressed": "false",
        text: "Conversation", title: "Each turn's input and answer", onclick: () => this.showView("conversation") });
      this.treePane = el("div", { class: "tree-pane" },
        el("div", { class: "tree-head" }, el("div", { text: "Call" }), el("div", { class: "r", text: "Start" }),
          el("div", { class: "r", text: "Duration" }), el("div", { class: "timeline-head" },
            el("span", { class: "head-label", text: "Timeline" }), this.scaleNote, this.zoomButton)),
        this.tree);
      this.talk = new ConversationPane(this);
      this.details = el("aside", { class: "details", id: "details", "aria-live": "polite" },
        el("p", { class: "placeholder", text: "Select a call to see its inputs, output, error and attributes." }));
      const page = el("section", { class: "session-page" },
        el("div", { class: "session-head" },
          el("div", { class: "title-row" }, el("h1", {}, el("span", { class: "kicker", text: "Session" }), this.title),
            this.badge, this.live),
          this.stats, this.turns),
        el("div", { class: "session-tools toolbar" },
          el("div", { class: "btn-group views", role: "group", "aria-label": "View" }, this.viewTree, this.viewTalk),
          this.search, el("div", { class: "btn-group" }, this.prevMatch, this.nextMatch),
          this.matchNote, el("span", { class: "spacer" }), this.errorNote,
          el("div", { class: "btn-group" }, this.prevError, this.nextError),
          el("button", { class: "btn", type: "button", text: "Collapse all", onclick: () => this.collapseAll() })),
        el("div", { class: "split" }, this.treePane, this.talk.el, this.details));
      $("#app").replaceChildren(page);
      this.tree.addEventListener("click", (event) => this.onTreeClick(event));
      this.tree.addEventListener("dblclick", (event) => {
        const row = event.target.closest(".row");
        if (row && !event.target.closest(".toggle")) this.toggle(this.nodes.get(row.dataset.id));
      });
      this.tree.addEventListener("keydown", (event) => this.onTreeKey(event));
      this.details.addEventListener("click", (event) => {
        const link = event.target.closest("[data-goto]");
        if (link) { event.preventDefault(); this.showView("tree"); this.reveal(link.dataset.goto); }
      });
      let debounce = null;
      this.search.addEventListener("input", () => {
        clearTimeout(debounce);
        debounce = setTimeout(() => this.runSearch(), 220);
      });
      this.search.addEventListener("keydown", (event) => {
        if (event.key === "Enter") { event.preventDefault(); this.gotoMatch(event.shiftKey ? -1 : 1); }
      });
      document.addEventListener("keydown", (event) => {
        if (event.target.closest && event.target.closest("input, textarea")) return;
        if (event.key === "/") { event.preventDefault(); this.search.focus(); }
        else if (event.key === "e" || event.key === "E") this.gotoError(event.shiftKey ? -1 : 1);
        else if (event.key === "z") this.toggleZoom();
      });
    }

    // --- the header ------------------------------------------------------------------------------------
    apply(overview) {
      this.version = overview.version;
      this.errors = overview.errors;
      const info = overview.session;
      const summary = overview.summary;
      this.store = overview.store;
      setHeader([el("a", { href: "/", text: "Sessions" }), el("span", { class: "sep", text: "/" }),
        el("code", { text: this.sid })], overview.store);
      this.badge.replaceChildren(statusBadge(summary.status));
      this.live.hidden = !overview.running;
      const duration = summary.duration !== null ? summary.duration
        : summary.started_at ? Math.max(0, overview.now - summary.started_at) : null;
      const root = summary.root;
      const stat = (label, ...value) => el("div", {}, el("dt", { text: label }), el("dd", {}, value));
      this.stats.replaceChildren(
        stat("Root", root ? [kindTag(root.kind), " ", root.name] : "—"),
        stat("Agent", info.agent_id),
        stat("Calls", fmtInt(info.call_count)),
        stat("Tokens", info.tokens ? fmtInt(info.tokens) : "—"),
        stat("Turns", fmtInt(summary.turns)),
        stat("Errors", overview.error_count ? el("span", { class: "pill", text: fmtInt(overview.error_count) }) : "none"),
        stat("Started", fmtTime(summary.started_at || info.created_at)),
        stat(summary.status === "running" ? "Running for" : "Duration", fmtDuration(duration)));
      const roots = overview.roots;
      const chips = roots.nodes.filter((n) => n.kind === "turn").map((n) => el("button", {
        class: "turn-chip " + statusClass(n.status), type: "button", "data-turn": n.id,
        title: `${n.name} · ${n.status} · ${plural(n.descendants, "call")}`,
        onclick: () => {
          if (this.view === "conversation" && this.talk.scrollTo(n.id)) return;
          this.showView("tree");
          this.reveal(n.id, { expand: true });
        },
      }, el("span", { class: "dot" }), "Turn " + n.turn_number, el("span", { class: "muted", text: fmtClock(n.started_at) }),
      el("span", { class: "muted", text: fmtDuration(n.duration !== null ? n.duration : n.elapsed) })));
      if (roots.offset > 0) chips.unshift(el("span", { class: "muted", text: plural(roots.offset, "earlier turn") + "…" }));
      this.turns.replaceChildren(...chips);
      this.turns.hidden = chips.length === 0;
      this.errorNote.textContent = overview.error_count ? plural(overview.error_count, "error") : "no errors";
      this.prevError.disabled = this.nextError.disabled = !this.errors.length;
      this.errorIndex = Math.min(this.errorIndex, this.errors.length - 1);
    }

    // --- the tree -------------------------------------------------------------------------------------------
    renderRoots(page) {
      this.root = { id: null, depth: -1, expanded: true, loaded: true, data: { children: page.total }, kids: this.tree };
      this.tree.replaceChildren(this.fillPage(this.root, page));
    }

    fillPage(owner, page) {
      // [placeholder for earlier children] the page [placeholder for later ones]
      const fragment = document.createDocumentFragment();
      if (page.offset > 0) fragment.append(this.makeGap(owner, 0, page.offset));
      for (const data of page.nodes) fragment.append(this.makeNode(data, owner).el);
      const end = page.offset + page.nodes.length;
      if (end < page.total) fragment.append(this.makeGap(owner, end, page.total));
      return fragment;
    }

    makeGap(owner, from, to) {
      const count = to - from;
      const text = from === 0 && owner === this.root ? `Show ${fmtInt(Math.min(count, PAGE))} of ${plural(count, "earlier turn")}`
        : `Show ${fmtInt(Math.min(count, PAGE))} more of ${plural(count, "call")}`;
      const gap = el("div", { class: "gap", role: "button", tabindex: "-1", text });
      gap.style.setProperty("--depth", String(owner.depth + 1));
      this.gaps.set(gap, { owner, from, to });
      return gap;
    }

    makeNode(data, owner) {
      const depth = owner.depth + 1;
      const status = statusClass(data.status);
      const isTurn = data.kind === "turn" && data.turn_number;
      const label = isTurn ? "Turn " + data.turn_number : data.name;
      // The framework is named where it changes (a tool that the whole tree shares it with needs no label).
      const inherited = owner === this.root ? null : owner.data.framework;
      const sub = isTurn ? `${data.name} · ${fmtClock(data.started_at)}` : data.framework !== inherited ? data.framework || "" : "";
      const shown = data.duration !== null ? data.duration : data.elapsed !== undefined ? data.elapsed : null;
      const tokens = data.tokens && (data.kind === "llm" || data.kind === "turn") ? fmtInt(data.tokens) + " tok" : null;
      const bar = el("span", { class: "bar" });
      const toggle = el("button", { class: "toggle" + (data.children ? "" : " leaf"), type: "button", tabindex: "-1",
        "aria-label": data.children ? "Expand or collapse" : null });
      const row = el("div", {
        class: `row ${kindClass(data.kind)} ${status}${this.matchIds.has(data.id) ? " match" : ""}${this.selected === data.id ? " selected" : ""}`,
        role: "treeitem", "aria-level": String(depth + 1), "aria-expanded": data.children ? "false" : null,
        "aria-selected": String(this.selected === data.id), "data-id": data.id, "data-kind": data.kind, "data-status": data.status,
        title: `${data.kind} ${data.name} · ${data.status} · starts ${fmtOffset(data.offset)} in its turn · ${fmtDuration(shown)}` +
          (data.error ? "\n" + data.error : ""),
      },
      el("div", { class: "name" }, toggle, el("span", { class: "status-icon" }, status === "ok" ? null : statusIcon(status)),
        kindTag(data.kind), el("span", { class: "label", text: label }),
        sub ? el("span", { class: "sub", text: sub }) : null,
        tokens ? el("span", { class: "tok", text: tokens }) : null,
        data.errors_below ? el("span", { class: "pill", title: plural(data.errors_below, "error") + " below",
        }, statusIcon("error"), fmtInt(data.errors_below)) : null),
      el("div", { class: "r", text: fmtOffset(data.offset) }),
      el("div", { class: "r", text: fmtDuration(shown) + (data.status === "running" ? "…" : "") }),
      el("div", { class: "timeline" }, bar));
      row.style.setProperty("--depth", String(depth));
      const kids = el("div", { class: "kids", role: "group" });
      const node = el("div", { class: "node" }, row, kids);
      const rootId = owner === this.root ? data.id : owner.rootId;
      const state = { id: data.id, data, el: node, row, kids, bar, depth, owner, rootId, expanded: false, loaded: false };
      this.layoutBar(state);
      this.nodes.set(data.id, state);
      if (data.page) {
        state.loaded = true;
        kids.append(this.fillPage(state, data.page));
        this.setOpen(state, true);
      }
      return state;
    }

    layoutBar(state) {
      // Offsets are from the start of the row's turn; zoomed, from the start of the chosen call.
      const data = state.data;
      const shown = data.duration !== null ? data.duration : data.elapsed || 0;
      let origin = 0;
      let span = data.span || 1;
      if (this.zoom) {
        if (state.rootId !== this.zoom.rootId) return void (state.bar.hidden = true);
        origin = this.zoom.offset;
        span = this.zoom.span;
      }
      const left = (data.offset - origin) / span;
      const right = (data.offset + shown - origin) / span;
      state.bar.hidden = right < 0 || left > 1;
      state.bar.style.setProperty("left", (Math.max(0, left) * 100).toFixed(3) + "%");
      state.bar.style.setProperty("width", (Math.max(0, Math.min(1, right) - Math.max(0, left)) * 100).toFixed(3) + "%");
    }

    toggleZoom() {
      const chosen = this.selected && this.nodes.get(this.selected);
      if (this.zoom || !chosen) {
        this.zoom = null;
        this.scaleNote.textContent = "whole turn";
        this.scaleNote.title = "";
        this.zoomButton.textContent = "Zoom";
      } else {
        const data = chosen.data;
        const span = data.duration !== null ? data.duration : data.elapsed || data.span;
        this.zoom = { rootId: chosen.rootId, offset: data.offset, span: Math.max(span, 1e-9) };
        this.scaleNote.textContent = `${data.name} · ${fmtDuration(span)}`;
        this.scaleNote.title = this.scaleNote.textContent;
        this.zoomButton.textContent = "Whole turn";
      }
      for (const state of this.nodes.values()) this.layoutBar(state);
    }

    setOpen(state, open) {
      state.expanded = open;
      state.el.classList.toggle("open", open);
      state.row.setAttribute("aria-expanded", String(open));
    }

    async expand(state, depth) {
      if (!state || !state.data.children || state === this.root) return;
      this.setOpen(state, true);
      if (!state.loaded) {
        state.loaded = true;
        const gap = this.makeGap(state, 0, state.data.children);
        state.kids.replaceChildren(gap);
        await this.loadGap(gap, 0, PAGE, depth || 1);
      }
    }

    collapse(state) {
      if (state && state !== this.root) this.setOpen(state, false);
    }

    toggle(state) {
      if (!state) return;
      if (state.expanded) this.collapse(state);
      else this.expand(state);
    }

    collapseAll() {
      for (const state of this.nodes.values()) if (state.expanded) this.setOpen(state, false);
    }

    async loadGap(gap, from, count, depth) {
      const info = this.gaps.get(gap);
      if (!info || gap.classList.contains("busy")) return;
      const start = Math.max(info.from, from);
      const end = Math.min(info.to, start + count);
      gap.classList.add("busy");
      gap.textContent = "Loading…";
      const params = { offset: start, limit: end - start, depth: depth || 1 };
      if (info.owner.id !== null) params.parent = info.owner.id;
      let page;
      try {
        page = await getJson(sessionUrl(this.sid, "children", params));
      } catch (error) {
        gap.classList.remove("busy");
        gap.textContent = "Could not load: " + error.message;
        return;
      }
      const fragment = document.createDocumentFragment();
      if (info.from < start) fragment.append(this.makeGap(info.owner, info.from, start));
      for (const data of page.nodes) fragment.append(this.makeNode(data, info.owner).el);
      const loadedTo = start + page.nodes.length;
      if (loadedTo < info.to && loadedTo < page.total) fragment.append(this.makeGap(info.owner, loadedTo, Math.min(info.to, page.total)));
      gap.replaceWith(fragment);
    }

    gapAt(owner, position) {
      const container = owner === this.root ? this.tree : owner.kids;
      for (const child of container.children) {
        const info = this.gaps.get(child);
        if (info && info.from <= position && position < info.to) return child;
      }
      return null;
    }

    // Opens the path down to a call (loading the pages it sits in) and selects it.
    async reveal(callId, options) {
      let path = options && options.path;
      if (!path) {
        try {
          path = (await getJson(sessionUrl(this.sid, "path", { id: callId }))).path;
        } catch (error) {
          return false;
        }
      }
      let owner = this.root;
      let state = null;
      for (let i = 0; i < path.length; i += 1) {
        const step = path[i];
        if (owner !== this.root && !owner.expanded) await this.expand(owner);
        state = this.nodes.get(step.id);
        if (!state || !state.el.isConnected) {
          const gap = this.gapAt(owner, step.position);
          if (gap) await this.loadGap(gap, Math.max(0, step.position - 20), PAGE);
          state = this.nodes.get(step.id);
        }
        if (!state || !state.el.isConnected) return false;
        owner = state;
      }
      if (options && options.expand) await this.expand(state);
      this.select(state);
      state.row.scrollIntoView({ block: "center" });
      return true;
    }

    select(state) {
      if (!state) return;
      const before = this.selected && this.nodes.get(this.selected);
      if (before) {
        before.row.classList.remove("selected");
        before.row.setAttribute("aria-selected", "false");
      }
      this.selected = state.id;
      state.row.classList.add("selected");
      state.row.setAttribute("aria-selected", "true");
      this.writeHash();
      this.showDetails(state.id);
    }

    // Opens a call's details from outside the tree (the conversation), keeping the tree's selection in step.
    openCall(callId) {
      const state = this.nodes.get(callId);
      if (state) return this.select(state);
      const before = this.selected && this.nodes.get(this.selected);
      if (before) {
        before.row.classList.remove("selected");
        before.row.setAttribute("aria-selected", "false");
      }
      this.selected = callId;
      this.writeHash();
      this.showDetails(callId);
    }

    // The address says what is shown: #call=ID&view=conversation (a link opens the page the same way).
    writeHash() {
      const params = new URLSearchParams();
      if (this.selected) params.set("call", this.selected);
      if (this.view !== "tree") params.set("view", this.view);
      const hash = params.toString();
      history.replaceState(null, "", hash ? "#" + hash : window.location.pathname);
    }

    // Back from the conversation: the call a bubble opened is shown in the tree too.
    backToTree() {
      this.showView("tree");
      const chosen = this.selected && this.nodes.get(this.selected);
      if (this.selected && !(chosen && chosen.row.offsetParent)) this.reveal(this.selected);
    }

    showView(name) {
      if (name !== "tree" && name !== "conversation") return;
      const talk = name === "conversation";
      this.view = name;
      this.treePane.hidden = talk;
      this.talk.el.hidden = !talk;
      this.viewTree.setAttribute("aria-pressed", String(!talk));
      this.viewTalk.setAttribute("aria-pressed", String(talk));
      this.writeHash();
      if (talk) this.talk.show();
    }

    onTreeClick(event) {
      const gap = event.target.closest(".gap");
      if (gap) {
        const info = this.gaps.get(gap);
        if (info) this.loadGap(gap, info.from, PAGE);
        return;
      }
      const row = event.target.closest(".row");
      if (!row) return;
      const state = this.nodes.get(row.dataset.id);
      if (event.target.closest(".toggle")) this.toggle(state);
      else this.select(state);
    }

    visibleRows() {
      return [...this.tree.querySelectorAll(".row")].filter((row) => row.offsetParent !== null);
    }

    onTreeKey(event) {
      const current = this.selected && this.nodes.get(this.selected);
      const move = (step) => {
        const rows = this.visibleRows();
        const at = current ? rows.indexOf(current.row) : -1;
        const next = rows[Math.max(0, Math.min(rows.length - 1, at + step))];
        if (next) {
          this.select(this.nodes.get(next.dataset.id));
          next.scrollIntoView({ block: "nearest" });
        }
      };
      if (event.key === "ArrowDown") move(1);
      else if (event.key === "ArrowUp") move(-1);
      else if (event.key === "ArrowRight" && current) {
        if (current.data.children && !current.expanded) this.expand(current);
        else move(1);
      } else if (event.key === "ArrowLeft" && current) {
        if (current.expanded) this.collapse(current);
        else if (current.owner !== this.root) {
          this.select(current.owner);
          current.owner.row.scrollIntoView({ block: "nearest" });
        }
      } else if (event.key === "Enter" && current) this.toggle(current);
      else return;
      event.preventDefault();
    }

    // --- search and errors ----------------------------------------------------------------------------
    async runSearch() {
      const text = this.search.value.trim();
      for (const id of this.matchIds) {
        const state = this.nodes.get(id);
        if (state) state.row.classList.remove("match");
      }
      this.matches = [];
      this.matchIds = new Set();
      this.matchIndex = -1;
      this.prevMatch.disabled = this.nextMatch.disabled = true;
      if (!text) {
        this.matchNote.textContent = "";
        return;
      }
      let found;
      try {
        found = await getJson(sessionUrl(this.sid, "search", { q: text }));
      } catch (error) {
        this.matchNote.textContent = "search failed: " + error.message;
        return;
      }
      if (this.search.value.trim() !== text) return; // typed on meanwhile
      this.matches = found.matches;
      this.matchCount = found.count;
      this.matchIds = new Set(found.matches.map((m) => m.id));
      for (const id of this.matchIds) {
        const state = this.nodes.get(id);
        if (state) state.row.classList.add("match");
      }
      this.prevMatch.disabled = this.nextMatch.disabled = !this.matches.length;
      if (!this.matches.length) {
        this.matchNote.textContent = "no calls match";
        return;
      }
      await this.gotoMatch(1);
    }

    async gotoMatch(step) {
      if (!this.matches.length) return;
      this.showView("tree");
      this.matchIndex = (this.matchIndex + step + this.matches.length) % this.matches.length;
      const more = this.matchCount > this.matches.length ? "+" : "";
      const word = this.matches.length === 1 && !more ? "match" : "matches";
      this.matchNote.textContent = `${fmtInt(this.matchIndex + 1)} of ${fmtInt(this.matches.length)}${more} ${word}`;
      const match = this.matches[this.matchIndex];
      await this.reveal(match.id, { path: match.path });
    }

    async gotoError(step) {
      if (!this.errors.length) return;
      this.showView("tree");
      this.errorIndex = this.errorIndex < 0 && step < 0 ? this.errors.length - 1
        : (this.errorIndex + step + this.errors.length) % this.errors.length;
      this.errorNote.textContent = `error ${fmtInt(this.errorIndex + 1)} of ${fmtInt(this.errors.length)}`;
      await this.reveal(this.errors[this.errorIndex]);
    }

    // --- the details pane ---------------------------------------------------------------------------------
    async showDetails(callId) {
      const token = ++this.detailsToken;
      let call;
      try {
        call = await getJson(sessionUrl(this.sid, "call", { id: callId }));
      } catch (error) {
        if (token === this.detailsToken) this.details.replaceChildren(el("div", { class: "problem", text: error.message }));
        return;
      }
      if (token !== this.detailsToken) return; // another call was selected meanwhile
      this.details.replaceChildren(...this.detailsView(call));
      this.details.scrollTop = 0;
    }

    detailsView(call) {
      const node = call.node;
      const llm = node.llm || {};
      const fact = (label, value) => [el("dt", { text: label }), el("dd", {}, value)];
      const parentLink = call.parent ? el("a", { href: "#call=" + encodeURIComponent(call.parent.id), "data-goto": call.parent.id },
        call.parent.kind + " " + call.parent.name) : el("span", { class: "muted", text: "none (a root)" });
      const facts = [
        ...fact("Call id", el("code", { text: node.id })),
        ...fact("Kind", node.kind),
        ...(node.framework ? fact("Framework", node.framework) : []),
        ...fact("Started", `${fmtTime(node.started_at)} (${fmtOffset(node.offset)} in its turn)`),
        ...fact("Duration", node.duration !== null ? fmtDuration(node.duration)
          : node.elapsed !== undefined ? `running for ${fmtDuration(node.elapsed)}` : "unfinished"),
        ...fact("Parent", parentLink),
        ...fact("Turn", el("code", { text: call.turn_id })),
      ];
      if (node.children) facts.push(...fact("Calls below", `${fmtInt(node.children)} direct, ${fmtInt(node.descendants)} in all`));
      if (llm.model !== undefined) facts.push(...fact("Model", String(llm.model)));
      if (llm.provider !== undefined) facts.push(...fact("Provider", String(llm.provider)));
      if (llm.stream) facts.push(...fact("Streamed", "yes"));
      const head = el("div", { class: "details-head" },
        el("div", { class: "top" }, kindTag(node.kind), el("h2", { id: "details-name", text: node.name }), statusBadge(node.status)),
        el("dl", { class: "facts" }, facts));
      const usage = llm.usage;
      if (usage) {
        const cell = (label, value) => el("div", {}, el("div", { class: "v", text: fmtInt(value) }), el("div", { class: "l", text: label }));
        head.append(el("div", { class: "usage", id: "usage" }, cell("Input tokens", usage.input_tokens),
          cell("Output tokens", usage.output_tokens), cell("Total tokens", llm.tokens)));
      } else if (node.kind !== "llm" && node.tokens) {
        head.append(el("dl", { class: "facts" }, fact("Tokens below", fmtInt(node.tokens))));
      }
      const sections = [head];
      const section = (title, cls, ...content) => el("section", { class: "section " + (cls || "") }, el("h3", { text: title }), content);
      // A failed call's traceback (attributes.traceback): under its error, open, folded with a click.
      const stack = isObject(call.attributes) && typeof call.attributes.traceback === "string" ? call.attributes.traceback : null;
      let attributes = call.attributes;
      if (stack !== null) {
        attributes = Object.fromEntries(Object.entries(attributes).filter(([key]) => key !== "traceback"));
        if (!Object.keys(attributes).length) attributes = null;
      }
      if (call.error || stack !== null) {
        sections.push(section("Error", "error-section", call.error ? el("pre", { class: "error-text", text: call.error }) : null,
          stack === null ? null : el("details", { class: "traceback", id: "traceback", open: true },
            el("summary", { text: "Traceback" }), el("pre", { class: "traceback-text", text: stack }))));
      }
      const none = (what) => el("p", { class: "not-captured", text: `No ${what} recorded (content capture may be off).` });
      const noOutput = { error: "No output: the call raised an error instead of returning.",
        running: "No output yet: the call is still running.", interrupted: "No output: the call was interrupted." };
      const inputs = call.inputs === null || call.inputs === undefined ? none("inputs")
        : node.kind === "llm" && isObject(call.inputs) ? modelInputsView(call.inputs, call.prompt) : capturedView(call.inputs);
      const shared = call.prompt ? call.prompt.shared : 0;
      const inputsTitle = shared ? `Inputs · ${fmtInt(call.prompt.messages - shared)} new of ${plural(call.prompt.messages, "message")}` : "Inputs";
      sections.push(section(inputsTitle, "inputs", inputs));
      let output;
      if (call.output === null || call.output === undefined) {
        output = noOutput[node.status] ? el("p", { class: "not-captured", text: noOutput[node.status] }) : none("output");
      }
      else if (node.kind === "llm" && isObject(call.output)) {
        output = messageView(call.output, call.output.finish_reason ? "finish: " + call.output.finish_reason : null);
      } else output = capturedView(call.output);
      sections.push(section("Output", "output", output));
      if (attributes !== null && attributes !== undefined) sections.push(section("Attributes", "attributes", jsonView(attributes)));
      return sections;
    }

    // --- live updates -------------------------------------------------------------------------------------
    startPolling() {
      if (this.timer) return;
      this.live.hidden = false;
      this.timer = setInterval(() => this.poll(), POLL_MS);
    }

    async poll() {
      if (document.hidden || this.polling) return;
      this.polling = true;
      try {
        const state = await getJson(sessionUrl(this.sid, "state"));
        if (state.version !== this.version) await this.refresh();
        if (!state.running) {
          clearInterval(this.timer);
          this.timer = null;
          this.live.hidden = true;
        }
      } catch (ignored) {
        /* the next poll tries again */
      } finally {
        this.polling = false;
      }
    }

    async refresh() {
      const overview = await getJson(sessionUrl(this.sid));
      const open = new Set([...this.nodes.values()].filter((s) => s.expanded && s.el.isConnected).map((s) => s.id));
      const scroll = this.tree.scrollTop;
      this.nodes.clear();
      this.apply(overview);
      this.renderRoots(overview.roots);
      const queue = [...this.nodes.values()];
      while (queue.length) {
        const state = queue.shift();
        if (!open.has(state.id) || !state.data.children) continue;
        const before = this.nodes.size;
        await this.expand(state);
        queue.push(...[...this.nodes.values()].slice(before));
      }
      for (const id of this.matchIds) {
        const state = this.nodes.get(id);
        if (state) state.row.classList.add("match");
      }
      this.tree.scrollTop = scroll;
      if (this.selected && this.nodes.has(this.selected)) this.showDetails(this.selected);
      this.talk.changed();
    }
  }

  // --- the conversation: each turn's input and answer, the call tree one click away ------------------------
  // The server picks each exchange's input and answer from the recorded calls (see _viewer/conversation.py);
  // a bubble opens the call it came from in the details pane.
  class ConversationPane {
    constructor(session) {
      this.session = session;
      this.el = el("div", { class: "talk-pane", id: "conversation", hidden: true, "aria-label": "Conversation" });
      this.list = el("div", { class: "talk" });
      this.earlier = el("button", { class: "gap earlier-turns", type: "button", id: "earlier-turns", hidden: true,
        onclick: () => this.loadEarlier() });
      this.turns = new Map(); // turn id -> its section
      this.offset = 0; // the first turn shown, among all the session's turns
      this.state = "empty"; // then "ready"; "stale" when the session changed while it was hidden
      this.busy = false;
      this.el.addEventListener("click", (event) => this.onClick(event));
      this.el.addEventListener("keydown", (event) => {
        const bubble = event.target.closest(".bubble[data-call]");
        if (bubble && (event.key === "Enter" || event.key === " ")) { event.preventDefault(); this.open(bubble); }
      });
    }

    show() {
      if (this.state !== "ready") this.load();
    }

    changed() {
      if (this.state === "empty") return;
      this.state = "stale";
      if (!this.el.hidden) this.load();
    }

    async load() {
      if (this.busy) return;
      this.busy = true;
      const first = this.state === "empty";
      if (first) this.el.replaceChildren(el("p", { class: "loading", text: "Loading the conversation…" }));
      const atEnd = this.el.scrollTop + this.el.clientHeight >= this.el.scrollHeight - 4;
      try {
        const page = await getJson(sessionUrl(this.session.sid, "conversation", { limit: TURNS }));
        this.turns.clear();
        this.offset = page.offset;
        this.list.replaceChildren(this.earlier, ...page.turns.map((turn) => this.turnView(turn)));
        if (!page.turns.length) this.list.append(el("p", { class: "empty", text: "No turns recorded yet." }));
        this.mark(this.session.selected);
        this.showEarlier();
        this.el.replaceChildren(this.list);
        this.state = "ready";
        if (first || atEnd) this.el.scrollTop = this.el.scrollHeight; // a chat reads from its newest turn up
        this.el.dataset.readyMs = String(Math.round(performance.now()));
        this.el.dataset.ready = "true";
      } catch (error) {
        this.el.replaceChildren(el("div", { class: "problem", text: "Could not read the conversation: " + error.message }));
        this.state = "empty";
      } finally {
        this.busy = false;
      }
    }

    async loadEarlier() {
      if (this.busy || this.offset <= 0) return;
      this.busy = true;
      const from = Math.max(0, this.offset - TURNS);
      this.earlier.textContent = "Loading…";
      try {
        const page = await getJson(sessionUrl(this.session.sid, "conversation", { offset: from, limit: this.offset - from }));
        const height = this.el.scrollHeight;
        const fresh = page.turns.filter((turn) => !this.turns.has(turn.node.id)).map((turn) => this.turnView(turn));
        this.earlier.after(...fresh);
        this.mark(this.session.selected);
        this.offset = from;
        this.el.scrollTop += this.el.scrollHeight - height; // the reader's place stays where it was
      } catch (error) {
        this.earlier.textContent = "Could not load: " + error.message;
        return;
      } finally {
        this.busy = false;
      }
      this.showEarlier();
    }

    showEarlier() {
      this.earlier.hidden = this.offset <= 0;
      this.earlier.textContent = `Show ${fmtInt(Math.min(this.offset, TURNS))} of ${plural(this.offset, "earlier turn")}`;
    }

    scrollTo(turnId) {
      const section = this.turns.get(turnId);
      if (section) section.scrollIntoView({ block: "start" });
      return Boolean(section);
    }

    turnView(turn) {
      const node = turn.node;
      const shown = node.duration !== null ? node.duration : node.elapsed;
      const head = el("div", { class: "talk-head" },
        el("span", { class: "turn-name", text: node.turn_number ? "Turn " + node.turn_number : `${node.kind} ${node.name}` }),
        statusBadge(node.status),
        el("span", { class: "muted", text: `${fmtTime(node.started_at)} · ${fmtDuration(shown)} · ${plural(node.descendants, "call")}` }),
        el("button", { class: "link", type: "button", "data-tree": node.id, text: "Show in tree" }));
      const section = el("section", { class: "talk-turn", "data-turn": node.id }, head,
        turn.exchanges.map((exchange) => this.exchangeView(exchange)));
      if (!turn.exchanges.length) section.append(el("p", { class: "muted note", text: "Nothing recorded in this turn yet." }));
      if (turn.more) section.append(el("p", { class: "muted note", text: `and ${plural(turn.more, "more run")}: see the tree` }));
      this.turns.set(node.id, section);
      return section;
    }

    exchangeView(exchange) {
      const run = exchange.run;
      const speaker = [kindTag(run.kind), el("span", { class: "name", text: run.name })];
      const parts = [];
      parts.push(exchange.input
        ? this.bubble("asked", exchange.input, exchange.input.call === run.id ? "input of " + run.name : "user")
        : el("div", { class: "bubble asked missing", text: "No input recorded (content capture may be off)." }));
      if (exchange.answer) parts.push(this.bubble("answer", exchange.answer, speaker));
      if (exchange.error) {
        parts.push(el("div", { class: "bubble answer failed", "data-call": run.id, role: "button", tabindex: "0" },
          el("div", { class: "who", text: "error" }), el("div", { class: "text", text: exchange.error })));
      } else if (!exchange.answer) {
        parts.push(el("div", { class: "bubble answer missing", text: run.status === "running" ? "Working…" : "No answer recorded." }));
      }
      const models = exchange.model_calls ? plural(exchange.model_calls, "model call") : "no model calls";
      parts.push(el("div", { class: "exchange-foot muted" }, `${models} · ${plural(exchange.calls, "call")} · `,
        el("button", { class: "link", type: "button", "data-tree": run.id, text: "show in tree" })));
      return el("div", { class: "exchange " + statusClass(run.status), "data-run": run.id }, parts);
    }

    bubble(side, said, who) {
      const parts = said.parts.map((part) => part.json ? el("pre", { class: "json", text: part.text })
        : el("div", { class: "text", text: part.text }));
      const cut = said.parts.some((part) => part.cut)
        ? el("div", { class: "cut", text: "… cut here: the call's details have it whole" }) : null;
      return el("div", { class: "bubble " + side, "data-call": said.call, role: "button", tabindex: "0",
        title: "Open this call's details" }, el("div", { class: "who" }, who), parts, cut);
    }

    open(bubble) {
      this.mark(bubble.dataset.call);
      this.session.openCall(bubble.dataset.call);
    }

    mark(callId) {
      for (const bubble of this.list.querySelectorAll(".bubble[data-call]")) {
        bubble.classList.toggle("selected", bubble.dataset.call === callId);
      }
    }

    onClick(event) {
      const link = event.target.closest("[data-tree]");
      if (link) {
        this.session.showView("tree");
        this.session.reveal(link.dataset.tree, { expand: true });
        return;
      }
      const bubble = event.target.closest(".bubble[data-call]");
      if (bubble && !window.getSelection().toString()) this.open(bubble); // selecting text to copy opens nothing
    }
  }

  // --- routes ---------------------------------------------------------------------------------------------
  const match = window.location.pathname.match(/^\/sessions\/([^/]+)\/?$/);
  if (match) new SessionView(decodeURIComponent(match[1])).start();
  else listPage();
})();
