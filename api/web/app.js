// vinfer web page: polls the JSON API, follows detection events over SSE and draws the selected
// stream's latest frame with its own result's boxes on a canvas. No framework, no build step.
"use strict";

const $ = (sel) => document.querySelector(sel);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const enc = encodeURIComponent;

// Box colors by class id: the same palette the server's snapshot.jpg uses.
const PALETTE = ["#4cc9f0", "#f72585", "#7be06a", "#ffb703", "#b58cff", "#ff7043",
  "#06d6a0", "#ef476f", "#3a86ff", "#e9ff70", "#ff99c8", "#8eecf5"];
const colorOf = (id) => PALETTE[Math.abs(id | 0) % PALETTE.length];
const textOn = (hex) => {
  const n = parseInt(hex.slice(1), 16);
  const l = 0.299 * (n >> 16) + 0.587 * ((n >> 8) & 255) + 0.114 * (n & 255);
  return l > 140 ? "#0b0d12" : "#ffffff";
};

const state = {
  token: localStorage.getItem("vinfer.token") || "",
  streams: [],
  models: [],
  selected: localStorage.getItem("vinfer.selected") || "",
  results: new Map(), // stream id → recent results, oldest first
  classIds: new Map(), // label → class id (from events), for chip colors
  events: null,
};

// ---- API ----

async function api(path, opts = {}) {
  const headers = Object.assign({}, opts.headers);
  if (state.token) headers.Authorization = "Bearer " + state.token;
  // the API takes state changes as JSON only (a cross-site form cannot send that type)
  if (opts.json !== undefined || opts.method === "POST") headers["Content-Type"] = "application/json";
  const res = await fetch(path, {
    method: opts.method || "GET", headers,
    body: opts.json !== undefined ? JSON.stringify(opts.json) : undefined,
  });
  if (res.status === 401) askToken();
  if (opts.raw) return res;
  const text = await res.text();
  let body = null;
  try { body = text ? JSON.parse(text) : null; } catch { body = null; }
  if (!res.ok) {
    const err = new Error((body && body.error) || `${res.status} ${res.statusText}`);
    err.status = res.status;
    throw err;
  }
  return body;
}

function withToken(url) {
  if (!state.token) return url;
  return url + (url.includes("?") ? "&" : "?") + "access_token=" + enc(state.token);
}

let asking = false;
function askToken() {
  if (asking) return;
  asking = true;
  $("#token-btn").hidden = false;
  const dlg = $("#token-dialog");
  $("#token-input").value = state.token;
  dlg.showModal();
  dlg.addEventListener("close", () => {
    asking = false;
    state.token = $("#token-input").value.trim();
    localStorage.setItem("vinfer.token", state.token);
    connectEvents();
    refreshAll();
  }, { once: true });
}

// ---- toasts ----

function toast(msg, bad = false) {
  const el = document.createElement("div");
  el.className = "toast" + (bad ? " bad" : "");
  el.textContent = msg;
  $("#toasts").append(el);
  setTimeout(() => el.remove(), bad ? 7000 : 3500);
}

// ---- events (SSE) ----

function connectEvents() {
  if (state.events) state.events.close();
  const es = new EventSource(withToken("/api/events"));
  es.addEventListener("result", (ev) => {
    let r;
    try { r = JSON.parse(ev.data); } catch { return; }
    let ring = state.results.get(r.source);
    if (!ring) state.results.set(r.source, (ring = []));
    ring.push(r);
    if (ring.length > 64) ring.shift();
    for (const d of r.detections) state.classIds.set(d.label, d.class_id);
  });
  state.events = es;
}

// ---- live view ----

const canvas = $("#canvas");
const ctx = canvas.getContext("2d");

// The decoder runs ahead of inference by the stream's latency, so the view plays frames a
// little late: fetched frames wait in `pending` until their own result arrived (or a bound
// passed), then are drawn with its boxes. Frames keep their order; the oldest go first.
const pending = [];

function newest(id) {
  const ring = state.results.get(id);
  return ring && ring.length ? ring[ring.length - 1].frame : -1;
}

