// tierlog console: plain JavaScript over the JSON API (docs/api.md) and the
// console's history routes (/ui/api/, docs/console.md). No build step.
"use strict";

const TOKEN_KEY = "tierlog.token";
const REFRESH_MS = 10000; // pages that show live state re-read it this often
const PAGE_RECORDS = 50;

// ---- DOM helpers: text always goes in as text, never as HTML ----
function h(tag, props, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(props || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else if (k === "text") e.textContent = v;
    else if (k in e && k !== "list" && k !== "form") e[k] = v;
    else e.setAttribute(k, v === true ? "" : v);
  }
  for (const k of kids.flat()) {
    if (k === undefined || k === null || k === false) continue;
    e.append(k instanceof Node ? k : document.createTextNode(String(k)));
  }
  return e;
}
const $ = (sel, root) => (root || document).querySelector(sel);
function clear(e, ...kids) { e.replaceChildren(...kids.flat().filter((k) => k !== null && k !== undefined)); return e; }
function msg(kind, text) { return h("div", { className: "msg " + kind, text }); }
function table(cols, rows, opts) {
  const o = opts || {};
  return h("div", { className: "scroll" }, h("table", { id: o.id },
    h("thead", {}, h("tr", {}, cols.map((c) => h("th", { className: c.num ? "num" : "", text: c.t })))),
    h("tbody", {}, rows.length ? rows : h("tr", {}, h("td", { colSpan: cols.length, className: "muted", text: o.empty || "none" })))));
}
function kv(pairs) { return h("div", { className: "card kv" }, pairs.flatMap(([k, v]) => [h("div", { text: k }), h("div", { text: String(v) })])); }
function td(v, num) { return h("td", { className: num ? "num" : "" }, v instanceof Node ? v : String(v)); }

// ---- formatting ----
function fmtBytes(n) {
  if (n === undefined || n === null) return "—";
  const u = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0, v = n;
  while (Math.abs(v) >= 1024 && i < u.length - 1) { v /= 1024; i++; }
  return (i ? v.toFixed(v < 10 ? 2 : 1) : v) + " " + u[i];
}
function fmtNum(n) { return n === undefined || n === null ? "—" : Number(n).toLocaleString("en-US"); }
function fmtMs(ms) {
  if (ms === -1) return "forever";
  const units = [["d", 86400000], ["h", 3600000], ["min", 60000], ["s", 1000]];
  for (const [u, d] of units) if (ms >= d && ms % d === 0) return ms / d + " " + u;
  return ms + " ms";
}
function pad(n, w) { return String(n).padStart(w || 2, "0"); }
function fmtTime(ms) {
  if (ms === null || ms === undefined) return "—";
  const d = new Date(ms);
  return d.getFullYear() + "-" + pad(d.getMonth() + 1) + "-" + pad(d.getDate()) + " " +
    pad(d.getHours()) + ":" + pad(d.getMinutes()) + ":" + pad(d.getSeconds()) + "." + pad(d.getMilliseconds(), 3);
}
function enc(s) { return encodeURIComponent(s); }

// ---- bytes and their renderings ----
function b64ToBytes(s) { const b = atob(s); const out = new Uint8Array(b.length); for (let i = 0; i < b.length; i++) out[i] = b.charCodeAt(i); return out; }
const utf8 = new TextDecoder("utf-8", { fatal: true });
function render(b64, format) {
  if (b64 === null || b64 === undefined) return h("span", { className: "muted", text: "null" });
  const bytes = b64ToBytes(b64);
  const hex = () => Array.from(bytes, (x) => x.toString(16).padStart(2, "0")).join(" ");
  if (format === "base64") return h("pre", { text: b64 });
  if (format === "hex") return h("pre", { text: hex() });
  let text;
  try { text = utf8.decode(bytes); } catch (e) { return h("pre", { title: "not UTF-8: shown as hex", text: "0x " + hex() }); }
  if (format === "json") {
    try { return h("pre", { text: JSON.stringify(JSON.parse(text), null, 2) }); } catch (e) { /* not JSON: as text */ }
  }
  return h("pre", { text });
}

// ---- the API ----
let requestCount = 0; // requests this page made since it was shown (docs/console.md)
function token() { return sessionStorage.getItem(TOKEN_KEY) || ""; }
function headers(extra) {
  const hd = Object.assign({ Accept: "application/json" }, extra || {});
  if (token()) hd.Authorization = "Bearer " + token();
  return hd;
}
class APIError extends Error {
  constructor(status, body) {
    super((body && body.error && body.error.message) || "HTTP " + status);
    this.status = status; this.code = body && body.error && body.error.code; this.body = body;
  }
}
async function api(method, path, body) {
  requestCount++;
  const init = { method, headers: headers(body === undefined ? {} : { "Content-Type": "application/json" }) };
  if (body !== undefined) init.body = JSON.stringify(body);
  const r = await fetch(path, init);
  if (r.status === 204) return null;
  let j = null;
  try { j = await r.json(); } catch (e) { /* no JSON body */ }
  if (!r.ok) throw new APIError(r.status, j);
  return j;
}
const get = (p) => api("GET", p);
// history: the console's own routes; null when this server keeps none.
async function history(p) {
  try { return await get("/ui/api/" + p); } catch (e) { if (e.status === 404) return null; throw e; }
}
function errMsg(e) {
  const hint = e.status === 401 ? " Enter an access token in the header." : e.status === 403 ? " The access token's scope does not cover this." : "";
  return msg("err", (e.code ? e.code + ": " : "") + e.message + hint);
}

