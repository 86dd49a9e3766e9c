// vinfer live video: the stream's own coded video over WebRTC (WHEP offer/answer to
// /api/streams/{id}/whep), decoded by the browser, with each frame's results drawn on a canvas
// over the <video> at that frame's presentation: the server stamps RTP timestamps with the
// frame's PTS (90 kHz) and sends the results, with the same PTS, on the "results" data channel;
// requestVideoFrameCallback tells the RTP timestamp of the frame being shown. A stream with
// B-frames (which browsers' WebRTC decoders drop) comes as fragmented MP4 over a WebSocket to
// Media Source Extensions instead, the results on the same socket, the frame's PTS from its media
// time. When the browser cannot play the stream's codec the page says so and shows snapshots.
// No build step.
"use strict";

const $ = (sel) => document.querySelector(sel);
const enc = encodeURIComponent;
const TICKS = 90000; // RTP clock of video, Hz (RFC 3551)
const KEEP = 600; // results and presented frames kept (a minute at 10 fps)
const PALETTE = ["#4cc9f0", "#f72585", "#7be06a", "#ffb703", "#b58cff", "#ff7043",
  "#06d6a0", "#ef476f", "#3a86ff", "#e9ff70", "#ff99c8", "#8eecf5"];
const trackColor = (id) => `hsl(${(Math.abs(id | 0) * 137.508) % 360}, 85%, 60%)`;
const TRAIL_TICKS = 2 * TICKS;

// lv is the page's state; window.vinferLive shows it to tests and the curious.
const lv = {
  token: pageToken(),
  stream: new URLSearchParams(location.search).get("stream") || localStorage.getItem("vinfer.selected") || "",
  mode: "", // "webrtc", "mse", "snapshots" or "" while connecting
  ws: null, // the fragmented MP4 socket (mode mse)
  offset: 0, // mse: media time × 90 kHz − offset = PTS in RTP ticks
  reorder: 0, // mse: seconds the newest PTS may run ahead of the last complete picture (B-frames)
  lead: 0, // mse: seconds the smallest PTS − DTS so far falls below 0 (≤ 0)
  lastDTS: -Infinity, // mse: media time (s) of the newest fragment's decode time
  done: null, // mse: media time (s) where the run of pictures all in ends, null before the first
  pending: [], // mse: samples {pts, dur} (ticks) come past a picture still to come
  frameDur: 0, // mse: the last picture's duration, s
  arrived: new Map(), // mse: PTS in RTP ticks → performance.now() when its fragment came
  pc: null,
  session: "", // the WHEP session URL, for DELETE
  results: new Map(), // PTS in RTP ticks → result
  presented: new Map(), // PTS in RTP ticks → performance.now() when shown without its result
  scene: null,
  targetMs: 100, // the receiver's jitter buffer target: video held back so results are in first
  raisedAt: 0, // performance.now() of the last raise of targetMs
  lateAt: 0, // performance.now() of the last frame shown before its result
  raises: [], // per raise of targetMs: [performance.now(), ms the result came after its frame]
  behind: 0, // mse: seconds the play head is behind the newest complete picture
  trace: [], // mse: every 200 ms [performance.now(), ms behind the newest complete picture, readyState, ms behind the buffered end]
  jumps: 0, // mse: play head moves to catch up
  frames: [], // per presented frame: {ts, resultTs, boxes, shownAt (epoch ms), lateMs}
  note: "",
};
window.vinferLive = lv;

const video = $("#lv-video");
const canvas = $("#lv-canvas");
const ctx = canvas.getContext("2d");

function status(text, cls) {
  const el = $("#lv-status");
  el.querySelector("span").textContent = text;
  el.querySelector(".dot").className = "dot " + (cls || "");
}

function note(text) {
  lv.note = text;
  $("#lv-note").textContent = text;
}

const ticksOf = (pts) => Math.round(pts * TICKS);

function keep(map, key, value) {
  map.set(key, value);
  if (map.size > KEEP) map.delete(map.keys().next().value);
}

