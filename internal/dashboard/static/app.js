// The dashboard page: polls the JSON API under /api/ and renders it. Everything from the
// cluster is put into the page as text (textContent), never as markup.
"use strict";

const state = {
  refreshMs: 2000,
  showSystem: false,
  filter: "",
  topics: [],
  groups: [],
  selectedGroup: "",
  selectedDLQ: "",
  history: [],
  errors: {},
};

const $ = (id) => document.getElementById(id);

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") e.className = v;
    else if (k === "title") e.title = v;
    else e.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children) {
    if (c === undefined || c === null) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

// fill replaces node's children with the given ones, leaving out null and undefined.
function fill(node, ...children) {
  node.replaceChildren(...children.filter((c) => c !== null && c !== undefined));
}

function td(value, cls) {
  return el("td", { class: cls }, value);
}

const dash = "–";
const fmtInt = (n) => (n === null || n === undefined ? dash : Number(n).toLocaleString("en-US"));
const fmtRate = (n) => (n === null || n === undefined ? dash : Number(n).toLocaleString("en-US", { maximumFractionDigits: 1, minimumFractionDigits: 1 }));
const pad = (n) => String(n).padStart(2, "0");

function fmtTime(ms) {
  if (!ms) return dash;
  const d = new Date(ms);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

function fmtBytes(n) {
  if (n === null || n === undefined) return dash;
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return `${n.toFixed(i ? 1 : 0)} ${units[i]}`;
}

function replaceRows(tbody, rows, columns, emptyText) {
  if (rows.length === 0) rows = [el("tr", {}, el("td", { class: "empty", colspan: columns }, emptyText))];
  tbody.replaceChildren(...rows);
}

async function api(path, init) {
  const resp = await fetch(path, init);
  let body = null;
  try { body = await resp.json(); } catch (_) { /* not JSON: reported below */ }
  if (!resp.ok) throw new Error((body && body.error) || `${resp.status} ${resp.statusText}`);
  return body;
}

// Writes send back the token the node gives its own page (GET /api/token), which no other
// site can read. It is fetched once, and again when the node answers 403 (it restarted and
// made a new one).
let writeToken = null;

async function apiWrite(path, init) {
  for (let attempt = 0; ; attempt++) {
    if (!writeToken) writeToken = api("/api/token").catch((e) => { writeToken = null; throw e; });
    const t = await writeToken;
    const resp = await fetch(path, { ...init, headers: { ...(init.headers || {}), [t.header]: t.token } });
    let body = null;
    try { body = await resp.json(); } catch (_) { /* not JSON: reported below */ }
    if (resp.status === 403 && attempt === 0) { writeToken = null; continue; }
    if (!resp.ok) throw new Error((body && body.error) || `${resp.status} ${resp.statusText}`);
    return body;
  }
}

// ---- overview: header, cards, brokers, chart ----

async function loadOverview() {
  const o = await api("/api/overview");
  state.refreshMs = o.refreshMs || state.refreshMs;
  state.history = o.history || [];
  const clusters = Object.keys(o.clusters || {}).sort();
  $("cluster-name").textContent = clusters.length ? clusters.join(", ") : dash;
  document.title = clusters.length ? `${clusters.join(", ")} · mq dashboard` : "mq dashboard";
  const down = o.brokers.filter((b) => b.status === "down");
  $("card-brokers").textContent = fmtInt(o.brokers.length);
  $("card-down").textContent = down.length ? `${down.length} down` : "";
  document.body.dataset.historyPoints = String(state.history.length);
  let put = null, get = null;
  for (const b of o.brokers) {
    if (b.putTps !== null && b.role === "MASTER") put = (put || 0) + b.putTps;
    if (b.getTps !== null) get = (get || 0) + b.getTps;
  }
  $("card-put").textContent = fmtRate(put);
  $("card-get").textContent = fmtRate(get);
  $("footer-refresh").textContent = `refreshing every ${(state.refreshMs / 1000).toFixed(1)} s`;
  $("clear-down").hidden = !down.some((b) => !b.registered);
  replaceRows($("brokers-body"), o.brokers.map(brokerRow), 14, "no broker registered");
  $("brokers-note").textContent = down.length
    ? "A down broker that is still registered stays until the name servers drop it (it unregisters when it stops; one that died is dropped after 120 s without heartbeat); then clear it."
    : "";
  drawChart();
}

function brokerRow(b) {
  const down = b.status === "down";
  let error = b.error;
  if (down) error = `${b.error || "down"} · down since ${fmtTime(b.downSince)}, last answered ${fmtTime(b.lastSeen)}`;
  const clear = down && !b.registered
    ? el("button", { type: "button", class: "secondary small", "data-clear": b.addr }, "Clear")
    : null;
  if (clear) clear.addEventListener("click", () => clearBrokers({ addr: b.addr }));
  return el("tr", { class: down ? "down" : undefined, "data-broker": b.brokerName, "data-broker-id": b.brokerId,
    "data-addr": b.addr, "data-status": b.status, "data-registered": b.registered ? "true" : "false" },
    td(b.cluster),
    td(b.brokerName),
    td(b.brokerId, "num"),
    el("td", {}, el("span", { class: `badge ${b.role === "MASTER" ? "master" : "slave"}` }, b.role)),
    el("td", {}, el("span", { class: `badge ${down ? "down" : "up"}` }, down ? "down" : "up")),
    td(b.addr, "mono"),
    error ? el("td", { class: "error", colspan: 7 }, error) : td(b.version || dash),
    ...(error ? [] : [
      td(fmtRate(b.putTps), "num"),
      td(fmtRate(b.getTps), "num"),
      td(fmtInt(b.putTotal), "num"),
      td(fmtInt(b.getTotal), "num"),
      td(fmtBytes(b.storeBytes), "num"),
      td(b.diskRatio === null ? dash : `${(b.diskRatio * 100).toFixed(1)} %`, "num"),
    ]),
    el("td", {}, clear));
}

async function clearBrokers(what) {
  const result = $("clear-result");
  try {
    const r = await apiWrite("/api/brokers/clear", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify(what),
    });
    result.className = "result ok";
    result.textContent = r.cleared.length ? `Cleared ${r.cleared.join(", ")}` : "Nothing to clear";
  } catch (e) {
    result.className = "result bad";
    result.textContent = `Clear failed: ${e.message}`;
  }
  await Promise.all([loadOverview(), loadHA()]).catch(() => {});
}

// ---- high availability ----

async function loadHA() {
  const h = await api("/api/ha");
  const rows = [];
  for (const g of h.groups) {
    const parts = [`${g.cluster} / ${g.brokerName}`];
    if (g.maxLagBytes !== null) parts.push(`slaves at most ${fmtBytes(g.maxLagBytes)} behind`);
    if (g.controller) {
      const c = g.controller;
      parts.push(`master ${c.masterBrokerId}, epoch ${c.masterEpoch}`, `SyncStateSet {${c.syncStateSet.join(", ")}} (epoch ${c.syncStateSetEpoch})`);
    }
    rows.push(el("tr", { class: "group-head", "data-ha-group": g.brokerName }, el("td", { colspan: 9 }, parts.join(" · "))));
    for (const m of g.members) {
      const down = m.status === "down";
      const yesNo = (v, yes, no, cls) => (v === null ? dash : el("span", { class: `badge ${v ? cls[0] : cls[1]}` }, v ? yes : no));
      rows.push(el("tr", { class: down ? "down" : undefined, "data-ha-broker": g.brokerName, "data-ha-id": m.brokerId,
        "data-addr": m.addr, "data-status": m.status, "data-lag": m.lagBytes === null ? "" : m.lagBytes },
        td(""),
        td(m.brokerId, "num"),
        el("td", {}, el("span", { class: `badge ${m.role === "MASTER" ? "master" : "slave"}` }, m.role)),
        el("td", { title: m.error || "" }, el("span", { class: `badge ${down ? "down" : "up"}` }, down ? "down" : "up")),
        td(m.addr, "mono"),
        td(fmtInt(m.maxOffset), "num"),
        td(m.role === "MASTER" ? dash : (m.lagBytes === null ? dash : fmtBytes(m.lagBytes)), `num${m.lagBytes > 0 ? " lag-bad" : ""}`),
        el("td", {}, yesNo(m.inSync, "in sync", "not in sync", ["insync", "outsync"])),
        el("td", {}, yesNo(m.alive, "alive", "not alive", ["up", "down"]))));
    }
  }
  replaceRows($("ha-body"), rows, 9, "no broker group");
  $("ha-note").textContent = h.controllerError ? `Controller: ${h.controllerError}`
    : h.controller ? `Controller mode: the SyncStateSet as the controller leader at ${h.controller} keeps it.`
      : "Lag is the master's CommitLog max offset less the slave's, from the same sample.";
}

// ---- throughput chart, drawn on a canvas ----

function niceMax(v) {
  if (v <= 0) return 10;
  const p = Math.pow(10, Math.floor(Math.log10(v)));
  for (const m of [1, 2, 2.5, 5, 10]) if (m * p >= v) return m * p;
  return 10 * p;
}

function drawChart() {
  const canvas = $("chart");
  const cssW = canvas.clientWidth, cssH = canvas.clientHeight;
  if (!cssW || !cssH) return;
  const dpr = window.devicePixelRatio || 1;
  canvas.width = Math.round(cssW * dpr);
  canvas.height = Math.round(cssH * dpr);
  const g = canvas.getContext("2d");
  g.setTransform(dpr, 0, 0, dpr, 0, 0);
  g.clearRect(0, 0, cssW, cssH);
  const css = getComputedStyle(document.documentElement);
  const colors = { put: css.getPropertyValue("--put").trim(), get: css.getPropertyValue("--get").trim(),
    line: css.getPropertyValue("--line").trim(), muted: css.getPropertyValue("--muted").trim() };
  const left = 56, right = 12, top = 10, bottom = 24;
  const w = cssW - left - right, h = cssH - top - bottom;
  // The window grows with the history up to five minutes, so a fresh page is not a sliver.
  const now = Date.now(), oldest = state.history.length ? state.history[0].t : now;
  const span = Math.min(5 * 60 * 1000, Math.max(30 * 1000, now - oldest)), from = now - span;
  const pts = state.history.filter((p) => p.t >= from);
  const yMax = niceMax(Math.max(0, ...pts.map((p) => Math.max(p.put, p.get))));
  const x = (t) => left + ((t - from) / span) * w;
  const y = (v) => top + h - (v / yMax) * h;

  g.font = "11px system-ui, sans-serif";
  g.lineWidth = 1;
  g.strokeStyle = colors.line;
  g.fillStyle = colors.muted;
  g.textAlign = "right";
  g.textBaseline = "middle";
  for (let i = 0; i <= 4; i++) {
    const v = (yMax / 4) * i, yy = Math.round(y(v)) + 0.5;
    g.beginPath(); g.moveTo(left, yy); g.lineTo(left + w, yy); g.stroke();
    g.fillText(v.toLocaleString("en-US", { maximumFractionDigits: 1 }), left - 8, yy);
  }
  g.textAlign = "center";
  g.textBaseline = "top";
  const step = [5, 10, 15, 30, 60].find((s) => span / (s * 1000) <= 6) * 1000;
  for (let ago = 0; ago <= span; ago += step) {
    const label = ago === 0 ? "now" : ago % 60000 === 0 ? `-${ago / 60000} min` : `-${ago / 1000} s`;
    g.fillText(label, Math.min(Math.max(x(now - ago), left + 16), left + w - 12), top + h + 7);
  }
  if (pts.length === 0) {
    g.textBaseline = "middle";
    g.fillText("waiting for samples…", left + w / 2, top + h / 2);
    return;
  }
  for (const key of ["get", "put"]) {
    g.beginPath();
    pts.forEach((p, i) => (i ? g.lineTo(x(p.t), y(p[key])) : g.moveTo(x(p.t), y(p[key]))));
    g.strokeStyle = colors[key];
    g.lineWidth = 2;
    g.lineJoin = "round";
    g.stroke();
    g.lineTo(x(pts[pts.length - 1].t), y(0));
    g.lineTo(x(pts[0].t), y(0));
    g.closePath();
    g.globalAlpha = 0.08;
    g.fillStyle = colors[key];
    g.fill();
    g.globalAlpha = 1;
  }
}

// ---- topics ----

async function loadTopics() {
  const t = await api(`/api/topics${state.showSystem ? "?system=1" : ""}`);
  state.topics = t.topics;
  $("card-topics").textContent = fmtInt(t.topics.filter((x) => !x.system).length);
  const notes = [];
  if (t.hidden) notes.push(`${t.hidden} system topics hidden.`);
  if (t.truncated) notes.push(`Showing the first ${t.topics.length} of ${t.total} topics.`);
  $("topics-note").textContent = notes.join(" ");
  renderTopics();
}

function renderTopics() {
  const f = state.filter.toLowerCase();
  const rows = state.topics.filter((t) => !f || t.topic.toLowerCase().includes(f)).map((t) =>
    el("tr", { "data-topic": t.topic, "data-messages": t.messages, "data-system": t.system ? "true" : "false" },
      el("td", {}, t.topic, t.system ? el("span", { class: "badge system" }, "system") : null),
      ...(t.error ? [el("td", { class: "error", colspan: 6 }, t.error)] : [
        td(fmtInt(t.writeQueues), "num"),
        td(fmtInt(t.readQueues), "num"),
        td(t.perm || dash, "mono"),
        td(fmtInt(t.brokers), "num"),
        td(fmtInt(t.messages), "num"),
        td(fmtTime(t.lastPut)),
      ])));
  replaceRows($("topics-body"), rows, 7, f ? "no topic matches the filter" : "no topics");
}

// ---- consumer groups ----

async function loadGroups() {
  const g = await api("/api/groups");
  state.groups = g.groups;
  $("card-groups").textContent = fmtInt(g.groups.length);
  $("card-lag").textContent = fmtInt(g.groups.reduce((s, x) => s + x.lag, 0));
  const maxLag = Math.max(1, ...g.groups.map((x) => x.lag));
  replaceRows($("groups-body"), g.groups.map((x) => {
    const subs = x.subscriptions.filter((s) => !s.topic.startsWith("%RETRY%")).map((s) => `${s.topic} (${s.expression || "*"})`).join(", ");
    const row = el("tr", { class: `clickable${x.group === state.selectedGroup ? " selected" : ""}`,
      "data-group": x.group, "data-lag": x.lag, "data-members": x.members.length },
      el("td", {}, x.group),
      el("td", {}, el("span", { class: `badge ${x.online ? "online" : "offline"}` }, x.online ? "online" : "offline")),
      td(fmtInt(x.members.length), "num"),
      td([x.consumeType, x.messageModel].filter(Boolean).join(" · ") || dash),
      x.error ? el("td", { class: "error" }, x.error) : td(subs || dash),
      td(fmtRate(x.tps), "num"),
      el("td", { class: `num${x.lag > 0 ? " lag-bad" : ""}` },
        el("span", { class: `bar${x.lag > 0 ? " high" : ""}` }, lagBar(x.lag, maxLag)), fmtInt(x.lag)));
    row.addEventListener("click", () => selectGroup(x.group));
    return row;
  }), 7, "no consumer groups yet");
  renderGroupDetail();
}

function lagBar(lag, maxLag) {
  const s = el("span");
  s.style.width = `${Math.round((lag / maxLag) * 100)}%`;
  return s;
}

function selectGroup(name) {
  state.selectedGroup = name;
  for (const tr of $("groups-body").querySelectorAll("tr[data-group]")) {
    tr.classList.toggle("selected", tr.dataset.group === name);
  }
  if (!$("reset-time").value) $("reset-time").value = localInputValue(Date.now() - 60 * 60 * 1000);
  $("reset-result").textContent = "";
  $("reset-result").className = "result";
  renderGroupDetail();
  $("group-detail").scrollIntoView({ block: "nearest" });
}

function localInputValue(ms) {
  const d = new Date(ms);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

function renderGroupDetail() {
  const detail = $("group-detail");
  const g = state.groups.find((x) => x.group === state.selectedGroup);
  if (!g) { detail.hidden = true; return; }
  detail.hidden = false;
  detail.dataset.group = g.group;
  detail.dataset.lag = g.lag;
  $("detail-name").textContent = g.group;
  replaceRows($("members-body"), g.members.map((m) => el("tr", { "data-client": m.clientId },
    td(m.clientId, "mono wrap"), td(m.clientAddr, "mono"), td(m.language), td(m.version, "num"))), 4, "no member online");
  replaceRows($("queues-body"), g.queues.map((q) => el("tr", { "data-queue": `${q.topic}/${q.brokerName}/${q.queueId}`, "data-lag": q.lag },
    td(q.topic), td(q.brokerName), td(q.queueId, "num"), td(fmtInt(q.brokerOffset), "num"),
    td(fmtInt(q.consumerOffset), "num"), el("td", { class: `num${q.lag > 0 ? " lag-bad" : ""}` }, fmtInt(q.lag)),
    td(fmtTime(q.lastTimestamp)))), 7, g.error || "no consumed queues");
  const topics = [...new Set([...g.subscriptions.map((s) => s.topic), ...g.queues.map((q) => q.topic)])]
    .filter((t) => !t.startsWith("%RETRY%")).sort();
  const select = $("reset-topic");
  const have = [...select.options].map((o) => o.value);
  if (select.dataset.group !== g.group || have.join("\n") !== topics.join("\n")) {
    const keep = select.dataset.group === g.group ? select.value : "";
    select.replaceChildren(...topics.map((t) => el("option", { value: t }, t)));
    if (topics.includes(keep)) select.value = keep;
    select.dataset.group = g.group;
  }
}

async function submitReset(ev) {
  ev.preventDefault();
  const result = $("reset-result");
  const when = new Date($("reset-time").value).getTime();
  if (!state.selectedGroup || !$("reset-topic").value || Number.isNaN(when)) {
    result.className = "result bad";
    result.textContent = "Choose a topic and a time.";
    return;
  }
  const button = $("reset-submit");
  button.disabled = true;
  result.className = "result";
  result.textContent = "Resetting…";
  try {
    const r = await apiWrite("/api/reset", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ group: state.selectedGroup, topic: $("reset-topic").value, timestamp: when, force: $("reset-force").checked }),
    });
    result.className = "result ok";
    result.dataset.queues = r.offsets.length;
    result.replaceChildren(el("div", {}, `Reset ${r.offsets.length} queues of ${$("reset-topic").value} to ${fmtTime(when)}:`),
      el("table", { class: "compact" },
        el("thead", {}, el("tr", {}, el("th", {}, "Broker"), el("th", { class: "num" }, "Queue"), el("th", { class: "num" }, "Offset"))),
        el("tbody", {}, ...r.offsets.map((o) => el("tr", { "data-queue": `${o.topic}/${o.brokerName}/${o.queueId}`, "data-offset": o.offset },
          td(o.brokerName), td(o.queueId, "num"), td(fmtInt(o.offset), "num"))))));
  } catch (e) {
    result.className = "result bad";
    result.textContent = `Reset failed: ${e.message}`;
  } finally {
    button.disabled = false;
  }
}