// ---- confirmation ----
function confirmDo(title, text, word) {
  const d = $("#confirm");
  $("#confirm-title").textContent = title;
  $("#confirm-text").textContent = text;
  const row = $("#confirm-type-row"), input = $("#confirm-input"), ok = $("#confirm-ok");
  row.hidden = !word; input.value = "";
  $("#confirm-word").textContent = word || "";
  ok.disabled = !!word;
  input.oninput = () => { ok.disabled = input.value !== word; };
  return new Promise((resolve) => {
    d.onclose = () => resolve(d.returnValue === "ok");
    d.returnValue = "";
    d.showModal();
    (word ? input : ok).focus();
  });
}

// ---- charts (uPlot) ----
const palette = ["#2f6fde", "#e0672b", "#1f8a4c", "#a33ea1", "#c4342d", "#0f8b8d", "#b7791f", "#5a6acf", "#7a7a7a", "#d6457f"];
const charts = [];
function chart(title, id, times, series, fmt) {
  const box = h("div", { className: "chart", id }, h("h3", { text: title }));
  if (!times.length || !series.length) { box.append(h("div", { className: "empty", text: "no samples yet: the server samples every 10 s" })); return box; }
  const opts = {
    width: 400, height: 200,
    legend: { live: true },
    scales: { x: { time: true } },
    axes: [{}, { size: 70, values: (u, vals) => vals.map((v) => (fmt ? fmt(v) : fmtNum(v))) }],
    series: [{}].concat(series.map((s, i) => ({ label: s.label, stroke: palette[i % palette.length], width: 1.5, spanGaps: false,
      value: (u, v) => (v === null ? "—" : fmt ? fmt(v) : fmtNum(v)) }))),
  };
  const data = [times.map((t) => t / 1000)].concat(series.map((s) => s.values));
  // Size to the box once it is in the page.
  requestAnimationFrame(() => {
    if (!box.isConnected) return;
    opts.width = Math.max(box.clientWidth - 16, 200);
    const u = new uPlot(opts, data, box);
    charts.push({ u, box });
  });
  return box;
}
window.addEventListener("resize", () => { for (const c of charts) c.u.setSize({ width: Math.max(c.box.clientWidth - 16, 200), height: 200 }); });
function perSecond(v, intervalMs) { return v === null ? null : Math.round((v * 1000 / intervalMs) * 100) / 100; }