// onResult files a result under its PTS; one whose frame was shown before it came raises the
// video's delay (the jitter buffer target) so that the next frames wait for their results.
function onResult(text) {
  let r;
  try { r = JSON.parse(text); } catch { return; }
  if (r.pts == null || r.end) return;
  const ts = ticksOf(r.pts);
  keep(lv.results, ts, r);
  const shown = lv.presented.get(ts);
  if (shown !== undefined) {
    const late = performance.now() - shown;
    lv.presented.delete(ts);
    // Raise once per second at most: a raise takes a few frames to show, and the frames shown
    // meanwhile are late too.
    const now = performance.now();
    lv.lateAt = now;
    if (now - lv.raisedAt < 1000) return;
    // MSE moves the play head back at a tenth of real time: while it is still short of the
    // target, the frames it shows are late from the raise under way, not from a new one.
    if (lv.mode === "mse" && lv.behind < lv.targetMs / 1000 - 0.05) return;
    lv.raisedAt = now;
    setTarget(Math.min(3000, lv.targetMs + late + 20));
    lv.raises.push([Math.round(now), Math.round(late)]);
    if (lv.raises.length > KEEP) lv.raises.shift();
  }
}

// setTarget sets the video's delay: the WebRTC receiver's jitter buffer target, or for MSE the
// distance follow() keeps from the newest frame.
function setTarget(ms) {
  lv.targetMs = ms;
  $("#lv-lag").textContent = String(Math.round(ms));
  if (lv.mode !== "webrtc") return;
  const rx = lv.pc && lv.pc.getReceivers()[0];
  if (rx && "jitterBufferTarget" in rx) rx.jitterBufferTarget = ms;
}

// ease lowers the delay by a tenth every 2 s in which no frame came before its result, so that
// a burst of late results (a model reload, a busy machine) does not hold the video back for good.
setInterval(() => {
  if (performance.now() - lv.lateAt > 2000 && lv.targetMs > 60) setTarget(Math.max(60, lv.targetMs * 0.9));
}, 2000);

// resultFor returns the result of the frame at ts, else the latest one up to two frames before
// it (a stream inferring every n-th frame), else null.
function resultFor(ts) {
  const r = lv.results.get(ts);
  if (r) return r;
  let best = null, bestTs = -Infinity;
  for (const [k, v] of lv.results) if (k <= ts && k > bestTs && ts - k <= 0.25 * TICKS) { best = v; bestTs = k; }
  return best;
}

function onFrame(now, meta) {
  video.requestVideoFrameCallback(onFrame);
  const ts = lv.mode === "mse" ? Math.round(meta.mediaTime * TICKS) - lv.offset : meta.rtpTimestamp;
  if (ts == null || Number.isNaN(ts)) return;
  const r = resultFor(ts);
  if (!r || ticksOf(r.pts) !== ts) keep(lv.presented, ts, performance.now());
  draw(r, ts, meta.width, meta.height);
  const shownAt = performance.timeOrigin + (meta.expectedDisplayTime || now);
  lv.frames.push({ ts, resultTs: r ? ticksOf(r.pts) : null, boxes: r ? r.detections.map((d) => d.box) : [],
    shownAt, arrivedAt: lv.arrived.has(ts) ? performance.timeOrigin + lv.arrived.get(ts) : null, captureAt: meta.captureTime ? performance.timeOrigin + meta.captureTime : null,
    wallclock: r && r.wallclock ? Date.parse(r.wallclock) : null });
  if (lv.frames.length > KEEP) lv.frames.shift();
}

function trails(ts) {
  const out = new Map();
  for (const [k, q] of lv.results) {
    if (k > ts || k < ts - TRAIL_TICKS) continue;
    for (const d of q.detections) {
      if (d.track_id == null) continue;
      if (!out.has(d.track_id)) out.set(d.track_id, []);
      out.get(d.track_id).push([k, (d.box[0] + d.box[2]) / 2, d.box[3]]);
    }
  }
  for (const t of out.values()) t.sort((a, b) => a[0] - b[0]);
  return out;
}