// ---- message lookup ----

async function submitLookup(ev) {
  ev.preventDefault();
  const out = $("msg-result");
  const topic = $("msg-topic").value.trim(), id = $("msg-id").value.trim(), key = $("msg-key").value;
  const q = new URLSearchParams();
  if (topic) q.set("topic", topic);
  if (id) q.set("id", id); else if (key) q.set("key", key);
  out.dataset.state = "loading";
  out.replaceChildren(el("p", { class: "muted" }, "Searching…"));
  try {
    const r = await api(`/api/message?${q}`);
    out.replaceChildren(...r.messages.map(renderMessage));
    out.dataset.state = "found";
  } catch (e) {
    out.replaceChildren(el("p", { class: "bad" }, e.message));
    out.dataset.state = "error";
  }
}

function renderMessage(m) {
  const fields = [
    ["Message ID", m.msgId], ["Offset ID", m.offsetMsgId], ["Topic", m.topic], ["Tags", m.tags || dash],
    ["Keys", m.keys.join(" ") || dash], ["Queue", `${m.brokerName} / ${m.queueId}`], ["Queue offset", m.queueOffset],
    ["Commit log offset", m.commitLogOffset], ["Stored", fmtTime(m.storeTime)], ["Born", fmtTime(m.bornTime)],
    ["Born host", m.bornHost || dash], ["Store host", m.storeHost || dash], ["Reconsumed", m.reconsumeTimes],
    ["Body size", `${fmtInt(m.bodySize)} bytes${m.bodyEncoding === "base64" ? " (binary, base64)" : ""}`],
  ];
  const dl = el("dl");
  for (const [k, v] of fields) dl.append(el("dt", {}, k), el("dd", {}, v));
  const props = Object.keys(m.properties).sort();
  return el("article", { class: "message", "data-msg-id": m.msgId, "data-topic": m.topic },
    el("h3", {}, m.msgId),
    dl,
    el("h4", {}, "Properties"),
    el("table", { class: "compact props" }, el("tbody", {}, ...props.map((k) =>
      el("tr", { "data-property": k }, td(k, "mono"), td(m.properties[k], "mono"))))),
    el("h4", {}, `Body${m.bodyTruncated ? " (first 64 KiB)" : ""}`),
    el("pre", { class: "msg-body", "data-encoding": m.bodyEncoding }, m.body));
}

