// vinfer review page: a recorded stream's timeline (GET /api/streams/{id}/recordings: spans
// and segments; GET /api/evidence: event marks), its segments played in a video element
// (range requests) with the per-frame results log drawn over the frame shown, matched by PTS
// (overlay.js); frame steps; exports of a range (MP4, JSON Lines, MOT). Deep links:
// review.html?stream=ID[&pts=S|&time=RFC3339]. Plain JavaScript, no build step.
"use strict";

const rv$ = (sel) => document.querySelector(sel);
const rv = {
  token: pageToken(),
  stream: "",
  from: 0, to: 0, // the timeline's range, ms
  segs: [], // GET …/recordings segments, oldest first
  seg: null, // the segment loaded in the video
  frames: [], // its results, by pts
  edited: false, // the export range was typed in
};
// reviewState is what the overlay shows (read by tests and handy in the console).
window.reviewState = { ready: false, segment: "", source: "", media_time: null, pts: null, frame: null, exact: false, objects: [] };

// rvApi is apiRequest (request.js) with the tab's token; a 401 shows the token form.
function rvApi(path, opts = {}) {
  return apiRequest(path, Object.assign({ token: rv.token, onUnauthorized: () => promptToken(rvTokenEntered) }, opts));
}

async function rvTokenEntered(token) {
  rv.token = token;
  await rvStreams();
  await rvList();
}

function rvStatus(text, cls) {
  rv$("#rv-status .dot").className = "dot " + cls;
  rv$("#rv-status span").textContent = text;
}

const rvEnc = encodeURIComponent;
const rvMs = (s) => Date.parse(s);
const rvDur = (s) => (rvMs(s.end) - rvMs(s.start)) / 1000;

async function rvStreams() {
  const sel = rv$("#rv-stream");
  const want = new URLSearchParams(location.search).get("stream") || rv.stream;
  let ids = [];
  try {
    const body = await rvApi("/api/streams");
    ids = (body.streams || []).map((s) => s.id);
  } catch (e) {
    rvStatus(e.status === 401 ? (rv.token ? "token refused" : "token needed") : e.message, "bad");
  }
  if (want && !ids.includes(want)) ids.unshift(want); // a stopped stream's recordings
  sel.replaceChildren(...ids.map((id) => { const o = document.createElement("option"); o.textContent = id; return o; }));
  if (want) sel.value = want;
  rv.stream = sel.value;
}

// rvList loads the stream's segments and events in the timeline's range.
async function rvList() {
  rv.to = Date.now() + 1000;
  rv.from = rv.to - Number(rv$("#rv-window").value) * 1000;
  rv.segs = [];
  let events = [];
  if (rv.stream) {
    const q = new URLSearchParams({ start: new Date(rv.from).toISOString(), end: new Date(rv.to).toISOString() });
    try {
      const l = await rvApi(`/api/streams/${rvEnc(rv.stream)}/recordings?${q}`);
      rv.segs = l.segments || [];
      rvStatus(rv.segs.length ? `${rv.segs.length} segments` : "nothing recorded in the range", rv.segs.length ? "ok" : "idle");
    } catch (e) {
      rvStatus(e.status === 401 ? (rv.token ? "token refused" : "token needed") : e.message, e.status === 404 ? "idle" : "bad");
    }
    try {
      const ev = await rvApi(`/api/evidence?${new URLSearchParams({ stream: rv.stream, limit: "200" })}`);
      events = (ev.items || []).filter((it) => rvMs(it.time) >= rv.from && rvMs(it.time) <= rv.to);
    } catch { /* no evidence section: no marks */ }
  }
  rvRender(events);
  window.reviewState.ready = true;
}

function rvX(ms) { return ((ms - rv.from) / (rv.to - rv.from)) * 100; }

function rvRender(events) {
  const tl = rv$("#rv-timeline");
  const head = rv$("#rv-head");
  const kids = [head];
  for (const s of rv.segs) {
    const d = document.createElement("div");
    d.className = "rv-span" + (s.open ? " open" : "");
    const a = Math.max(rvX(rvMs(s.start)), 0), b = Math.min(rvX(rvMs(s.end)), 100);
    d.style.left = a + "%";
    d.style.width = Math.max(b - a, 0) + "%";
    d.dataset.name = s.name;
    kids.push(d);
  }
  for (const it of events) {
    const m = document.createElement("button");
    m.className = "rv-mark";
    m.style.left = rvX(rvMs(it.time)) + "%";
    m.title = `${it.type} ${new Date(it.time).toLocaleTimeString()}`;
    m.dataset.id = it.id;
    m.addEventListener("pointerdown", (e) => e.stopPropagation());
    m.addEventListener("click", (e) => { e.stopPropagation(); rvEvent(it); });
    kids.push(m);
  }
  tl.replaceChildren(...kids);
  tl.dataset.window = rv$("#rv-window").value; // the range drawn
  rv$("#rv-axis-from").textContent = new Date(rv.from).toLocaleString();
  rv$("#rv-axis-to").textContent = new Date(rv.to).toLocaleString();
  rv$("#rv-empty").hidden = rv.segs.length > 0 && !!rv.seg;
}