// ---- router ----
let cleanup = [];
function onLeave(f) { cleanup.push(f); }
function every(ms, f) { const t = setInterval(f, ms); onLeave(() => clearInterval(t)); }
const routes = [
  [/^#\/topics\/([^/]+)\/partitions\/(\d+)$/, (m) => pageRecords(decodeURIComponent(m[1]), Number(m[2])), "topics"],
  [/^#\/topics\/([^/]+)$/, (m) => pageTopic(decodeURIComponent(m[1])), "topics"],
  [/^#\/groups\/([^/]+)$/, (m) => pageGroup(decodeURIComponent(m[1])), "groups"],
  [/^#\/groups$/, () => pageGroups(), "groups"],
  [/^#\/subscriptions$/, () => pageSubscriptions(), "subscriptions"],
  [/^#\/server$/, () => pageServer(), "server"],
  [/^#\/topics$/, () => pageTopics(), "topics"],
];
function route() {
  for (const f of cleanup) f();
  cleanup = []; charts.length = 0; requestCount = 0;
  const hash = location.hash || "#/topics";
  for (const [re, page, nav] of routes) {
    const m = hash.match(re);
    if (!m) continue;
    for (const a of document.querySelectorAll("header nav a")) a.classList.toggle("active", a.dataset.nav === nav);
    clear($("#main"));
    page(m).catch((e) => $("#main").append(errMsg(e)));
    return;
  }
  location.hash = "#/topics";
}
window.addEventListener("hashchange", route);

// A page's live part: refresh() fills box, again every REFRESH_MS; the
// page's forms stay as they are.
function live(box, refresh) {
  const run = async () => {
    try { await refresh(box); box.dataset.loaded = String(Date.now()); } catch (e) { clear(box, errMsg(e)); }
  };
  every(REFRESH_MS, run);
  return run();
}

// ---- pages ----
async function pageTopics() {
  const main = $("#main");
  const data = h("div", { id: "topics-data" });
  const f = h("form", { className: "inline card", id: "create-topic" },
    h("label", {}, "Name", h("input", { name: "name", required: true, pattern: "[A-Za-z0-9._-]{1,249}", placeholder: "orders" })),
    h("label", {}, "Partitions", h("input", { name: "partitions", type: "number", min: 1, max: 10000, value: 1, style: "width:7em" })),
    h("label", {}, "Retention", h("select", { name: "retention_ms" },
      h("option", { value: "604800000", text: "7 days" }), h("option", { value: "86400000", text: "1 day" }),
      h("option", { value: "3600000", text: "1 hour" }), h("option", { value: "-1", text: "forever" }))),
    h("label", {}, "Timestamps", h("select", { name: "timestamp_type" },
      h("option", { value: "append", text: "append (server)" }), h("option", { value: "create", text: "create (producer)" }))),
    h("button", { className: "primary", type: "submit", id: "create-topic-submit", text: "Create topic" }),
    h("div", { id: "create-topic-msg", style: "flex-basis:100%" }));
  f.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const body = { name: f.name.value.trim(), partitions: Number(f.partitions.value), retention_ms: Number(f.retention_ms.value), timestamp_type: f.timestamp_type.value };
    const out = $("#create-topic-msg");
    if (!(await confirmDo("Create topic " + body.name + "?", body.partitions + " partition(s), retention " + fmtMs(body.retention_ms) + ", " + body.timestamp_type + " timestamps."))) return;
    try { await api("POST", "/v1/topics", body); clear(out, msg("ok", "Created topic " + body.name + ".")); f.reset(); await refresh(data); } catch (e) { clear(out, errMsg(e)); }
  });
  const refresh = async (box) => {
    const [list, tiers] = await Promise.all([get("/v1/topics"), history("tiers")]);
    const sizes = new Map(((tiers && tiers.topics) || []).map((t) => [t.topic, t]));
    const rows = list.topics.map((t) => {
      const s = sizes.get(t.name);
      const sum = (k) => (s ? s.partitions.reduce((a, p) => a + p[k], 0) : null);
      const hw = sum("high_watermark"), ls = sum("log_start_offset");
      return h("tr", { className: "click", "data-topic": t.name, onclick: () => { location.hash = "#/topics/" + enc(t.name); } },
        td(h("a", { href: "#/topics/" + enc(t.name), text: t.name })), td(t.partitions, true),
        td(t.timestamp_type), td(fmtMs(t.retention_ms)), td(t.retention_bytes === -1 ? "unlimited" : fmtBytes(t.retention_bytes)),
        td(fmtNum(ls), true), td(fmtNum(hw), true), td(hw === null ? "—" : fmtNum(hw - ls), true),
        td(s ? fmtBytes(s.hot_bytes) : "—", true), td(s ? fmtBytes(s.cold_bytes) : "—", true));
    });
    clear(box, table([{ t: "topic" }, { t: "partitions", num: 1 }, { t: "timestamps" }, { t: "retention" }, { t: "retention bytes" },
      { t: "log start (sum)", num: 1 }, { t: "high watermark (sum)", num: 1 }, { t: "records", num: 1 }, { t: "hot", num: 1 }, { t: "cold", num: 1 }],
    rows, { id: "topics-table", empty: "no topics yet: create one above" }),
    h("p", { className: "muted", text: tiers ? "Offsets and sizes as the server last sampled them (" + fmtTime(tiers.t) + "); sizes are segment bytes on each tier." : "This server keeps no console history: offsets and sizes are on each topic's page." }));
  };
  clear(main, h("h1", { text: "Topics" }), f, data);
  await live(data, refresh);
}

async function pageTopic(name) {
  const main = $("#main");
  const cfgBox = h("div", { id: "topic-config" }), parts = h("div", { id: "partitions-data" });
  const out = h("div", { id: "topic-msg" });
  const edit = h("form", { className: "inline card", id: "edit-topic" },
    h("label", {}, "Partitions (grow only)", h("input", { name: "partitions", type: "number", min: 1, style: "width:8em" })),
    h("label", {}, "Retention ms (-1: forever)", h("input", { name: "retention_ms", type: "number", style: "width:11em" })),
    h("label", {}, "Retention bytes (-1)", h("input", { name: "retention_bytes", type: "number", style: "width:11em" })),
    h("label", {}, "Segment bytes", h("input", { name: "segment_bytes", type: "number", style: "width:10em" })),
    h("label", {}, "Segment ms", h("input", { name: "segment_ms", type: "number", style: "width:9em" })),
    h("button", { className: "primary", type: "submit", id: "edit-topic-submit", text: "Update" }),
    h("button", { className: "danger", type: "button", id: "delete-topic", text: "Delete topic", onclick: async () => {
      if (!(await confirmDo("Delete topic " + name + "?", "Its records on both tiers and every group's committed offsets for it are deleted. This cannot be undone.", name))) return;
      try { await api("DELETE", "/v1/topics/" + enc(name)); location.hash = "#/topics"; } catch (e) { clear(out, errMsg(e)); }
    } }));
  let topic = null;
  edit.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const patch = {};
    for (const k of ["partitions", "retention_ms", "retention_bytes", "segment_bytes", "segment_ms"]) {
      const v = Number(edit[k].value);
      if (edit[k].value !== "" && v !== topic[k]) patch[k] = v;
    }
    if (!Object.keys(patch).length) { clear(out, msg("info", "Nothing changed.")); return; }
    const what = Object.entries(patch).map(([k, v]) => k + " " + topic[k] + " → " + v).join(", ");
    if (!(await confirmDo("Update topic " + name + "?", what))) return;
    try { topic = await api("PATCH", "/v1/topics/" + enc(name), patch); clear(out, msg("ok", "Updated: " + what + ".")); await load(); } catch (e) { clear(out, errMsg(e)); }
  });
  const load = async () => {
    topic = await get("/v1/topics/" + enc(name));
    for (const k of ["partitions", "retention_ms", "retention_bytes", "segment_bytes", "segment_ms"]) edit[k].value = topic[k];
    clear(cfgBox, kv([["partitions", topic.partitions], ["timestamp type", topic.timestamp_type], ["retention", fmtMs(topic.retention_ms)],
      ["retention bytes", topic.retention_bytes === -1 ? "unlimited" : fmtBytes(topic.retention_bytes)],
      ["segment bytes", fmtBytes(topic.segment_bytes)], ["segment age", fmtMs(topic.segment_ms)],
      ["cleanup policy", topic.cleanup_policy], ["cold cache", topic.cache_enabled ? "on, read-ahead " + topic.read_ahead_segments : "off"]]));
  };
  const refresh = async (box) => {
    if (!topic) return;
    const n = Math.min(topic.partitions, 100);
    const [tiers, ...offs] = await Promise.all([history("tiers"),
      ...Array.from({ length: n }, (_, p) => get("/v1/topics/" + enc(name) + "/partitions/" + p + "/offsets"))]);
    const t = tiers && tiers.topics.find((x) => x.topic === name);
    const sz = new Map(((t && t.partitions) || []).map((p) => [p.partition, p]));
    const rows = offs.map((o, p) => {
      const s = sz.get(p);
      return h("tr", { className: "click", onclick: () => { location.hash = "#/topics/" + enc(name) + "/partitions/" + p; } },
        td(h("a", { href: "#/topics/" + enc(name) + "/partitions/" + p, text: String(p) })),
        td(fmtNum(o.log_start_offset), true), td(fmtNum(o.high_watermark), true), td(fmtNum(o.high_watermark - o.log_start_offset), true),
        td(s ? fmtBytes(s.hot_bytes) + " (" + s.hot_segments + ")" : "—", true), td(s ? fmtBytes(s.cold_bytes) + " (" + s.cold_segments + ")" : "—", true));
    });
    clear(box, table([{ t: "partition" }, { t: "log start", num: 1 }, { t: "high watermark", num: 1 }, { t: "records", num: 1 },
      { t: "hot (segments)", num: 1 }, { t: "cold (segments)", num: 1 }], rows, { id: "partitions-table" }),
    topic.partitions > n ? h("p", { className: "muted", text: "The first " + n + " of " + topic.partitions + " partitions." }) : null);
  };
  clear(main, h("div", { className: "crumbs" }, h("a", { href: "#/topics", text: "Topics" }), " / ", name),
    h("h1", { text: name }), cfgBox, h("h2", { text: "Partitions" }), parts, h("h2", { text: "Update or delete" }), edit, out);
  await load();
  await live(parts, refresh);
}
async function pageRecords(topicName, p) {
  const main = $("#main");
  const base = "/v1/topics/" + enc(topicName) + "/partitions/" + p;
  const state = { records: [], from: null, next: null, follow: null };
  const out = h("div", { id: "records-msg" }), list = h("div", { id: "records-data" });
  const ctl = h("form", { className: "inline card", id: "browse" },
    h("label", {}, "Position", h("select", { name: "mode", id: "mode" },
      h("option", { value: "newest", text: "newest first" }), h("option", { value: "offset", text: "from offset" }), h("option", { value: "time", text: "from time" }))),
    h("label", {}, "Offset", h("input", { name: "offset", id: "offset", type: "number", min: 0, style: "width:9em" })),
    h("label", {}, "Time", h("input", { name: "time", id: "time", type: "datetime-local", step: 1 })),
    h("label", {}, "Records", h("input", { name: "count", type: "number", min: 1, max: 1000, value: PAGE_RECORDS, style: "width:6em" })),
    h("label", {}, "Show as", h("select", { name: "format", id: "format" },
      h("option", { value: "text", text: "UTF-8 text" }), h("option", { value: "json", text: "JSON, pretty" }),
      h("option", { value: "hex", text: "hex" }), h("option", { value: "base64", text: "base64" }))),
    h("button", { className: "primary", type: "submit", id: "load", text: "Load" }),
    h("button", { type: "button", id: "older", text: "← Older", onclick: () => page(-1) }),
    h("button", { type: "button", id: "newer", text: "Newer →", onclick: () => page(1) }),
    h("button", { type: "button", id: "follow", text: "Follow live", onclick: () => toggleFollow() }),
    h("span", { id: "follow-state" }));
  const count = () => Math.max(1, Math.min(1000, Number(ctl.count.value) || PAGE_RECORDS));
  const show = () => {
    const fmt = ctl.format.value;
    const rows = state.records.map((r) => h("tr", { "data-offset": r.offset },
      td(fmtNum(r.offset), true), td(fmtTime(r.timestamp)), td(render(r.key, fmt)), td(render(r.value, fmt)),
      td(r.headers ? h("pre", { text: r.headers.map((x) => x.key + ": " + (x.value === null ? "null" : ctl.format.value === "base64" ? x.value : (() => { try { return utf8.decode(b64ToBytes(x.value)); } catch (e) { return "(base64) " + x.value; } })())).join("\n") }) : "")));
    clear(list, table([{ t: "offset", num: 1 }, { t: "timestamp" }, { t: "key" }, { t: "value" }, { t: "headers" }], rows, { id: "records-table", empty: "no records here" }));
  };
  ctl.format.addEventListener("change", show);
  // fetchFrom reads count records from offset (oldest first) and shows
  // them newest first when newestFirst.
  const fetchFrom = async (offset, newestFirst) => {
    const r = await get(base + "/records?encoding=base64&max_records=" + count() + "&offset=" + offset);
    state.from = offset; state.next = r.next_offset;
    state.records = newestFirst ? r.records.slice().reverse() : r.records;
    clear(out, msg("info", "Offsets " + fmtNum(offset) + " to " + fmtNum(r.next_offset - 1) + " of [" + fmtNum(r.log_start_offset) + ", " + fmtNum(r.high_watermark) + ")" + (r.records.length ? "" : ": nothing there")));
    show();
  };
  const load = async () => {
    stopFollow();
    try {
      const o = await get(base + "/offsets");
      const mode = ctl.mode.value;
      if (mode === "newest") await fetchFrom(Math.max(o.log_start_offset, o.high_watermark - count()), true);
      else if (mode === "offset") await fetchFrom(Math.min(Math.max(Number(ctl.offset.value) || 0, o.log_start_offset), o.high_watermark), false);
      else {
        const ts = new Date(ctl.time.value).getTime();
        if (!Number.isFinite(ts)) { clear(out, msg("err", "Pick a time.")); return; }
        const at = await get(base + "/offsets?timestamp=" + ts);
        await fetchFrom(Math.max(at.offset, o.log_start_offset), false);
      }
    } catch (e) { clear(out, errMsg(e)); }
  };
  const page = async (dir) => {
    if (state.from === null) return load();
    stopFollow();
    try {
      const o = await get(base + "/offsets");
      const newest = ctl.mode.value === "newest";
      const from = dir < 0 ? Math.max(o.log_start_offset, state.from - count()) : Math.min(state.next, o.high_watermark);
      await fetchFrom(from, newest);
    } catch (e) { clear(out, errMsg(e)); }
  };
  ctl.addEventListener("submit", (ev) => { ev.preventDefault(); load(); });

  // Follow: the streaming fetch (Server-Sent Events) read with fetch() so
  // that the access token goes in a header (EventSource cannot send one).
  function stopFollow() {
    if (state.follow) { state.follow.abort(); state.follow = null; }
    ctl.querySelector("#follow").textContent = "Follow live";
    clear(ctl.querySelector("#follow-state"));
  }
  async function toggleFollow() {
    if (state.follow) { stopFollow(); return; }
    const ac = new AbortController();
    state.follow = ac;
    ctl.querySelector("#follow").textContent = "Stop";
    clear(ctl.querySelector("#follow-state"), h("span", { className: "badge live", text: "live" }));
    try {
      // The newest records up to the high watermark, then the stream from
      // it: every record is in one or the other.
      const o = await get(base + "/offsets");
      ctl.mode.value = "newest";
      await fetchFrom(Math.max(o.log_start_offset, o.high_watermark - count()), true);
      requestCount++;
      const r = await fetch(base + "/records?encoding=base64&offset=" + o.high_watermark, { headers: headers({ Accept: "text/event-stream" }), signal: ac.signal });
      if (!r.ok) { let j = null; try { j = await r.json(); } catch (e) { /* none */ } throw new APIError(r.status, j); }
      if (!(r.headers.get("Content-Type") || "").startsWith("text/event-stream")) {
        // A deployment that cannot stream (API Gateway) answers a plain
        // fetch: follow with long polls instead.
        let next = o.high_watermark;
        for (let page = await r.json(); ; ) {
          for (const rec of page.records) state.records.unshift(rec);
          if (page.records.length) { state.records.length = Math.min(state.records.length, 1000); show(); }
          next = page.next_offset;
          requestCount++;
          const p2 = await fetch(base + "/records?encoding=base64&wait_ms=20000&offset=" + next, { headers: headers(), signal: ac.signal });
          if (!p2.ok) { let j = null; try { j = await p2.json(); } catch (e) { /* none */ } throw new APIError(p2.status, j); }
          page = await p2.json();
        }
      }
      const reader = r.body.pipeThrough(new TextDecoderStream()).getReader();
      let buf = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buf += value;
        let i;
        while ((i = buf.indexOf("\n\n")) >= 0) {
          const ev = buf.slice(0, i); buf = buf.slice(i + 2);
          let type = "message", data = "";
          for (const line of ev.split("\n")) {
            if (line.startsWith("event:")) type = line.slice(6).trim();
            else if (line.startsWith("data:")) data += line.slice(5).trim();
          }
          if (!data) continue;
          if (type === "error") throw new APIError(0, JSON.parse(data));
          if (type === "record") {
            state.records.unshift(JSON.parse(data));
            if (state.records.length > 1000) state.records.length = 1000;
            show();
          }
        }
      }
    } catch (e) {
      if (e.name !== "AbortError") clear(out, errMsg(e));
    } finally {
      if (state.follow === ac) stopFollow();
    }
  }
  onLeave(() => { if (state.follow) state.follow.abort(); });

  const pf = h("form", { className: "card", id: "produce" },
    h("h3", { text: "Produce a test record to partition " + p }),
    h("div", { className: "row" },
      h("label", { style: "flex:1 1 12em" }, "Key (UTF-8, empty: none)", h("input", { name: "key", id: "produce-key" })),
      h("label", { style: "flex:3 1 20em" }, "Value (UTF-8)", h("textarea", { name: "value", id: "produce-value", rows: 2 })),
      h("label", { style: "flex:2 1 14em" }, "Headers (key=value a line)", h("textarea", { name: "headers", id: "produce-headers", rows: 2 })),
      h("button", { className: "primary", type: "submit", id: "produce-submit", text: "Produce" })),
    h("div", { id: "produce-msg" }));
  pf.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const rec = { value: pf.value.value };
    if (pf.key.value !== "") rec.key = pf.key.value;
    const hs = pf.headers.value.split("\n").filter((l) => l.trim()).map((l) => { const i = l.indexOf("="); return i < 0 ? { key: l.trim(), value: null } : { key: l.slice(0, i).trim(), value: l.slice(i + 1) }; });
    if (hs.length) rec.headers = hs;
    try {
      const r = await api("POST", base + "/records", { encoding: "utf8", records: [rec] });
      clear(pf.querySelector("#produce-msg"), msg("ok", "Appended at offset " + r.offsets[0].offset + ", " + fmtTime(r.offsets[0].timestamp) + "."));
      if (!state.follow) { ctl.mode.value = "newest"; await load(); }
    } catch (e) { clear(pf.querySelector("#produce-msg"), errMsg(e)); }
  });

  clear(main, h("div", { className: "crumbs" }, h("a", { href: "#/topics", text: "Topics" }), " / ",
    h("a", { href: "#/topics/" + enc(topicName), text: topicName }), " / partition " + p),
  h("h1", { text: topicName + " / " + p }), ctl, out, list, pf);
  await load();
}