// ---- producers ----

async function submitProducers(ev) {
  ev.preventDefault();
  const out = $("prod-result");
  const q = new URLSearchParams({ group: $("prod-group").value.trim(), topic: $("prod-topic").value.trim() });
  out.dataset.state = "loading";
  out.replaceChildren(el("p", { class: "muted" }, "Asking the brokers…"));
  try {
    const r = await api(`/api/producers?${q}`);
    fill(out, el("table", { class: "compact" },
      el("thead", {}, el("tr", {}, el("th", {}, "Client ID"), el("th", {}, "Address"), el("th", {}, "Language"), el("th", { class: "num" }, "Version"))),
      el("tbody", {}, ...r.connections.map((c) => el("tr", { "data-producer": c.clientId },
        td(c.clientId, "mono wrap"), td(c.clientAddr, "mono"), td(c.language), td(c.version, "num"))))),
      r.truncated ? el("p", { class: "note" }, "More connections than shown.") : null);
    out.dataset.state = "found";
  } catch (e) {
    out.replaceChildren(el("p", { class: "bad" }, e.message));
    out.dataset.state = "error";
  }
}

// ---- browse a topic by time ----

function messageRows(msgs, extra) {
  return msgs.map((m) => {
    const row = el("tr", { class: "clickable", "data-msg-id": m.msgId, "data-offset-msg-id": m.offsetMsgId, "data-topic": m.topic },
      td(m.msgId, "mono"), ...extra(m));
    row.addEventListener("click", (ev) => {
      if (ev.target.closest("button")) return;
      showMessage(m.topic, m.offsetMsgId);
    });
    return row;
  });
}