// draw paints result r (boxes, track ids and trails) and the scene (zones, lines, counts) in
// frame pixels over the frame at ts.
function draw(r, ts, w, h) {
  w = (r && r.width) || w || video.videoWidth;
  h = (r && r.height) || h || video.videoHeight;
  if (!w || !h) return;
  if (canvas.width !== w || canvas.height !== h) { canvas.width = w; canvas.height = h; }
  ctx.clearRect(0, 0, w, h);
  const k = Math.max(1, w / Math.max(1, canvas.clientWidth));
  drawScene(k);
  const dets = r ? r.detections : [];
  ctx.lineWidth = Math.max(2, Math.round(2 * k));
  for (const [id, t] of trails(ts)) {
    if (t.length < 2) continue;
    ctx.strokeStyle = trackColor(id);
    ctx.beginPath();
    t.forEach(([, x, y], i) => (i ? ctx.lineTo(x, y) : ctx.moveTo(x, y)));
    ctx.stroke();
  }
  const font = Math.round(12.5 * k);
  ctx.font = `600 ${font}px system-ui, sans-serif`;
  ctx.textBaseline = "top";
  for (const d of dets) {
    const [x1, y1, x2, y2] = d.box;
    const c = d.track_id != null ? trackColor(d.track_id) : PALETTE[Math.abs(d.class_id | 0) % PALETTE.length];
    ctx.strokeStyle = c;
    ctx.strokeRect(x1, y1, x2 - x1, y2 - y1);
    const tag = (d.track_id != null ? `#${d.track_id} ` : "") + `${d.label} ${Math.round(d.score * 100)}%`;
    const tw = ctx.measureText(tag).width + 6 * k;
    const ty = y1 - font - 6 * k < 0 ? y1 : y1 - font - 6 * k;
    ctx.fillStyle = c;
    ctx.fillRect(x1, ty, tw, font + 6 * k);
    ctx.fillStyle = "#0b0d12";
    ctx.fillText(tag, x1 + 3 * k, ty + 3 * k);
  }
  canvas.dataset.pts = String(ts / TICKS);
  canvas.dataset.resultPts = r ? String(r.pts) : "";
  canvas.dataset.boxes = String(dets.length);
  $("#lv-badge").textContent = `${(ts / TICKS).toFixed(2)} s` + (r && ticksOf(r.pts) !== ts ? ` · boxes of ${r.pts.toFixed(2)} s` : "");
}

// drawScene outlines the stream's zones and lines with their names and counts (GET …/scene,
// refreshed every 2 s: objects in each zone, crossings of each line in and out, over every
// class); normalized points are scaled to the frame.
function drawScene(k) {
  const s = lv.scene;
  if (!s) return;
  const counts = s.counts || {};
  const sum = (rows, key, name, f) => (rows || []).filter((r) => r[key] === name).reduce((a, r) => a + (r[f] || 0), 0);
  const px = (shape) => (shape.polygon || shape.points || []).map(([x, y]) =>
    shape.normalized ? [x * canvas.width, y * canvas.height] : [x, y]);
  ctx.lineWidth = Math.max(1, Math.round(1.5 * k));
  for (const z of s.zones || []) {
    const p = px(z);
    if (p.length < 3) continue;
    ctx.strokeStyle = "#ffb703";
    ctx.fillStyle = "rgba(255,183,3,0.12)";
    ctx.beginPath();
    p.forEach(([x, y], i) => (i ? ctx.lineTo(x, y) : ctx.moveTo(x, y)));
    ctx.closePath();
    ctx.fill();
    ctx.stroke();
    label(`${z.name} · ${sum(counts.zones, "zone", z.name, "objects")}`, p[0][0], p[0][1], k);
  }
  for (const l of s.lines || []) {
    const p = px(l);
    if (p.length < 2) continue;
    ctx.strokeStyle = "#06d6a0";
    ctx.beginPath();
    p.forEach(([x, y], i) => (i ? ctx.lineTo(x, y) : ctx.moveTo(x, y)));
    ctx.stroke();
    label(`${l.name} · in ${sum(counts.lines, "line", l.name, "in")} out ${sum(counts.lines, "line", l.name, "out")}`, p[0][0], p[0][1], k);
  }
}

function label(text, x, y, k) {
  ctx.font = `600 ${Math.round(12 * k)}px system-ui, sans-serif`;
  ctx.fillStyle = "rgba(0,0,0,.6)";
  ctx.fillRect(x, y, ctx.measureText(text).width + 6 * k, 16 * k);
  ctx.fillStyle = "#fff";
  ctx.fillText(text, x + 3 * k, y + 2 * k);
}

async function api(path, opts = {}) {
  return apiRequest(path, Object.assign({ token: lv.token, onUnauthorized: askToken }, opts));
}