async function pageGroups() {
  const main = $("#main"), data = h("div", { id: "groups-data" });
  clear(main, h("h1", { text: "Consumer groups" }), data);
  await live(data, async (box) => {
    const g = await get("/v1/groups");
    const rows = g.groups.map((x) => h("tr", { className: "click", onclick: () => { location.hash = "#/groups/" + enc(x.group); } },
      td(h("a", { href: "#/groups/" + enc(x.group), text: x.group })), td(x.members, true)));
    clear(box, table([{ t: "group" }, { t: "live members", num: 1 }], rows, { id: "groups-table", empty: "no groups yet: a group appears at its first join, commit or reset" }));
  });
}

async function pageGroup(name) {
  const main = $("#main");
  const data = h("div", { id: "group-data" }), out = h("div", { id: "reset-msg" });
  const rf = h("form", { className: "inline card", id: "reset" },
    h("label", {}, "Topic", h("input", { name: "topic", id: "reset-topic", required: true, list: "group-topics", style: "width:12em" })),
    h("label", {}, "Reset to", h("select", { name: "to", id: "reset-to" },
      h("option", { value: "earliest", text: "earliest" }), h("option", { value: "latest", text: "latest" }),
      h("option", { value: "offset", text: "offset" }), h("option", { value: "timestamp", text: "time" }))),
    h("label", {}, "Offset", h("input", { name: "offset", type: "number", min: 0, style: "width:9em" })),
    h("label", {}, "Time", h("input", { name: "time", type: "datetime-local", step: 1 })),
    h("label", {}, "Partitions (empty: all)", h("input", { name: "partitions", placeholder: "0,2", style: "width:8em" })),
    h("button", { className: "danger", type: "submit", id: "reset-submit", text: "Reset offsets" }),
    h("datalist", { id: "group-topics" }));
  rf.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const body = { topic: rf.topic.value.trim() };
    const to = rf.to.value;
    if (to === "earliest" || to === "latest") body.to = to;
    else if (to === "offset") body.offset = Number(rf.offset.value);
    else body.timestamp = new Date(rf.time.value).getTime();
    if (rf.partitions.value.trim()) body.partitions = rf.partitions.value.split(",").map((x) => Number(x.trim()));
    const where = body.partitions ? "partitions " + body.partitions.join(", ") : "every partition";
    const dest = body.to || (body.offset !== undefined ? "offset " + body.offset : "time " + fmtTime(body.timestamp));
    if (!(await confirmDo("Reset " + name + " on " + body.topic + "?", "Committed offsets of " + where + " move to " + dest + ". Consumers of the group re-read or skip records from there. Only a group without live members can be reset."))) return;
    try {
      const r = await api("POST", "/v1/groups/" + enc(name) + "/offsets/reset", body);
      clear(out, msg("ok", "Reset: " + r.offsets.map((o) => "partition " + o.partition + " → " + o.offset).join(", ") + "."));
      await refresh(data);
    } catch (e) { clear(out, errMsg(e)); }
  });
  const refresh = async (box) => {
    const [g, lag] = await Promise.all([get("/v1/groups/" + enc(name)), history("lag?group=" + enc(name))]);
    const offs = await Promise.all(g.offset_topics.map((t) => get("/v1/groups/" + enc(name) + "/offsets?topic=" + enc(t))));
    const dl = rf.querySelector("#group-topics");
    clear(dl, g.offset_topics.map((t) => h("option", { value: t })));
    if (!rf.topic.value && g.offset_topics.length) rf.topic.value = g.offset_topics[0];
    const all = offs.flatMap((o) => o.offsets);
    const total = all.reduce((a, o) => a + o.lag, 0);
    const members = g.members.map((m) => h("tr", {}, td(h("span", { className: "mono", text: m.member_id })), td(m.topics.join(", ")),
      td((m.assignments || []).map((a) => a.topic + ": " + a.partitions.join(", ")).join("; ") || "none"),
      td(fmtMs(m.session_timeout_ms)), td(fmtTime(m.expires_ms))));
    const rows = all.map((o) => h("tr", {}, td(o.topic), td(o.partition, true), td(fmtNum(o.offset), true), td(fmtNum(o.lag), true), td(o.metadata || "")));
    let lagChart;
    if (lag) {
      lagChart = chart("Lag over the last hour (records)", "lag-chart", lag.times,
        lag.series.map((s) => ({ label: s.topic + "/" + s.partition, values: s.lags.map((v) => (v < 0 ? null : v)) })));
    } else lagChart = h("p", { className: "muted", text: "This server keeps no console history: no lag chart (docs/console.md)." });
    clear(box,
      h("div", { className: "stats" },
        h("div", { className: "stat" }, h("b", { id: "group-generation", text: String(g.generation) }), h("span", { text: "generation" })),
        h("div", { className: "stat" }, h("b", { text: String(g.members.length) }), h("span", { text: "live members" })),
        h("div", { className: "stat" }, h("b", { id: "group-lag", text: fmtNum(total) }), h("span", { text: "total lag" }))),
      h("h2", { text: "Members" }),
      table([{ t: "member" }, { t: "topics" }, { t: "assignments" }, { t: "session" }, { t: "expires" }], members, { id: "members-table", empty: "no live members" }),
      h("h2", { text: "Committed offsets" }),
      table([{ t: "topic" }, { t: "partition", num: 1 }, { t: "committed", num: 1 }, { t: "lag", num: 1 }, { t: "metadata" }], rows, { id: "offsets-table", empty: "no committed offsets" }),
      h("h2", { text: "Lag" }), h("div", { className: "charts" }, lagChart));
  };
  clear(main, h("div", { className: "crumbs" }, h("a", { href: "#/groups", text: "Groups" }), " / ", name),
    h("h1", { text: name }), data, h("h2", { text: "Reset offsets" }), rf, out);
  await live(data, refresh);
}

