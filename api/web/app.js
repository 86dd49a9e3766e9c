// vinfer web page: polls the JSON API, follows detection results and scene events over SSE and
// draws the selected stream's latest frame with its own result's boxes, track ids and trails on a
// canvas; a second canvas above it holds the stream's zones and lines with their live counts and
// the shape being drawn in the editor. No framework, no build step.
"use strict";

const $ = (sel) => document.querySelector(sel);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const enc = encodeURIComponent;

// Box colors by class id: the same palette the server's snapshot.jpg uses.
const PALETTE = ["#4cc9f0", "#f72585", "#7be06a", "#ffb703", "#b58cff", "#ff7043",
  "#06d6a0", "#ef476f", "#3a86ff", "#e9ff70", "#ff99c8", "#8eecf5"];
const colorOf = (id) => PALETTE[Math.abs(id | 0) % PALETTE.length];
// Track colors: the golden angle round the hue circle, so neighbouring ids differ and an id keeps
// its color for its whole life.
function trackColor(id) {
  return hslHex((Math.abs(id | 0) * 137.508) % 360, 0.85, 0.6);
}

// Zone and line colors by declaration order in the selected stream's scene: zones from the start
// of the palette, lines from its end, so that adding a zone leaves the lines' colors alone.
const SCENE_PALETTE = ["#ffb703", "#06d6a0", "#ff7043", "#b58cff", "#e9ff70", "#8eecf5", "#3a86ff", "#f72585"];
function sceneColor(name) {
  const v = sceneView();
  const n = SCENE_PALETTE.length;
  const z = ((v && v.zones) || []).findIndex((x) => x.name === name);
  if (z >= 0) return SCENE_PALETTE[z % n];
  const l = ((v && v.lines) || []).findIndex((x) => x.name === name);
  return SCENE_PALETTE[n - 1 - (Math.max(0, l) % n)];
}

function hslHex(h, s, l) {
  const f = (n) => {
    const k = (n + h / 30) % 12;
    const v = l - s * Math.min(l, 1 - l) * Math.max(-1, Math.min(k - 3, 9 - k, 1));
    return Math.round(v * 255).toString(16).padStart(2, "0");
  };
  return `#${f(0)}${f(8)}${f(4)}`;
}

function rgba(hex, a) {
  const n = parseInt(hex.slice(1), 16);
  return `rgba(${n >> 16},${(n >> 8) & 255},${n & 255},${a})`;
}

const textOn = (hex) => {
  const n = parseInt(hex.slice(1), 16);
  const l = 0.299 * (n >> 16) + 0.587 * ((n >> 8) & 255) + 0.114 * (n & 255);
  return l > 140 ? "#0b0d12" : "#ffffff";
};

const state = {
  token: pageToken(),
  streams: [],
  models: [],
  selected: localStorage.getItem("vinfer.selected") || "",
  results: new Map(), // stream id → recent results, oldest first
  classIds: new Map(), // label → class id (from events), for chip colors
  events: null,
  feed: null, // scene events (SSE ?type=all)
  scene: null, // {stream, view: GET …/scene}
  draft: null, // the shape being drawn: {stream, kind: "zone"|"line", points: [[x,y]…], closed}
  mouse: null, // pointer over the frame while drawing, frame pixels
  flash: new Map(), // zone or line name → when an event last happened on it (performance.now())
};

// A trail is the last TRAIL_SECONDS of a track's anchor (bottom-center, where zones and lines
// test it), from the results kept per stream.
const TRAIL_SECONDS = 2;
const RESULTS_KEPT = 128;
const EVENTS_KEPT = 100;

// ---- API ----

// api is apiRequest (request.js) with the page's token; a 401 asks for the token.
function api(path, opts = {}) {
  return apiRequest(path, Object.assign({ token: state.token, onUnauthorized: askToken }, opts));
}

// feature calls start once GET /api says the node has the feature ("cluster", "gb28181"), so
// the page polls no route the node lacks; /api is asked again every 5 s until it answers (a
// token may be needed first).
let featuresAsked = null;
function feature(name, start) {
  if (!featuresAsked) {
    featuresAsked = new Promise((resolve) => {
      const ask = () => api("/api").then((v) => resolve((v && v.features) || {}), () => setTimeout(ask, 5000));
      ask();
    });
  }
  featuresAsked.then((f) => { if (f[name]) start(); });
}

function withToken(url) {
  return tokenURL(url, state.token);
}

// askToken shows the token form (request.js), then reconnects with the token entered.
function askToken(ev) {
  $("#token-btn").hidden = false;
  promptToken(tokenEntered, { change: ev instanceof Event });
}