// askToken shows the token form (request.js), then starts again with the token entered.
function askToken() {
  status(lv.token ? "token refused" : "token needed", "warn");
  promptToken(tokenEntered);
}

function tokenEntered(token) {
  lv.token = token;
  start();
}

// whep sends the offer (candidates gathered: no trickle) and returns the response.
async function whep(pc) {
  await pc.setLocalDescription(await pc.createOffer());
  await new Promise((done) => {
    if (pc.iceGatheringState === "complete") return done();
    pc.addEventListener("icegatheringstatechange", () => pc.iceGatheringState === "complete" && done());
    setTimeout(done, 3000);
  });
  const headers = { "Content-Type": "application/sdp" };
  if (lv.token) headers.Authorization = "Bearer " + lv.token;
  return fetch(`/api/streams/${enc(lv.stream)}/whep`, { method: "POST", headers, body: pc.localDescription.sdp });
}

async function connect() {
  if (new URLSearchParams(location.search).get("via") === "mse") return connectMSE();
  if (typeof RTCPeerConnection === "undefined" || !("requestVideoFrameCallback" in HTMLVideoElement.prototype)) {
    return snapshots("This browser has no WebRTC or no requestVideoFrameCallback: showing snapshots with the server's boxes.");
  }
  const pc = new RTCPeerConnection();
  lv.pc = pc;
  pc.addTransceiver("video", { direction: "recvonly" });
  const dc = pc.createDataChannel("results");
  dc.onmessage = (m) => onResult(m.data);
  pc.ontrack = (ev) => {
    ev.receiver.jitterBufferTarget = lv.targetMs;
    video.srcObject = ev.streams[0] || new MediaStream([ev.track]);
    video.play().catch(() => {});
  };
  pc.onconnectionstatechange = () => {
    const st = pc.connectionState;
    status(st === "connected" ? "live · WebRTC" : st, st === "connected" ? "ok" : st === "failed" ? "bad" : "warn");
    if ((st === "failed" || st === "closed") && lv.pc === pc) setTimeout(start, 2000);
  };
  const res = await whep(pc);
  const text = await res.text();
  if (res.status === 401) { pc.close(); return askToken(); }
  if (res.status === 422) { // B-frames: fragmented MP4 to Media Source Extensions
    pc.close();
    lv.pc = null;
    return connectMSE();
  }
  if (res.status === 415) { // no codec of the stream over WebRTC here: MSE may have it
    pc.close();
    lv.pc = null;
    return connectMSE();
  }
  if (res.status !== 201) {
    pc.close();
    let why = text;
    try { why = JSON.parse(text).error; } catch { /* as sent */ }
    status(`${res.status}`, "bad");
    note(why);
    if (res.status === 503) setTimeout(start, 5000);
    return;
  }
  lv.session = res.headers.get("Location") || "";
  lv.mode = "webrtc";
  await pc.setRemoteDescription({ type: "answer", sdp: text });
  video.requestVideoFrameCallback(onFrame);
}

// fragmentTimes returns the decode time and per sample the presentation time and duration
// (90 kHz ticks, media time) of a fragment from its moof (ISO/IEC 14496-12 §8.8: tfdt, trun),
// or null.
function fragmentTimes(buf) {
  const v = new DataView(buf);
  let dts = null;
  const samples = [];
  const walk = (at, end) => {
    while (at + 8 <= end) {
      const size = v.getUint32(at), type = String.fromCharCode(v.getUint8(at + 4), v.getUint8(at + 5), v.getUint8(at + 6), v.getUint8(at + 7));
      if (size < 8 || at + size > end) return;
      if (type === "moof" || type === "traf") walk(at + 8, at + size);
      else if (type === "tfdt") dts = v.getUint8(at + 8) === 1 ? Number(v.getBigUint64(at + 12)) : v.getUint32(at + 12);
      else if (type === "trun" && dts !== null) {
        const ver = v.getUint8(at + 8), flags = v.getUint32(at + 8) & 0xffffff, n = v.getUint32(at + 12);
        let p = at + 16 + (flags & 1 ? 4 : 0) + (flags & 4 ? 4 : 0), t = dts;
        for (let i = 0; i < n && i < 64 && p <= at + size; i++) {
          let d = 0, cto = 0;
          if (flags & 0x100) { d = v.getUint32(p); p += 4; }
          if (flags & 0x200) p += 4;
          if (flags & 0x400) p += 4;
          if (flags & 0x800) { cto = ver ? v.getInt32(p) : v.getUint32(p); p += 4; }
          samples.push({ pts: t + cto, dur: d });
          t += d;
        }
      }
      at += size;
    }
  };
  try { walk(0, v.byteLength); } catch { return null; }
  return dts === null ? null : { dts, samples };
}