// rvEvent plays from an event: at its frame by PTS when its segment knows its zero, else by
// wall time.
function rvEvent(it) {
  if (typeof it.pts === "number" && rvSeekPTS(it.pts)) return;
  rvSeekWall(rvMs(it.time));
}

// rvSeekPTS shows the frame of source PTS pts (s); false when no segment holds it.
// The segment starting nearest before pts holds it (a wall-clock span is only about the
// media's).
function rvSeekPTS(pts) {
  let s = null;
  for (const x of rv.segs) {
    if (typeof x.zero_pts !== "number" || pts < x.zero_pts - OV_MATCH || pts > x.zero_pts + rvDur(x) + 1) continue;
    if (!s || x.zero_pts > s.zero_pts) s = x;
  }
  if (!s) return false;
  rvOpen(s, pts - s.zero_pts);
  return true;
}

// rvSeekWall plays from wall time ms (the next recorded video after a gap).
function rvSeekWall(ms) {
  const s = rv.segs.find((s) => ms <= rvMs(s.end));
  if (!s) return;
  rvOpen(s, Math.max(ms - rvMs(s.start), 0) / 1000);
}

// rvOpen loads segment s (and its results) if not loaded, and seeks to media time m (s).
async function rvOpen(s, m) {
  const v = rv$("#rv-video");
  if (!rv.seg || rv.seg.name !== s.name) {
    rv.seg = s;
    rv.frames = [];
    window.reviewState.segment = s.name;
    v.src = tokenURL(s.url, rv.token);
    rv$("#rv-empty").hidden = true;
    if (!rv.edited) {
      rv$("#rv-from").value = s.start;
      rv$("#rv-to").value = s.end;
      rvExports();
    }
    if (typeof s.zero_pts === "number") {
      const z = s.zero_pts;
      rv.frames = await ovResults(rvApi, rv.stream, new Date(rvMs(s.start) - 5000), new Date(rvMs(s.end) + 5000), z - OV_MATCH, z + rvDur(s) + 5);
    }
    if (rv.seg !== s) return;
    if (v.readyState < 1) await new Promise((ok) => v.addEventListener("loadedmetadata", ok, { once: true }));
  }
  v.currentTime = m + 0.0001; // within the frame of media time m, whatever the rounding
}

// rvShow draws the results of the frame shown at media time m.
// source says where m came from: "frame" (the frame presented, requestVideoFrameCallback) or
// "seek" (currentTime).
function rvShow(m, source) {
  const s = rv.seg;
  if (!s) return;
  const st = window.reviewState;
  st.media_time = m;
  st.source = source;
  let f = null, exact = false, held = false;
  if (typeof s.zero_pts === "number") {
    const pts = s.zero_pts + m;
    st.pts = Math.round(pts * 1e6) / 1e6;
    const i = ovFind(rv.frames, pts);
    if (i >= 0) {
      f = rv.frames[i];
      exact = Math.abs(f.pts - pts) <= OV_MATCH;
      held = !exact && pts - f.pts < 0.5; // a frame not inferred: the last boxes, dashed
      if (!exact && !held) f = null;
    }
  }
  st.frame = f && exact ? f.frame : null;
  st.exact = exact;
  st.objects = f && exact ? f.objects : [];
  ovDraw(rv$("#rv-overlay"), rv$("#rv-video"), f, held);
  const wall = rvMs(s.start) + m * 1000;
  const head = rv$("#rv-head");
  head.style.display = "block";
  head.style.left = rvX(wall) + "%";
  rv$("#rv-info").textContent = `${new Date(wall).toLocaleTimeString()} · pts ${st.pts === null ? "?" : st.pts.toFixed(3)} s · ` +
    (exact ? `frame ${f.frame}, ${f.objects.length} objects` : held ? "not inferred (last boxes dashed)" : "no results");
}