function bestResult(id, frame) {
  let best = null;
  for (const r of state.results.get(id) || []) if (r.frame <= frame && (!best || r.frame > best.frame)) best = r;
  return best;
}

async function fetchLoop() {
  for (;;) {
    const id = state.selected;
    if (!id || document.hidden || !state.streams.some((s) => s.id === id) || pending.length >= 12) {
      await sleep(100);
      continue;
    }
    const t0 = performance.now();
    try {
      const res = await api(`/api/streams/${enc(id)}/snapshot.jpg?boxes=0&wait=0&quality=85`, { raw: true });
      if (res.ok) {
        const frame = Number(res.headers.get("X-Vinfer-Frame"));
        const pts = Number(res.headers.get("X-Vinfer-PTS"));
        const last = pending.length ? pending[pending.length - 1] : null;
        const bmp = await createImageBitmap(await res.blob());
        if (id === state.selected && (!last || last.id !== id || frame !== last.frame)) {
          pending.push({ id, frame, pts, bmp, at: performance.now() });
        } else {
          bmp.close();
        }
      }
    } catch (e) { /* network hiccup: try again */ }
    await sleep(Math.max(0, 100 - (performance.now() - t0)));
  }
}

function renderLoop() {
  const now = performance.now();
  const s = state.streams.find((x) => x.id === state.selected);
  // Wait for a frame's result up to its stream's latency plus a margin (results are in order).
  const bound = Math.min(4000, 500 + 1.5 * (s ? s.latency_ms || 0 : 0));
  let show = null;
  while (pending.length) {
    const p = pending[0];
    if (p.id !== state.selected) { pending.shift().bmp.close(); continue; }
    if (newest(p.id) < p.frame && now - p.at < bound) break;
    if (show) show.bmp.close();
    show = pending.shift();
    if (pending.length && newest(p.id) < pending[0].frame) break; // show this one, keep the next
  }
  if (show) {
    draw(show.bmp, bestResult(show.id, show.frame), show.frame, show.pts);
    show.bmp.close();
  }
  requestAnimationFrame(renderLoop);
}

function liveLoop() {
  fetchLoop();
  requestAnimationFrame(renderLoop);
}

function draw(bmp, r, frame, pts) {
  if (canvas.width !== bmp.width || canvas.height !== bmp.height) {
    canvas.width = bmp.width;
    canvas.height = bmp.height;
  }
  ctx.drawImage(bmp, 0, 0);
  const dets = r ? r.detections : [];
  const k = Math.max(1, canvas.width / Math.max(1, canvas.clientWidth)); // canvas px per CSS px
  const fontPx = Math.round(12.5 * k);
  ctx.lineWidth = Math.max(2, Math.round(2 * k));
  ctx.font = `600 ${fontPx}px system-ui, -apple-system, "Segoe UI", sans-serif`;
  ctx.textBaseline = "top";
  for (const d of dets) {
    const [x1, y1, x2, y2] = d.box;
    const c = colorOf(d.class_id);
    ctx.strokeStyle = c;
    ctx.strokeRect(x1, y1, x2 - x1, y2 - y1);
    const tag = `${d.label} ${Math.round(d.score * 100)}%`;
    const pad = Math.round(3 * k);
    const tw = ctx.measureText(tag).width + 2 * pad;
    const th = fontPx + 2 * pad;
    let ty = y1 - th;
    if (ty < 0) ty = y1;
    const tx = Math.min(x1, canvas.width - tw);
    ctx.fillStyle = c;
    ctx.fillRect(tx - ctx.lineWidth / 2, ty, tw, th);
    ctx.fillStyle = textOn(c);
    ctx.fillText(tag, tx + pad - ctx.lineWidth / 2, ty + pad + 1);
  }
  canvas.dataset.frame = String(frame);
  canvas.dataset.boxes = String(dets.length);
  canvas.dataset.resultFrame = r ? String(r.frame) : "";
  $("#view").classList.add("live");
  $("#view-badge").textContent = `#${frame} · ${pts.toFixed(2)} s` + (r && r.frame !== frame ? ` · boxes of #${r.frame}` : "");
  renderDets(dets);
}