async function pageSubscriptions() {
  const main = $("#main"), data = h("div", { id: "subscriptions-data" });
  clear(main, h("h1", { text: "Subscriptions" }), data);
  await live(data, async (box) => {
    let list;
    try { list = await get("/v1/subscriptions"); } catch (e) {
      if (e.status === 404) {
        clear(box, msg("info", "No subscriptions: this server does not serve them (GET /v1/subscriptions answers 404)."));
        return;
      }
      throw e;
    }
    const subs = await Promise.all(list.subscriptions.map((s) => get("/v1/subscriptions/" + enc(s.name))));
    const rows = subs.map((s) => {
      const st = s.status || {};
      const lag = (st.partitions || []).reduce((a, p) => a + p.lag, 0);
      const errs = (st.partitions || []).filter((p) => p.last_error).map((p) => p.partition + ": " + p.last_error).join("\n");
      return h("tr", {}, td(s.name), td(s.topic), td(s.target.type === "lambda" ? s.target.function : s.target.url),
        td(h("span", { className: "badge " + (st.state || ""), text: st.state || (s.enabled ? "enabled" : "disabled") })),
        td(fmtNum(st.delivered), true), td(fmtNum(lag), true), td(fmtNum(st.failed_attempts), true),
        td(fmtNum(st.sent_to_on_failure), true), td(s.on_failure ? s.on_failure.topic : "—"), td(h("pre", { text: errs })));
    });
    clear(box, table([{ t: "name" }, { t: "topic" }, { t: "target" }, { t: "state" }, { t: "delivered", num: 1 }, { t: "lag", num: 1 },
      { t: "failed attempts", num: 1 }, { t: "sent to on_failure", num: 1 }, { t: "on_failure" }, { t: "last error" }], rows, { id: "subscriptions-table", empty: "no subscriptions yet" }));
  });
}