// showMessage opens a listed message in the lookup above, by its offset message id.
function showMessage(topic, offsetMsgId) {
  $("msg-topic").value = topic;
  $("msg-id").value = offsetMsgId;
  $("msg-key").value = "";
  $("lookup").scrollIntoView({ block: "start" });
  submitLookup(new Event("submit"));
}

async function submitBrowse(ev) {
  ev.preventDefault();
  const out = $("browse-result");
  const begin = new Date($("browse-begin").value).getTime();
  const end = $("browse-end").value ? new Date($("browse-end").value).getTime() : null;
  if (Number.isNaN(begin) || Number.isNaN(end)) {
    out.replaceChildren(el("p", { class: "bad" }, "Choose a time to browse from."));
    return;
  }
  const q = new URLSearchParams({ topic: $("browse-topic").value.trim(), begin: String(begin), max: $("browse-max").value || "32" });
  if (end !== null) q.set("end", String(end));
  out.dataset.state = "loading";
  out.replaceChildren(el("p", { class: "muted" }, "Reading the queues…"));
  try {
    const r = await api(`/api/browse?${q}`);
    const notes = [];
    if (r.truncated) notes.push(`The first ${r.messages.length} of the window: narrow it, or browse from the last one's time.`);
    if (r.queuesTruncated) notes.push(`Only the first 64 of the topic's ${r.queues} queues were read.`);
    notes.push(...r.errors);
    fill(out, el("table", { class: "compact" },
      el("thead", {}, el("tr", {}, ...["Message ID", "Tags", "Keys", "Queue", "Offset", "Stored", "Size"].map((h) => el("th", {}, h)))),
      el("tbody", {}, ...(r.messages.length ? messageRows(r.messages, (m) => [td(m.tags || dash), td(m.keys.join(" ") || dash),
        td(`${m.brokerName} / ${m.queueId}`), td(fmtInt(m.queueOffset), "num"), td(fmtTime(m.storeTime)), td(fmtInt(m.bodySize), "num")])
        : [el("tr", {}, el("td", { class: "empty", colspan: 7 }, "no message stored in that window"))]))),
    ...notes.map((n) => el("p", { class: "note" }, n)));
    out.dataset.state = "found";
    out.dataset.count = r.messages.length;
  } catch (e) {
    out.replaceChildren(el("p", { class: "bad" }, e.message));
    out.dataset.state = "error";
  }
}