function renderDets(dets) {
  const box = $("#dets");
  if (!dets.length) {
    box.innerHTML = '<span class="muted">nothing detected</span>';
    return;
  }
  box.replaceChildren(...[...dets].sort((a, b) => b.score - a.score).slice(0, 24).map((d) =>
    tag(d.label, `${Math.round(d.score * 100)}%`, colorOf(d.class_id))));
}

function tag(label, value, color) {
  const el = document.createElement("span");
  el.className = "tag";
  const i = document.createElement("i");
  i.style.background = color;
  const b = document.createElement("b");
  b.textContent = value;
  el.append(i, document.createTextNode(label), b);
  return el;
}

// ---- streams ----

function select(id) {
  state.selected = id;
  localStorage.setItem("vinfer.selected", id);
  $("#view").classList.remove("live");
  canvas.dataset.frame = "-1";
  canvas.dataset.boxes = "0";
  renderStreams();
  renderView();
}

function fmt(v, digits = 1) {
  return v == null || Number.isNaN(v) ? "–" : Number(v).toFixed(digits);
}

function dropsOf(s) {
  return Object.values(s.dropped || {}).reduce((a, b) => a + b, 0);
}

const cards = new Map();
function renderStreams() {
  const list = $("#streams");
  const seen = new Set();
  for (const s of state.streams) {
    seen.add(s.id);
    let c = cards.get(s.id);
    if (!c) {
      c = document.createElement("div");
      c.className = "stream";
      c.dataset.stream = s.id;
      c.innerHTML = `<img alt=""><div><div class="name"><i class="dot"></i><span></span></div>
        <div class="src mono"></div><div class="nums"><span><b class="fps"></b> fps</span>
        <span><b class="lat"></b> ms</span><span><b class="drop"></b> drops</span></div></div>
        <button class="rm" title="Remove stream" aria-label="Remove stream">×</button>`;
      c.addEventListener("click", () => select(s.id));
      c.querySelector(".rm").addEventListener("click", (ev) => { ev.stopPropagation(); removeStream(s.id); });
      c.querySelector("img").addEventListener("error", (ev) => { ev.target.style.visibility = "hidden"; });
      c.querySelector("img").addEventListener("load", (ev) => { ev.target.style.visibility = "visible"; });
      cards.set(s.id, c);
    }
    list.append(c); // keeps the API's order
    c.classList.toggle("sel", s.id === state.selected);
    c.querySelector(".name span").textContent = s.id;
    c.querySelector(".dot").className = "dot " + stateClass(s.state);
    c.querySelector(".src").textContent = s.source;
    c.querySelector(".src").title = s.source;
    c.querySelector(".fps").textContent = fmt(s.inferred_fps);
    c.querySelector(".lat").textContent = fmt(s.latency_ms, 0);
    c.querySelector(".drop").textContent = dropsOf(s) - (s.dropped.interval || 0) - (s.dropped.fps_cap || 0);
    const img = c.querySelector("img");
    const now = Date.now();
    if (s.decoded > 0 && (!img.dataset.t || now - Number(img.dataset.t) > 3000)) {
      img.dataset.t = String(now);
      img.src = withToken(`/api/streams/${enc(s.id)}/snapshot.jpg?width=208&wait=0&quality=70&t=${now}`);
    }
  }
  for (const [id, c] of cards) {
    if (!seen.has(id)) { c.remove(); cards.delete(id); }
  }
  $("#streams-empty").hidden = state.streams.length > 0;
  const active = state.streams.filter((s) => s.state === "running" || s.state === "starting").length;
  $("#total-streams").textContent = active;
  $("#total-streams-label").textContent = active === 1 ? "stream" : "streams";
  $("#total-fps").textContent = fmt(state.streams.reduce((a, s) => a + (s.inferred_fps || 0), 0));
}

function stateClass(st) {
  return { running: "ok", starting: "warn", failed: "bad", ended: "idle" }[st] || "";
}