function tokenEntered(token) {
  state.token = token;
  connectEvents();
  refreshAll();
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
  connectFeed();
  if (state.events) state.events.close();
  const es = new EventSource(withToken("/api/events"));
  es.addEventListener("result", (ev) => {
    let r;
    try { r = JSON.parse(ev.data); } catch { return; }
    if (r.end) return; // a stream's closing record: no frame to draw (its events come in the feed)
    let ring = state.results.get(r.source);
    if (!ring) state.results.set(r.source, (ring = []));
    ring.push(r);
    if (ring.length > RESULTS_KEPT) ring.shift();
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
  if (state.flash.size) { // zones and lines light up briefly on their events
    for (const [name, t] of state.flash) if (now - t > 900) state.flash.delete(name);
    drawOverlay();
  }
  requestAnimationFrame(renderLoop);
}

function liveLoop() {
  fetchLoop();
  requestAnimationFrame(renderLoop);
}

function draw(bmp, r, frame, pts) {
  // The canvas has the frame's size (boxes, zones and lines are in frame pixels); a snapshot of a
  // very large frame comes sampled down and is scaled back up.
  const w = r && r.width > 0 ? r.width : bmp.width;
  const h = r && r.height > 0 ? r.height : bmp.height;
  if (canvas.width !== w || canvas.height !== h) {
    canvas.width = w;
    canvas.height = h;
    drawOverlay();
  }
  ctx.drawImage(bmp, 0, 0, w, h);
  const dets = r ? r.detections : [];
  const k = Math.max(1, canvas.width / Math.max(1, canvas.clientWidth)); // canvas px per CSS px
  const fontPx = Math.round(12.5 * k);
  const trails = r ? trailsOf(r) : new Map();
  ctx.lineCap = "round";
  ctx.lineJoin = "round";
  for (const d of dets) {
    const t = d.track_id != null && trails.get(d.track_id);
    if (t && t.length > 1) drawTrail(t, trackColor(d.track_id), k);
  }
  // a gated stream's motion regions (activity_state.motion_boxes, of the last frame checked):
  // thin dashed outlines under the detections
  const act = (state.streams.find((x) => x.id === state.selected) || {}).activity_state;
  const motion = act ? act.motion_boxes || [] : [];
  if (motion.length) {
    ctx.save();
    ctx.setLineDash([6 * k, 4 * k]);
    ctx.lineWidth = Math.max(1, Math.round(1.5 * k));
    ctx.strokeStyle = "rgba(255, 255, 255, 0.75)";
    for (const [x0, y0, x1, y1] of motion) ctx.strokeRect(x0, y0, x1 - x0, y1 - y0);
    ctx.restore();
  }
  canvas.dataset.motion = String(motion.length);
  ctx.lineWidth = Math.max(2, Math.round(2 * k));
  ctx.font = `600 ${fontPx}px system-ui, -apple-system, "Segoe UI", sans-serif`;
  ctx.textBaseline = "top";
  const tracks = [];
  for (const d of dets) {
    const [x1, y1, x2, y2] = d.box;
    const tracked = d.track_id != null;
    const c = tracked ? trackColor(d.track_id) : colorOf(d.class_id);
    if (tracked) tracks.push(d.track_id);
    ctx.strokeStyle = c;
    ctx.strokeRect(x1, y1, x2 - x1, y2 - y1);
    const tag = (tracked ? `#${d.track_id} ` : "") + `${d.label} ${Math.round(d.score * 100)}%`;
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
  canvas.dataset.tracks = tracks.join(",");
  canvas.dataset.trails = String([...trails.values()].filter((t) => t.length > 1).length);
  canvas.dataset.resultFrame = r ? String(r.frame) : "";
  $("#view").classList.add("live");
  $("#view-badge").textContent = `#${frame} · ${pts.toFixed(2)} s` + (r && r.frame !== frame ? ` · boxes of #${r.frame}` : "");
  renderDets(dets);
}

// trailsOf returns, for each track id, its anchor points (oldest first) over the TRAIL_SECONDS
// up to result r, from the stream's kept results (in frame order; a looping file's PTS restarts,
// which cuts the trails there).
function trailsOf(r) {
  const out = new Map();
  for (const q of state.results.get(r.source) || []) {
    if (q.frame > r.frame || q.pts > r.pts || q.pts < r.pts - TRAIL_SECONDS) continue;
    for (const d of q.detections) {
      if (d.track_id == null) continue;
      let t = out.get(d.track_id);
      if (!t) out.set(d.track_id, (t = []));
      t.push([(d.box[0] + d.box[2]) / 2, d.box[3]]);
    }
  }
  return out;
}

// drawTrail draws a track's recent path fading out towards its oldest point, and a dot at the
// anchor now.
function drawTrail(t, color, k) {
  const n = t.length;
  ctx.strokeStyle = color;
  ctx.lineWidth = Math.max(2, Math.round(2.5 * k));
  for (let i = 1; i < n; i++) {
    ctx.globalAlpha = 0.25 + 0.75 * (i / (n - 1));
    ctx.beginPath();
    ctx.moveTo(t[i - 1][0], t[i - 1][1]);
    ctx.lineTo(t[i][0], t[i][1]);
    ctx.stroke();
  }
  ctx.globalAlpha = 1;
  ctx.fillStyle = color;
  ctx.beginPath();
  ctx.arc(t[n - 1][0], t[n - 1][1], Math.max(3, 3.5 * k), 0, 2 * Math.PI);
  ctx.fill();
}

function renderDets(dets) {
  const box = $("#dets");
  if (!dets.length) {
    box.innerHTML = '<span class="muted">nothing detected</span>';
    return;
  }
  box.replaceChildren(...[...dets].sort((a, b) => b.score - a.score).slice(0, 24).map((d) =>
    tag((d.track_id != null ? `#${d.track_id} ` : "") + d.label, `${Math.round(d.score * 100)}%`,
      d.track_id != null ? trackColor(d.track_id) : colorOf(d.class_id))));
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

// ---- zones and lines ----

// The overlay canvas lies exactly over the frame's canvas (same size, both object-fit: contain)
// and holds the selected stream's zones and lines with their counts and the shape being drawn.
const overlay = $("#overlay");
const octx = overlay.getContext("2d");
const FONT = 'system-ui, -apple-system, "Segoe UI", sans-serif';

// sceneView is the selected stream's scene (GET /api/streams/{id}/scene), once fetched.
function sceneView() {
  const sc = state.scene;
  return sc && sc.stream === state.selected ? sc.view : null;
}

let sceneSeq = 0;
async function refreshScene() {
  const id = state.selected;
  if (!id || document.hidden) return;
  const seq = ++sceneSeq;
  try {
    const v = await api(`/api/streams/${enc(id)}/scene`);
    if (seq === sceneSeq && id === state.selected) setScene(id, v);
  } catch (e) { /* the stream may be gone: the list says so */ }
}

// soonScene refreshes the counts shortly after an event on the selected stream.
let sceneTimer = null;
function soonScene() {
  if (!sceneTimer) sceneTimer = setTimeout(() => { sceneTimer = null; refreshScene(); }, 150);
}

function setScene(id, view) {
  state.scene = { stream: id, view };
  renderScene();
  drawOverlay();
}

// framePoints returns a shape's points in frame pixels.
function framePoints(pts, normalized) {
  return normalized ? pts.map(([x, y]) => [x * canvas.width, y * canvas.height]) : pts;
}

// Counts per zone or line, summed over classes (the API has one row per zone or line and class).
function zoneCounts(v, name) {
  const c = { objects: 0, enter: 0, leave: 0, loiter: 0 };
  for (const z of (v && v.counts && v.counts.zones) || []) {
    if (z.zone !== name) continue;
    c.objects += z.objects; c.enter += z.enter; c.leave += z.leave; c.loiter += z.loiter;
  }
  return c;
}

function lineCounts(v, name) {
  const c = { in: 0, out: 0 };
  for (const l of (v && v.counts && v.counts.lines) || []) {
    if (l.line !== name) continue;
    c.in += l.in; c.out += l.out;
  }
  return c;
}

// fit maps frame pixels to the page: the scale (CSS px per frame px) and the frame's top-left.
function fit() {
  const r = overlay.getBoundingClientRect();
  const W = canvas.width, H = canvas.height;
  const s = Math.min(r.width / W, r.height / H) || 1;
  return { s, x: r.left + (r.width - W * s) / 2, y: r.top + (r.height - H * s) / 2 };
}

function flashing(name, now) {
  const t = state.flash.get(name);
  return t !== undefined && now - t < 800;
}

function drawOverlay() {
  const W = canvas.width, H = canvas.height;
  if (overlay.width !== W || overlay.height !== H) {
    overlay.width = W;
    overlay.height = H;
  }
  const c = octx;
  c.clearRect(0, 0, W, H);
  const k = Math.max(1, 1 / fit().s); // frame px per CSS px
  const v = sceneView();
  const now = performance.now();
  const zones = (v && v.zones) || [];
  const lines = (v && v.lines) || [];
  c.lineJoin = "round";
  c.lineCap = "round";
  c.font = `600 ${Math.round(12 * k)}px ${FONT}`;
  for (const z of zones) {
    const pts = framePoints(z.polygon, z.normalized);
    const col = sceneColor(z.name);
    const hot = flashing(z.name, now);
    c.beginPath();
    pts.forEach(([x, y], i) => (i ? c.lineTo(x, y) : c.moveTo(x, y)));
    c.closePath();
    c.fillStyle = rgba(col, hot ? 0.4 : 0.22);
    c.fill();
    c.strokeStyle = col;
    c.lineWidth = Math.max(2, 2 * k) * (hot ? 1.75 : 1);
    c.stroke();
    let top = pts[0];
    for (const p of pts) if (p[1] < top[1] || (p[1] === top[1] && p[0] < top[0])) top = p;
    const n = zoneCounts(v, z.name);
    pill(`${z.name} · ${n.objects}`, top[0], top[1] - 3 * k, col, k, 0, -1);
  }
  for (const l of lines) {
    const [p1, p2] = framePoints(l.points, l.normalized);
    const col = sceneColor(l.name);
    const hot = flashing(l.name, now);
    c.strokeStyle = col;
    c.lineWidth = Math.max(3, 3 * k) * (hot ? 1.75 : 1);
    c.beginPath();
    c.moveTo(p1[0], p1[1]);
    c.lineTo(p2[0], p2[1]);
    c.stroke();
    c.fillStyle = col;
    for (const p of [p1, p2]) {
      c.beginPath();
      c.arc(p[0], p[1], 4 * k, 0, 2 * Math.PI);
      c.fill();
    }
    const n = lineCounts(v, l.name);
    lineArrow(p1, p2, col, k, `${l.name} · in ${n.in} · out ${n.out}`);
  }
  drawDraft(k);
  overlay.dataset.zones = String(zones.length);
  overlay.dataset.lines = String(lines.length);
  overlay.dataset.draft = state.draft ? String(state.draft.points.length) : "0";
}

// lineArrow marks a line's "in" side: in is a move from the left of P1→P2 to its right, with y
// down (docs/analytics.md), so it points along (−dy, dx). The label goes on the "out" side.
function lineArrow(p1, p2, col, k, label) {
  const c = octx;
  const dx = p2[0] - p1[0], dy = p2[1] - p1[1];
  const len = Math.hypot(dx, dy) || 1;
  const nx = -dy / len, ny = dx / len;
  const mx = (p1[0] + p2[0]) / 2, my = (p1[1] + p2[1]) / 2;
  const L = 30 * k, hd = 9 * k;
  const tx = mx + nx * L, ty = my + ny * L;
  c.strokeStyle = col;
  c.fillStyle = col;
  c.lineWidth = Math.max(2, 2.5 * k);
  c.beginPath();
  c.moveTo(mx, my);
  c.lineTo(tx - nx * hd * 0.6, ty - ny * hd * 0.6);
  c.stroke();
  c.beginPath();
  c.moveTo(tx, ty);
  c.lineTo(tx - nx * hd - ny * hd * 0.6, ty - ny * hd + nx * hd * 0.6);
  c.lineTo(tx - nx * hd + ny * hd * 0.6, ty - ny * hd - nx * hd * 0.6);
  c.closePath();
  c.fill();
  c.font = `700 ${Math.round(11 * k)}px ${FONT}`;
  c.textAlign = "center";
  c.textBaseline = "middle";
  c.lineWidth = 3 * k;
  c.strokeStyle = "rgba(0,0,0,.7)";
  c.strokeText("in", tx + nx * 9 * k, ty + ny * 9 * k);
  c.fillText("in", tx + nx * 9 * k, ty + ny * 9 * k);
  c.textAlign = "left";
  c.font = `600 ${Math.round(12 * k)}px ${FONT}`;
  if (label) pill(label, mx - nx * 12 * k, my - ny * 12 * k, col, k, -nx, -ny);
}

// pill draws a label on a colored rounded box next to (x, y), on the side (sx, sy) points to
// (−1…1 each; 0: centered), kept inside the frame.
function pill(text, x, y, col, k, sx, sy) {
  const c = octx;
  const pad = 5 * k, h = 19 * k;
  const w = c.measureText(text).width + 2 * pad;
  let bx = x - w / 2 + sx * w / 2, by = y - h / 2 + sy * h / 2;
  if (sx === 0 && sy === -1) bx = x; // zone labels start at their corner
  bx = Math.max(0, Math.min(canvas.width - w, bx));
  by = Math.max(0, Math.min(canvas.height - h, by));
  c.fillStyle = col;
  c.beginPath();
  c.roundRect(bx, by, w, h, 4 * k);
  c.fill();
  c.fillStyle = textOn(col);
  c.textBaseline = "middle";
  c.fillText(text, bx + pad, by + h / 2 + 0.5 * k);
}

function drawDraft(k) {
  const d = state.draft;
  if (!d || d.stream !== state.selected || !d.points.length) return;
  const c = octx;
  const pts = d.points;
  c.strokeStyle = "#ffffff";
  c.lineWidth = Math.max(2, 2 * k);
  c.setLineDash([7 * k, 5 * k]);
  c.beginPath();
  pts.forEach(([x, y], i) => (i ? c.lineTo(x, y) : c.moveTo(x, y)));
  if (d.closed && d.kind === "zone") c.closePath();
  else if (!d.closed && state.mouse) c.lineTo(state.mouse[0], state.mouse[1]);
  if (d.closed && d.kind === "zone") {
    c.fillStyle = "rgba(255,255,255,.16)";
    c.fill();
  }
  c.stroke();
  c.setLineDash([]);
  if (d.kind === "line" && pts.length === 2) lineArrow(pts[0], pts[1], "#ffffff", k, "");
  pts.forEach(([x, y], i) => {
    const first = i === 0 && d.kind === "zone" && !d.closed && pts.length >= 3;
    c.beginPath();
    c.arc(x, y, (first ? 7 : 4.5) * k, 0, 2 * Math.PI);
    c.fillStyle = first ? "rgba(76,201,240,.85)" : "#ffffff";
    c.fill();
    c.lineWidth = 1.5 * k;
    c.strokeStyle = "#0b0d12";
    c.stroke();
  });
}

// The list under the view: each zone and line with its counts and a delete button.
const shapes = new Map(); // "stream/kind/name" → element
function renderScene() {
  const list = $("#scene-list");
  $("#add-zone").disabled = $("#add-line").disabled = !state.selected;
  const v = sceneView();
  const items = v ? [...(v.zones || []).map((z) => ["zone", z]), ...(v.lines || []).map((l) => ["line", l])] : [];
  if (!items.length) {
    shapes.clear();
    const msg = !state.selected ? "–" : !v ? "…" : "None yet: draw one with Add zone or Add line.";
    if (list.textContent !== msg) list.innerHTML = `<span class="muted">${msg}</span>`;
    return;
  }
  const id = state.selected;
  const seen = new Set();
  const els = items.map(([kind, x]) => {
    const key = `${id}/${kind}/${x.name}`;
    seen.add(key);
    let el = shapes.get(key);
    if (!el) {
      el = document.createElement("div");
      el.className = "shape";
      el.dataset.kind = kind;
      el.dataset.name = x.name;
      el.innerHTML = `<i class="sw"></i><span class="nm"></span><b class="count"></b>
        <small class="more"></small><button class="ghost del" title="Delete this ${kind}">Delete</button>`;
      el.querySelector(".nm").textContent = x.name;
      el.querySelector(".sw").classList.add(kind);
      el.querySelector(".del").addEventListener("click", (ev) => deleteShape(id, kind, x.name, ev.currentTarget));
      shapes.set(key, el);
    }
    el.querySelector(".sw").style.background = sceneColor(x.name);
    const classes = x.classes && x.classes.length ? x.classes.join(", ") : "all classes";
    if (kind === "zone") {
      const n = zoneCounts(v, x.name);
      el.dataset.objects = n.objects;
      el.dataset.enter = n.enter;
      el.dataset.leave = n.leave;
      el.querySelector(".count").textContent = `${n.objects} inside`;
      el.querySelector(".more").textContent = `entered ${n.enter} · left ${n.leave}` +
        (n.loiter ? ` · loitered ${n.loiter}` : "") + ` · ${classes}`;
      el.title = `polygon ${JSON.stringify(x.polygon)}` + (x.normalized ? " (normalized)" : "");
    } else {
      const n = lineCounts(v, x.name);
      el.dataset.in = n.in;
      el.dataset.out = n.out;
      el.querySelector(".count").textContent = `in ${n.in} · out ${n.out}`;
      el.querySelector(".more").textContent = classes;
      el.title = `points ${JSON.stringify(x.points)}` + (x.normalized ? " (normalized)" : "");
    }
    return el;
  });
  for (const key of [...shapes.keys()]) if (!seen.has(key)) shapes.delete(key);
  const kids = list.children;
  if (kids.length !== els.length || els.some((e, i) => kids[i] !== e)) list.replaceChildren(...els);
}

function showSceneError(msg) {
  $("#scene-error").textContent = msg;
}

// sceneBody is a scene as PUT takes it: the declarations without the counts.
function sceneBody(v) {
  const b = Object.assign({}, v);
  delete b.counts;
  b.zones = [...(v.zones || [])];
  b.lines = [...(v.lines || [])];
  return b;
}

// putScene reads the stream's scene afresh, lets change edit it and replaces it.
async function putScene(id, change) {
  const url = `/api/streams/${enc(id)}/scene`;
  const body = sceneBody(await api(url));
  change(body);
  const v = await api(url, { method: "PUT", json: body });
  if (id === state.selected) setScene(id, v);
  return v;
}

async function deleteShape(id, kind, name, btn) {
  if (btn.dataset.armed !== "1") { // a second click confirms
    btn.dataset.armed = "1";
    btn.textContent = "Delete?";
    btn.classList.add("armed");
    setTimeout(() => { btn.dataset.armed = ""; btn.textContent = "Delete"; btn.classList.remove("armed"); }, 5000);
    return;
  }
  btn.disabled = true;
  showSceneError("");
  try {
    await putScene(id, (b) => {
      if (kind === "zone") b.zones = b.zones.filter((z) => z.name !== name);
      else b.lines = b.lines.filter((l) => l.name !== name);
    });
    toast(`Deleted ${kind} ${name}`);
  } catch (e) {
    showSceneError(e.message);
  } finally {
    btn.disabled = false;
  }
}

// ---- the editor ----

function startDraft(kind) {
  if (!state.selected) return;
  state.draft = { stream: state.selected, kind, points: [], closed: false };
  state.mouse = null;
  const v = sceneView();
  const taken = new Set([...((v && v.zones) || []), ...((v && v.lines) || [])].map((x) => x.name));
  let i = 1;
  while (taken.has(`${kind}${i}`)) i++;
  $("#draft-name").value = `${kind}${i}`;
  $("#draft-classes").value = "";
  $("#draft-save").textContent = `Save ${kind}`;
  $("#scene-editor").hidden = false;
  $("#scene-editor").dataset.kind = kind;
  $("#view").classList.add("drawing");
  showSceneError("");
  updateDraft();
}

function cancelDraft() {
  state.draft = null;
  state.mouse = null;
  $("#scene-editor").hidden = true;
  $("#view").classList.remove("drawing");
  $("#draw-hint").textContent = "";
  drawOverlay();
}

function updateDraft() {
  const d = state.draft;
  if (!d) return;
  const n = d.points.length;
  let hint;
  if (d.kind === "zone") {
    hint = d.closed ? `Zone closed, ${n} points: name it and save.`
      : n < 3 ? `Click the zone's corners on the frame (${n} so far).`
        : `${n} points: double-click, or click the first point, to close.`;
  } else {
    hint = d.closed ? "The arrow points to the line's “in” side: name it and save."
      : n === 0 ? "Click the line's first end on the frame." : "Click its other end.";
  }
  $("#draft-hint").textContent = hint;
  $("#draw-hint").textContent = hint;
  $("#draft-undo").disabled = n === 0;
  overlay.dataset.closed = d.closed ? "1" : "";
  drawOverlay();
}

function undoPoint() {
  const d = state.draft;
  if (!d || !d.points.length) return;
  d.points.pop();
  d.closed = false;
  updateDraft();
}

// framePoint is where a mouse event falls on the frame, in whole frame pixels, kept inside it.
function framePoint(ev) {
  const f = fit();
  const x = Math.min(canvas.width, Math.max(0, (ev.clientX - f.x) / f.s));
  const y = Math.min(canvas.height, Math.max(0, (ev.clientY - f.y) / f.s));
  return { p: [Math.round(x), Math.round(y)], s: f.s };
}

overlay.addEventListener("click", (ev) => {
  const d = state.draft;
  if (!d || d.closed) return;
  const { p, s } = framePoint(ev);
  const near = (q, cssPx) => Math.hypot(q[0] - p[0], q[1] - p[1]) * s <= cssPx;
  if (d.kind === "zone" && d.points.length >= 3 && near(d.points[0], 10)) {
    d.closed = true;
  } else if (d.points.length && near(d.points[d.points.length - 1], 4)) {
    return; // the second click of a double-click
  } else {
    d.points.push(p);
    if (d.kind === "line" && d.points.length === 2) d.closed = true;
  }
  updateDraft();
});

overlay.addEventListener("dblclick", (ev) => {
  ev.preventDefault();
  const d = state.draft;
  if (d && d.kind === "zone" && !d.closed && d.points.length >= 3) {
    d.closed = true;
    updateDraft();
  }
});

overlay.addEventListener("mousemove", (ev) => {
  if (!state.draft || state.draft.closed) return;
  state.mouse = framePoint(ev).p;
  drawOverlay();
});

overlay.addEventListener("mouseleave", () => {
  state.mouse = null;
  drawOverlay();
});

document.addEventListener("keydown", (ev) => {
  if (!state.draft) return;
  if (ev.key === "Escape") cancelDraft();
  else if (ev.key === "Backspace" && !(ev.target instanceof HTMLInputElement)) {
    ev.preventDefault();
    undoPoint();
  }
});

$("#add-zone").addEventListener("click", () => startDraft("zone"));
$("#add-line").addEventListener("click", () => startDraft("line"));
$("#draft-cancel").addEventListener("click", cancelDraft);
$("#draft-undo").addEventListener("click", undoPoint);

// Save sends the shape as drawn, closed or not: the API validates it, and its reason (422) is
// shown under the editor.
$("#scene-editor").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const d = state.draft;
  if (!d) return;
  const name = $("#draft-name").value.trim();
  const classes = $("#draft-classes").value.split(/[\s,]+/).filter(Boolean);
  const shape = d.kind === "zone" ? { name, polygon: d.points } : { name, points: d.points };
  if (classes.length) shape.classes = classes;
  showSceneError("");
  $("#draft-save").disabled = true;
  try {
    await putScene(d.stream, (b) => (d.kind === "zone" ? b.zones : b.lines).push(shape));
    toast(`Saved ${d.kind} ${name}`);
    if (state.draft === d) cancelDraft();
  } catch (e) {
    showSceneError(e.status ? `${e.status}: ${e.message}` : e.message);
  } finally {
    $("#draft-save").disabled = false;
  }
});

// ---- event list ----

function connectFeed() {
  if (state.feed) state.feed.close();
  const es = new EventSource(withToken("/api/events?type=all"));
  es.addEventListener("event", (m) => {
    let ev;
    try { ev = JSON.parse(m.data); } catch { return; }
    addEvent(ev);
  });
  state.feed = es;
}

let eventsSeen = 0;
function addEvent(ev) {
  eventsSeen++;
  const li = document.createElement("li");
  li.className = "ev";
  li.dataset.type = ev.type;
  li.dataset.stream = ev.stream;
  li.innerHTML = `<div class="l1"><time class="mono"></time><span class="ty"></span><b class="where"></b></div>
    <div class="l2"><span class="st"></span><span class="trk"><i></i><span></span></span><span class="detail"></span></div>`;
  li.querySelector("time").textContent = clock(ev.time);
  li.title = `${ev.time} · frame ${ev.frame} · pts ${fmt(ev.pts, 2)} s · score ${fmt(ev.score, 2)}`;
  li.querySelector(".ty").textContent = ev.type;
  li.querySelector(".ty").classList.add(ev.type.split(".").pop());
  const where = ev.zone || ev.line || "";
  li.querySelector(".where").textContent = where;
  if (where) li.dataset.where = where;
  li.querySelector(".detail").textContent = ev.direction ? `→ ${ev.direction}`
    : ev.dwell != null ? `dwell ${fmt(ev.dwell, 1)} s` : "";
  li.querySelector(".st").textContent = ev.stream;
  li.querySelector(".trk i").style.background = trackColor(ev.track_id);
  li.querySelector(".trk span").textContent = `#${ev.track_id} ${ev.label}`;
  const list = $("#events-list");
  list.prepend(li);
  while (list.children.length > EVENTS_KEPT) list.lastElementChild.remove();
  $("#events-empty").hidden = true;
  $("#events-count").textContent = eventsSeen > EVENTS_KEPT ? `last ${EVENTS_KEPT} of ${eventsSeen}` : String(eventsSeen);
  if (ev.stream === state.selected) {
    if (where) state.flash.set(where, performance.now());
    soonScene();
  }
}

$("#events-clear").addEventListener("click", () => {
  $("#events-list").replaceChildren();
  eventsSeen = 0;
  $("#events-count").textContent = "";
  $("#events-empty").hidden = false;
});

// clock is an event's wall-clock time in local time with milliseconds.
function clock(t) {
  const d = new Date(t);
  if (Number.isNaN(d.getTime())) return String(t);
  const p = (n, w = 2) => String(n).padStart(w, "0");
  return `${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}.${p(d.getMilliseconds(), 3)}`;
}

// ---- streams ----

function select(id) {
  if (id !== state.selected) {
    cancelDraft();
    state.scene = null;
    showSceneError("");
  }
  state.selected = id;
  localStorage.setItem("vinfer.selected", id);
  $("#view").classList.remove("live");
  canvas.dataset.frame = "-1";
  canvas.dataset.boxes = "0";
  renderStreams();
  renderView();
  renderScene();
  refreshScene();
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
        <span><b class="lat"></b> ms</span><span><b class="drop"></b> drops</span>
        <span class="act" hidden></span></div></div>
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
    const h = health(s);
    c.querySelector(".dot").className = "dot " + stateClass(h.st);
    c.querySelector(".dot").title = h.why ? `${h.st}: ${h.why}` : h.st;
    c.querySelector(".src").textContent = s.source;
    c.querySelector(".src").title = s.source;
    c.querySelector(".fps").textContent = fmt(s.inferred_fps);
    c.querySelector(".lat").textContent = fmt(s.latency_ms, 0);
    c.querySelector(".drop").textContent = dropsOf(s) - (s.dropped.interval || 0) - (s.dropped.fps_cap || 0);
    renderActivity(c.querySelector(".act"), s.activity_state);
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
  const active = state.streams.filter((s) => ["running", "starting", "degraded"].includes(s.state)).length;
  $("#total-streams").textContent = active;
  $("#total-streams-label").textContent = active === 1 ? "stream" : "streams";
  $("#total-fps").textContent = fmt(state.streams.reduce((a, s) => a + (s.inferred_fps || 0), 0));
}

// renderActivity shows a gated stream's activity state (full, gated, idle: docs/activity.md),
// its motion and the frames the gate spared; hidden for a stream without gating.
function renderActivity(el, a) {
  el.hidden = !a;
  if (!a) return;
  el.dataset.state = a.state;
  el.textContent = `${a.state} · motion ${fmt(100 * a.motion_fraction, 1)}% · ${a.frames_gated} gated` +
    (a.parked ? " · no decoder" : "");
  el.title = a.idle_off ? `idle decoding off: ${a.idle_off}` :
    `${a.mode}: ${a.wakes} wakes, ${a.key_frame_probes} key frames probed while idle` +
    (a.woke_results ? `, wake → first result ${fmt(a.wake_ms, 0)} ms (max ${fmt(a.wake_max_ms, 0)})` : "");
}

function stateClass(st) {
  return { running: "ok", starting: "warn", connecting: "warn", waiting_keyframe: "warn", stalled: "bad",
    degraded: "warn", failed: "bad", ended: "idle", stopped: "idle" }[st] || "";
}

// health is what a stream's dot and state say: a live source's own health (connecting,
// waiting_keyframe, running, stalled) while the pipeline runs it, else the pipeline's state;
// why is the reason or hint the source gives.
function health(s) {
  const src = s.source_stats;
  if (src && src.State && (s.state === "running" || s.state === "starting")) {
    return { st: src.State, why: [src.Reason, src.Hint].filter(Boolean).join("; ") };
  }
  if (s.state === "degraded" && s.overload) {
    return { st: s.state, why: `${Math.round(100 * s.overload.drop_ratio)}% of frames not analysed over ${s.overload.window_seconds}s (inference behind)` };
  }
  let why = s.error || "";
  if (s.retry) {
    why += ` (attempt ${s.retry.attempts} failed` + (s.retry.next_attempt ?
      `, next at ${new Date(s.retry.next_attempt).toLocaleTimeString()})` : ")");
  }
  return { st: s.state, why };
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
  const h = health(s);
  $("#view-state").textContent = h.why ? `${h.st}: ${h.why}` : h.st;
  $("#view-state").title = $("#view-state").textContent; // the whole reason, when cut short
  $("#view-state").className = "state " + h.st;
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
    if (m.batch === "1") parts.push("batch 1 (fixed)");
    else if (m.max_batch) parts.push(`batch ≤ ${m.max_batch}` + (m.batch && m.batch !== "dynamic" ? " (rewritten from 1)" : ""));
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
      refreshScene();
    }
    if (state.draft && state.draft.stream !== state.selected) cancelDraft();
    renderStreams();
    renderView();
    renderScene();
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
    chip.querySelector(".dot").className = "dot " + (r.ready ? (r.failed || r.degraded ? "warn" : "ok") : "warn");
    chip.querySelector("span").textContent = r.ready ? "ready" : "not ready";
    chip.title = [...(r.waiting || []), ...(r.starting || []), ...(r.failed || []), ...(r.degraded || [])]
      .join("\n") || "models loaded, API serving, every stream running";
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
setInterval(refreshScene, 1000);
liveLoop();