// ---- dead letters ----

async function loadDLQ() {
  const d = await api("/api/dlq");
  replaceRows($("dlq-body"), d.groups.map((g) => {
    const row = el("tr", { class: `clickable${g.group === state.selectedDLQ ? " selected" : ""}`, "data-dlq-group": g.group, "data-messages": g.messages },
      td(g.group), td(g.topic, "mono"),
      g.error ? el("td", { class: "error", colspan: 2 }, g.error) : td(fmtInt(g.messages), "num"),
      g.error ? null : td(fmtTime(g.lastPut)));
    row.addEventListener("click", () => selectDLQ(g.group));
    return row;
  }), 4, "no dead letters: no group has a dead-letter topic");
}

async function selectDLQ(group) {
  state.selectedDLQ = group;
  for (const tr of $("dlq-body").querySelectorAll("tr[data-dlq-group]")) tr.classList.toggle("selected", tr.dataset.dlqGroup === group);
  const detail = $("dlq-detail");
  detail.hidden = false;
  detail.dataset.group = group;
  $("dlq-name").textContent = group;
  $("dlq-result").textContent = "";
  $("dlq-result").className = "result";
  try {
    const r = await api(`/api/dlq?${new URLSearchParams({ group, max: "128" })}`);
    replaceRows($("dlq-messages"), messageRows(r.messages, (m) => {
      const resend = el("button", { type: "button", class: "small", "data-resend": m.offsetMsgId }, "Re-send");
      resend.addEventListener("click", () => resendDLQ(group, m, resend));
      return [td(m.originTopic || dash), td(m.tags || dash), td(m.keys.join(" ") || dash), td(m.reconsumeTimes, "num"),
        td(fmtTime(m.storeTime)), td(fmtInt(m.bodySize), "num"), el("td", {}, resend)];
    }), 8, "no dead letter in this group's topic");
    $("dlq-note").textContent = [r.truncated ? `The oldest ${r.messages.length} dead letters.` : "", ...r.errors].filter(Boolean).join(" ");
    detail.dataset.state = "loaded";
  } catch (e) {
    replaceRows($("dlq-messages"), [], 8, e.message);
    detail.dataset.state = "error";
  }
}