function renderView() {
  const s = state.streams.find((x) => x.id === state.selected);
  if (!s) {
    $("#view-title").textContent = state.streams.length ? "Select a stream" : "No stream selected";
    $("#view-source").textContent = "";
    $("#view-state").textContent = "";
    $("#view-state").className = "state";
    $("#view").classList.remove("live");
    for (const id of ["#t-fps", "#t-dfps", "#t-lat", "#t-queue", "#t-drop", "#t-det"]) $(id).textContent = "–";
    $("#dets").innerHTML = '<span class="muted">–</span>';
    $("#classes").innerHTML = '<span class="muted">–</span>';
    return;
  }
  $("#view-title").textContent = s.id;
  $("#view-source").textContent = `${s.source} · ${s.model}` + (s.live ? " · live" : "");
  $("#view-state").textContent = s.error ? `${s.state}: ${s.error}` : s.state;
  $("#view-state").className = "state " + s.state;
  $("#t-fps").textContent = fmt(s.inferred_fps);
  $("#t-dfps").textContent = fmt(s.decoded_fps);
  $("#t-lat").textContent = fmt(s.latency_ms, 0);
  $("#t-queue").textContent = s.queue;
  $("#t-drop").textContent = dropsOf(s);
  $("#t-drop-why").textContent = Object.entries(s.dropped).filter(([, n]) => n > 0)
    .map(([k, n]) => `${k.replace("_", " ")} ${n}`).join(" · ") || "total";
  $("#t-det").textContent = s.detections;
  const classes = Object.entries(s.classes || {}).sort((a, b) => b[1] - a[1]);
  if (classes.length) {
    $("#classes").replaceChildren(...classes.slice(0, 30).map(([label, n]) =>
      tag(label, String(n), state.classIds.has(label) ? colorOf(state.classIds.get(label)) : "#8a93a6")));
  } else {
    $("#classes").innerHTML = '<span class="muted">none yet</span>';
  }
}

async function removeStream(id) {
  if (!confirm(`Remove stream ${id}? Its source is closed.`)) return;
  try {
    await api(`/api/streams/${enc(id)}`, { method: "DELETE" });
    toast(`Removed ${id}`);
    state.results.delete(id);
    if (state.selected === id) select("");
    refreshStreams();
  } catch (e) {
    toast(e.message, true);
  }
}

// ---- models ----

function renderModels() {
  const sel = $("#model-select");
  const cur = sel.value;
  const names = state.models.map((m) => m.name);
  if (sel.options.length !== names.length || [...sel.options].some((o, i) => o.value !== names[i])) {
    sel.replaceChildren(...names.map((n) => new Option(n, n)));
    if (names.includes(cur)) sel.value = cur;
  }
  const box = $("#models");
  if (!state.models.length) {
    box.innerHTML = '<p class="empty">No models declared.</p>';
    return;
  }
  box.replaceChildren(...state.models.map((m) => {
    const el = document.createElement("div");
    el.className = "model";
    el.dataset.model = m.name;
    const head = document.createElement("div");
    head.className = "head";
    const dot = document.createElement("i");
    dot.className = "dot " + (m.last_error ? "bad" : m.loaded ? "ok" : "idle");
    const name = document.createElement("b");
    name.textContent = m.name;
    const btn = document.createElement("button");
    btn.className = "ghost";
    btn.textContent = m.loaded ? "Reload" : "Load";
    btn.title = "Load the model file again and swap it in without stopping streams";
    btn.addEventListener("click", () => reloadModel(m.name, btn));
    head.append(dot, name, btn);
    const meta = document.createElement("div");
    meta.className = "meta";
    const parts = [m.family || "not loaded"];
    if (m.input) parts.push(`${m.input.width}×${m.input.height}`);
    parts.push(m.provider);
    if (m.max_batch) parts.push(`batch ≤ ${m.max_batch}`);
    if (m.loaded) parts.push(`loaded in ${fmt(m.load_seconds, 2)} s`, `${m.loads} load${m.loads === 1 ? "" : "s"}`);
    meta.textContent = parts.join(" · ");
    const meta2 = document.createElement("div");
    meta2.className = "meta";
    meta2.textContent = `${fmt(m.fps)} fps · ${m.streams.length} stream${m.streams.length === 1 ? "" : "s"}` +
      (m.fps > 0 ? ` · efficiency ${Math.round(m.efficiency * 100)}%` + (m.bottleneck ? ` (${m.bottleneck.replace("_", " + ")} bound)` : "") : "");
    const bar = document.createElement("div");
    bar.className = "bar";
    bar.title = "pipeline efficiency: achieved fps / bottleneck stage fps";
    const fill = document.createElement("i");
    fill.style.width = `${Math.round(Math.min(1, m.efficiency || 0) * 100)}%`;
    bar.append(fill);
    el.append(head, meta, meta2, bar);
    if (m.last_error) {
      const err = document.createElement("div");
      err.className = "err";
      err.textContent = "last reload failed: " + m.last_error;
      el.append(err);
    }
    return el;
  }));
}