// complete advances lv.done, the end (media time, s) of the run of pictures that are all in,
// over the samples of a fragment come in decode order; a picture that never comes (lost
// upstream) holds it back only until the newest DTS passes it.
function complete(samples) {
  const q = lv.pending;
  for (const s of samples) q.push(s);
  if (!q.length) return;
  q.sort((a, b) => a.pts - b.pts);
  let done = lv.done === null ? q[0].pts : lv.done * TICKS;
  done = Math.max(done, (lv.lastDTS + lv.lead) * TICKS);
  while (q.length && q[0].pts <= done + q[0].dur / 2) {
    const s = q.shift();
    done = Math.max(done, s.pts + s.dur);
    if (s.dur > 0) lv.frameDur = s.dur / TICKS;
  }
  lv.done = done / TICKS;
  if (q.length > 300) q.splice(0, q.length - 300);
}

// connectMSE plays the stream as fragmented MP4 over a WebSocket (GET …/mse): a text message
// {"type":"init","mime","offset"}, the init segment, then a fragment per access unit (binary),
// the results between them (text). The play head is kept targetMs behind the newest frame so
// that each frame's results are in before it is shown.
function connectMSE() {
  if (typeof MediaSource === "undefined") {
    return snapshots("This browser has no Media Source Extensions for this stream's video (it has B-frames): showing snapshots with the server's boxes.");
  }
  const proto = location.protocol === "https:" ? "wss:" : "ws:";
  const ws = new WebSocket(tokenURL(`${proto}//${location.host}/api/streams/${enc(lv.stream)}/mse`, lv.token));
  ws.binaryType = "arraybuffer";
  lv.ws = ws;
  lv.mode = "mse";
  const queue = [];
  let sb = null;
  const pump = () => {
    if (sb && !sb.updating && queue.length) {
      try { sb.appendBuffer(queue.shift()); } catch (e) { note(String(e)); ws.close(); }
    }
  };
  ws.onmessage = (m) => {
    if (typeof m.data !== "string") {
      if (queue.length > 300) { ws.close(); return; } // the page cannot keep up: start over
      const ft = fragmentTimes(m.data);
      if (ft) {
        lv.lastDTS = ft.dts / TICKS;
        for (const s of ft.samples) keep(lv.arrived, s.pts - lv.offset, performance.now());
        complete(ft.samples);
      }
      queue.push(m.data);
      pump();
      return;
    }
    let msg;
    try { msg = JSON.parse(m.data); } catch { return; }
    if (msg.type === "reorder") { lv.reorder = msg.ticks / TICKS; lv.lead = Math.min(0, (msg.lead || 0) / TICKS); return; }
    if (msg.type !== "init") return onResult(m.data);
    if (!MediaSource.isTypeSupported(msg.mime)) {
      ws.close();
      return snapshots(`This browser cannot play this stream's video (${msg.mime}): showing snapshots with the server's boxes.`);
    }
    lv.offset = msg.offset;
    lv.done = null;
    lv.pending = [];
    lv.lastDTS = -Infinity;
    const ms = new MediaSource();
    video.srcObject = null;
    video.src = URL.createObjectURL(ms);
    ms.addEventListener("sourceopen", () => {
      sb = ms.addSourceBuffer(msg.mime);
      sb.mode = "segments";
      sb.addEventListener("updateend", pump);
      pump();
    }, { once: true });
    video.requestVideoFrameCallback(onFrame);
    status("live · MSE", "ok");
  };
  ws.onclose = () => { if (lv.ws === ws && lv.mode === "mse") { status("reconnecting", "warn"); setTimeout(start, 2000); } };
  const follow = () => {
    if (lv.ws !== ws) return;
    const b = video.buffered;
    if (b.length) {
      // The end of the newest complete picture: the run of pictures all in, else (a picture
      // lost) what decode order bounds: no PTS runs more than reorder past the buffered end,
      // and every picture with a PTS up to the newest DTS + lead is in.
      const end = b.end(b.length - 1);
      // A decoder of B-frames gives out a picture when the next in decode order is in (H.264
      // §C.4.5.3 bumping with one frame of reorder): a frame less than the run all in.
      const held = lv.reorder > 0 ? lv.frameDur : 0;
      const edge = Math.min(end, Math.max(lv.done === null ? -Infinity : lv.done - held, end - lv.reorder + lv.lead, lv.lastDTS + lv.lead));
      const behind = edge - video.currentTime;
      lv.behind = behind;
      lv.trace.push([Math.round(performance.now()), Math.round(behind * 1000), video.readyState, Math.round((end - video.currentTime) * 1000)]);
      if (lv.trace.length > KEEP) lv.trace.shift();
      const want = lv.targetMs / 1000;
      if (behind > want + 0.6 || video.currentTime < b.start(b.length - 1)) {
        video.currentTime = Math.max(b.start(b.length - 1), edge - want);
        lv.jumps++;
      }
      else video.playbackRate = behind > want + 0.05 ? 1.1 : behind < want - 0.05 ? 0.9 : 1;
      if (video.paused) video.play().catch(() => {});
      if (sb && !sb.updating && b.start(0) < video.currentTime - 30) sb.remove(0, video.currentTime - 20);
    }
    $("#lv-lag").textContent = String(Math.round(lv.targetMs));
    setTimeout(follow, 200);
  };
  follow();
}