async function resendDLQ(group, m, button) {
  const result = $("dlq-result");
  button.disabled = true;
  result.className = "result";
  result.textContent = "Re-sending…";
  try {
    const r = await apiWrite("/api/dlq/resend", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ group, msgId: m.offsetMsgId }),
    });
    result.className = `result ${r.consumeResult === "CR_SUCCESS" ? "ok" : "bad"}`;
    result.dataset.result = r.consumeResult;
    result.dataset.msgId = m.msgId;
    fill(result, el("div", {}, `${m.msgId} consumed by ${r.clientId}: ${r.consumeResult} in ${r.spentMs} ms`),
      r.remark ? el("div", { class: "muted" }, r.remark) : null);
  } catch (e) {
    result.className = "result bad";
    result.dataset.result = "error";
    result.textContent = `Re-send failed: ${e.message}`;
  } finally {
    button.disabled = false;
  }
}

// ---- message trace ----

async function submitTrace(ev) {
  ev.preventDefault();
  const out = $("trace-result");
  const q = new URLSearchParams({ id: $("trace-id").value.trim() });
  if ($("trace-topic").value.trim()) q.set("topic", $("trace-topic").value.trim());
  out.dataset.state = "loading";
  out.replaceChildren(el("p", { class: "muted" }, "Searching the trace topic…"));
  try {
    const r = await api(`/api/trace?${q}`);
    fill(out, el("table", { class: "compact" },
      el("thead", {}, el("tr", {}, ...["Type", "Group", "Client", "Time", "Cost", "Status", "Topic", "Tags", "Keys"].map((h) => el("th", {}, h)))),
      el("tbody", {}, ...r.records.map((x) => el("tr", { "data-trace-type": x.type, "data-group": x.group },
        td(x.type), td(x.group), td(x.clientHost, "mono"), td(fmtTime(x.time)), td(x.type === "SubBefore" ? dash : `${x.costMs} ms`, "num"),
        el("td", {}, x.type === "SubBefore" ? dash : el("span", { class: `badge ${x.success ? "up" : "down"}` }, x.success ? "success" : "failed")),
        td(x.topic || dash), td(x.tags || dash), td(x.keys || dash))))),
    r.truncated ? el("p", { class: "note" }, "More records than shown.") : null,
    r.undecodable ? el("p", { class: "note" }, `${r.undecodable} trace messages held a record that could not be read.`) : null);
    out.dataset.state = "found";
  } catch (e) {
    out.replaceChildren(el("p", { class: "bad" }, e.message));
    out.dataset.state = "error";
  }
}