async function pageServer() {
  const main = $("#main"), data = h("div", { id: "server-data" });
  clear(main, h("h1", { text: "Server" }), data);
  await live(data, async (box) => {
    const [health, hist] = await Promise.all([get("/v1/health"), history("server")]);
    if (!hist) { clear(box, msg("info", "Health: " + health.status + ". This server keeps no console history (a proxy to a deployed stack): see CloudWatch for its metrics.")); return; }
    const s = hist.samples, iv = hist.interval_ms, t = s.map((x) => x.t);
    const last = s[s.length - 1] || {};
    const sum = (k) => s.reduce((a, x) => a + x[k], 0);
    // Requests by route and status: the busiest eight series of the window.
    const totals = new Map();
    for (const x of s) for (const r of x.requests || []) { const k = r.method + " " + r.route + " " + r.code; totals.set(k, (totals.get(k) || 0) + r.count); }
    const top = [...totals.entries()].sort((a, b) => b[1] - a[1]).slice(0, 8).map((e) => e[0]);
    const reqSeries = top.map((k) => ({ label: k, values: s.map((x) => { const r = (x.requests || []).find((y) => y.method + " " + y.route + " " + y.code === k); return perSecond(r ? r.count : 0, iv); }) }));
    const reqRows = [...totals.entries()].sort((a, b) => b[1] - a[1]).map(([k, n]) => { const [m, r, c] = k.split(" "); return h("tr", {}, td(m), td(r), td(c, true), td(fmtNum(n), true)); });
    const rate = (v) => fmtNum(Math.round(v * 100) / 100) + "/s";
    clear(box,
      h("div", { className: "stats" },
        h("div", { className: "stat" }, h("b", { id: "health", text: health.status }), h("span", { text: "health" })),
        h("div", { className: "stat" }, h("b", { id: "stat-in", text: rate(last.records_in ? last.records_in * 1000 / iv : 0) }), h("span", { text: "records in (last sample)" })),
        h("div", { className: "stat" }, h("b", { text: fmtBytes(last.hot_bytes || 0) }), h("span", { text: "hot tier" })),
        h("div", { className: "stat" }, h("b", { text: fmtBytes(last.cold_bytes || 0) }), h("span", { text: "cold tier" })),
        h("div", { className: "stat" }, h("b", { text: fmtBytes(last.pending_bytes || 0) }), h("span", { text: "sealed, waiting for the compactor" })),
        h("div", { className: "stat" }, h("b", { text: fmtNum(sum("segments_finalized")) }), h("span", { text: "segments tiered (window)" }))),
      h("div", { className: "charts" },
        chart("Records per second", "chart-records", t, [
          { label: "in (appended)", values: s.map((x) => perSecond(x.records_in, iv)) },
          { label: "out (streamed)", values: s.map((x) => perSecond(x.records_streamed, iv)) },
          { label: "fetch requests", values: s.map((x) => perSecond(x.fetches, iv)) }]),
        chart("Requests per second by route and status", "chart-requests", t, reqSeries),
        chart("Tier sizes", "chart-tiers", t, [
          { label: "hot", values: s.map((x) => x.hot_bytes) }, { label: "cold", values: s.map((x) => x.cold_bytes) },
          { label: "sealed, not tiered", values: s.map((x) => x.pending_bytes) }], fmtBytes),
        chart("Compactor: bytes tiered per second", "chart-compactor", t, [
          { label: "bytes to the cold tier", values: s.map((x) => perSecond(x.bytes_finalized, iv)) }], fmtBytes)),
      h("h2", { text: "Requests in the window" }),
      table([{ t: "method" }, { t: "route" }, { t: "status", num: 1 }, { t: "requests", num: 1 }], reqRows, { id: "requests-table", empty: "no requests yet" }),
      h("p", { className: "muted", text: s.length + " samples, one every " + iv / 1000 + " s, the last " + fmtMs(hist.window_ms) + " kept in the server's memory. Out: records sent by streaming fetches; plain fetches are counted as requests." }));
  });
}

// ---- the access token ----
function showToken() { $("#token-state").textContent = token() ? "token set" : ""; $("#token").value = ""; $("#token").placeholder = token() ? "•••• (empty + Use: clear)" : "optional bearer token"; }
$("#token-form").addEventListener("submit", (ev) => {
  ev.preventDefault();
  const v = $("#token").value.trim();
  if (v) sessionStorage.setItem(TOKEN_KEY, v); else sessionStorage.removeItem(TOKEN_KEY);
  showToken(); route();
});
showToken();
window.tierlogRequests = () => requestCount; // read by the browser tests (requests per refresh)
route();