// snapshots shows the server's snapshots (boxes drawn there) when video cannot play, saying why.
async function snapshots(why) {
  lv.mode = "snapshots";
  note(why);
  status("snapshots", "warn");
  video.hidden = true;
  canvas.hidden = true;
  const img = $("#lv-snap");
  img.hidden = false;
  const stream = lv.stream;
  while (lv.mode === "snapshots" && stream === lv.stream) {
    try {
      const res = await api(`/api/streams/${enc(stream)}/snapshot.jpg?quality=80`, { raw: true });
      if (res.ok) {
        const url = URL.createObjectURL(await res.blob());
        const old = img.src;
        img.src = url;
        if (old.startsWith("blob:")) URL.revokeObjectURL(old);
      }
    } catch { /* try again */ }
    await new Promise((r) => setTimeout(r, 250));
  }
}

async function loadScene() {
  if (!lv.stream) return;
  try { lv.scene = await api(`/api/streams/${enc(lv.stream)}/scene`); } catch { lv.scene = null; }
}

async function listStreams() {
  let list = [];
  try { list = await api("/api/streams"); } catch { return; }
  const streams = Array.isArray(list) ? list : list.streams || [];
  const sel = $("#lv-stream");
  sel.replaceChildren(...streams.map((s) => new Option(s.id, s.id, false, s.id === lv.stream)));
  if (!lv.stream && streams.length) { lv.stream = streams[0].id; start(); }
}

function stop() {
  if (lv.pc) { const pc = lv.pc; lv.pc = null; pc.close(); }
  if (lv.ws) { const ws = lv.ws; lv.ws = null; ws.close(); }
  if (lv.session) {
    const headers = lv.token ? { Authorization: "Bearer " + lv.token } : {};
    fetch(lv.session, { method: "DELETE", headers, keepalive: true }).catch(() => {});
    lv.session = "";
  }
  lv.mode = "";
  lv.results.clear();
  lv.presented.clear();
}

function start() {
  stop();
  if (!lv.stream) return;
  const via = new URLSearchParams(location.search).get("via");
  history.replaceState(null, "", `?stream=${enc(lv.stream)}` + (via ? `&via=${enc(via)}` : ""));
  video.hidden = false;
  canvas.hidden = false;
  $("#lv-snap").hidden = true;
  note("");
  status("connecting", "warn");
  loadScene();
  connect().catch((e) => { status("error", "bad"); note(String(e)); });
}

$("#lv-stream").addEventListener("change", (ev) => { lv.stream = ev.target.value; start(); });
window.addEventListener("pagehide", stop);
setInterval(loadScene, 2000);
listStreams();
if (lv.stream) start();