// ---- polling ----

function setStatus() {
  const errs = Object.entries(state.errors).filter(([, v]) => v);
  $("status-dot").className = `dot ${errs.length ? "bad" : "ok"}`;
  $("status-text").textContent = errs.length ? `${errs[0][0]}: ${errs[0][1]}` : `updated ${fmtTime(Date.now()).slice(11)}`;
  $("status-text").title = errs.map(([k, v]) => `${k}: ${v}`).join("\n");
}

async function poll() {
  const parts = { overview: loadOverview, ha: loadHA, topics: loadTopics, groups: loadGroups, dlq: loadDLQ };
  await Promise.all(Object.entries(parts).map(async ([name, load]) => {
    try { await load(); state.errors[name] = ""; } catch (e) { state.errors[name] = e.message; }
  }));
  setStatus();
  document.body.dataset.polls = String(Number(document.body.dataset.polls || 0) + 1);
  setTimeout(poll, state.refreshMs);
}

document.addEventListener("DOMContentLoaded", () => {
  $("show-system").addEventListener("change", (e) => { state.showSystem = e.target.checked; loadTopics().catch(() => {}); });
  $("topic-filter").addEventListener("input", (e) => { state.filter = e.target.value; renderTopics(); });
  $("reset-form").addEventListener("submit", submitReset);
  $("msg-form").addEventListener("submit", submitLookup);
  $("prod-form").addEventListener("submit", submitProducers);
  $("browse-form").addEventListener("submit", submitBrowse);
  $("trace-form").addEventListener("submit", submitTrace);
  $("dlq-refresh").addEventListener("click", () => {
    loadDLQ().catch(() => {});
    if (state.selectedDLQ) selectDLQ(state.selectedDLQ);
  });
  $("clear-down").addEventListener("click", () => clearBrokers({ all: true }));
  if (!$("browse-begin").value) $("browse-begin").value = localInputValue(Date.now() - 60 * 60 * 1000);
  window.addEventListener("resize", drawChart);
  poll();
});