// rvStep moves one inferred frame forward (+1) or back (-1), across segments.
function rvStep(dir) {
  const v = rv$("#rv-video");
  v.pause();
  const s = rv.seg, pts = window.reviewState.pts;
  if (!s || pts === null) return;
  const i = ovFind(rv.frames, pts);
  const j = dir > 0 ? i + 1 : (i >= 0 && rv.frames[i].pts >= pts - OV_MATCH ? i - 1 : i);
  const f = rv.frames[j];
  if (f && f.pts - s.zero_pts <= rvDur(s) + 1) {
    v.currentTime = f.pts - s.zero_pts + 0.0001;
    return;
  }
  const k = rv.segs.findIndex((x) => x.name === s.name) + dir;
  if (k >= 0 && k < rv.segs.length) rvOpen(rv.segs[k], dir > 0 ? 0 : Math.max(rvDur(rv.segs[k]) - 0.05, 0));
}

function rvExports() {
  const id = rvEnc(rv.stream);
  const q = new URLSearchParams({ start: rv$("#rv-from").value.trim(), end: rv$("#rv-to").value.trim() });
  rv$("#rv-exp-mp4").href = tokenURL(`/api/streams/${id}/export.mp4?${q}`, rv.token);
  rv$("#rv-exp-jsonl").href = tokenURL(`/api/streams/${id}/results?${q}&format=jsonl`, rv.token);
  rv$("#rv-exp-mot").href = tokenURL(`/api/streams/${id}/results?${q}&format=mot`, rv.token);
}

function rvFrameLoop() {
  const v = rv$("#rv-video");
  const tick = (_now, meta) => { rvShow(meta.mediaTime, "frame"); v.requestVideoFrameCallback(tick); };
  if (v.requestVideoFrameCallback) v.requestVideoFrameCallback(tick);
  else v.addEventListener("timeupdate", () => rvShow(v.currentTime, "seek"));
  // A seek while paused shows the frame at currentTime (Chromium calls no frame callback then).
  v.addEventListener("seeked", () => rvShow(v.currentTime, "seek"));
  v.addEventListener("ended", () => { // on to the next segment of the same span
    const k = rv.segs.findIndex((x) => rv.seg && x.name === rv.seg.name);
    const n = rv.segs[k + 1];
    if (n && rvMs(n.start) - rvMs(rv.seg.end) <= 2000) rvOpen(n, 0).then(() => v.play().catch(() => {}));
  });
  v.addEventListener("play", () => { rv$("#rv-play").textContent = "pause"; });
  v.addEventListener("pause", () => { rv$("#rv-play").textContent = "play"; });
  v.addEventListener("error", async () => {
    const s = rv.seg;
    if (s && s.open && !rv.reopened) { // the segment being written closed (renamed): reopen it closed
      rv.reopened = true;
      const m = v.currentTime;
      await rvList();
      const n = rv.segs.find((x) => x.start === s.start && !x.open);
      if (n) { rv.seg = null; await rvOpen(n, m); rv.reopened = false; return; }
    }
    rvStatus(`the video cannot play here (MediaError ${v.error && v.error.code}): export it as MP4`, "bad");
  });
}

function rvTimeline() {
  const tl = rv$("#rv-timeline");
  let drag = false;
  const at = (e) => {
    const r = tl.getBoundingClientRect();
    return rv.from + Math.min(Math.max((e.clientX - r.left) / r.width, 0), 1) * (rv.to - rv.from);
  };
  tl.addEventListener("pointerdown", (e) => { drag = true; tl.setPointerCapture(e.pointerId); rv$("#rv-head").style.display = "block"; rv$("#rv-head").style.left = rvX(at(e)) + "%"; });
  tl.addEventListener("pointermove", (e) => { if (drag) rv$("#rv-head").style.left = rvX(at(e)) + "%"; });
  tl.addEventListener("pointerup", (e) => { if (!drag) return; drag = false; rvSeekWall(at(e)); });
}

async function rvInit() {
  rvFrameLoop();
  rvTimeline();
  rv$("#rv-prev").addEventListener("click", () => rvStep(-1));
  rv$("#rv-next").addEventListener("click", () => rvStep(1));
  rv$("#rv-play").addEventListener("click", () => { const v = rv$("#rv-video"); if (v.paused) v.play().catch(() => {}); else v.pause(); });
  rv$("#rv-reload").addEventListener("click", rvList);
  rv$("#rv-window").addEventListener("change", rvList);
  rv$("#rv-stream").addEventListener("change", () => { rv.stream = rv$("#rv-stream").value; rv.seg = null; rvList(); });
  for (const id of ["#rv-from", "#rv-to"]) rv$(id).addEventListener("input", () => { rv.edited = true; rvExports(); });
  await rvStreams();
  await rvList();
  const p = new URLSearchParams(location.search);
  if (p.get("pts") && rvSeekPTS(Number(p.get("pts")))) return;
  if (p.get("time")) rvSeekWall(rvMs(p.get("time")));
}

rvInit();