async function reloadModel(name, btn) {
  btn.disabled = true;
  btn.textContent = "Reloading…";
  try {
    const m = await api(`/api/models/${enc(name)}/reload`, { method: "POST" });
    toast(`Reloaded ${name} in ${fmt(m.load_seconds, 2)} s`);
  } catch (e) {
    toast(e.message, true);
  }
  refreshModels();
}

// ---- add form ----

$("#add-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const f = ev.target.elements; // (form.id would be the form's own id attribute)
  const body = { id: f.id.value.trim(), source: f.source.value.trim(), model: f.model.value };
  if (f.loop.checked) body.loop = true;
  if (f.interval.value) body.interval = Number(f.interval.value);
  if (f.max_fps.value) body.max_fps = Number(f.max_fps.value);
  $("#add-error").textContent = "";
  $("#add-btn").disabled = true;
  try {
    const s = await api("/api/streams", { method: "POST", json: body });
    toast(`Added ${s.id}`);
    const model = f.model.value;
    ev.target.reset();
    f.model.value = model;
    await refreshStreams();
    select(s.id);
  } catch (e) {
    $("#add-error").textContent = e.message;
  } finally {
    $("#add-btn").disabled = false;
  }
});

$("#token-btn").addEventListener("click", askToken);

// ---- polling ----

async function refreshStreams() {
  try {
    const r = await api("/api/streams");
    state.streams = r.streams;
    if (!state.streams.some((s) => s.id === state.selected)) {
      state.selected = state.streams.length ? state.streams[0].id : "";
    }
    renderStreams();
    renderView();
  } catch (e) { /* shown by the readiness chip */ }
}

async function refreshModels() {
  try {
    state.models = (await api("/api/models")).models;
    renderModels();
  } catch (e) { /* retried */ }
}

async function refreshHealth() {
  const chip = $("#ready");
  try {
    const h = await (await fetch("/healthz")).json();
    $("#uptime").textContent = duration(h.uptime_seconds);
    const res = await fetch("/readyz");
    const r = await res.json();
    chip.querySelector(".dot").className = "dot " + (r.ready ? (r.failed ? "warn" : "ok") : "warn");
    chip.querySelector("span").textContent = r.ready ? "ready" : "not ready";
    chip.title = [...(r.waiting || []), ...(r.failed || [])].join("\n") || "models loaded, sources started";
  } catch {
    chip.querySelector(".dot").className = "dot bad";
    chip.querySelector("span").textContent = "offline";
    chip.title = "vinfer does not answer";
  }
}

function duration(s) {
  s = Math.floor(s);
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m ${s % 60}s`;
  if (s < 86400) return `${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}m`;
  return `${Math.floor(s / 86400)}d ${Math.floor((s % 86400) / 3600)}h`;
}

function refreshAll() {
  refreshStreams();
  refreshModels();
  refreshHealth();
}

connectEvents();
refreshAll();
setInterval(refreshStreams, 1000);
setInterval(refreshModels, 4000);
setInterval(refreshHealth, 5000);
liveLoop();
