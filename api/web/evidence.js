// vinfer evidence page: recorded scene events (GET /api/evidence) as a timeline per stream and
// cards with their best-frame snapshot; a card or a mark plays the event's clip (MP4, served
// with range requests so the video element seeks). Plain JavaScript, no build step (request.js,
// loaded first, has the API helper); all data goes into the page as text, never as HTML.
"use strict";

const ev$ = (sel) => document.querySelector(sel);
const evState = {
  token: pageToken(),
  items: new Map(), // id → item (GET /api/evidence), ids are ULIDs: they sort by time
  next: "", // cursor of the page after the oldest loaded
  selected: "",
  stream: "",
  type: "",
};
const EV_PAGE = 100;
const EV_KEPT = 1000;

// evApi is apiRequest (request.js) with the tab's token; a 401 shows the token form.
function evApi(path) {
  return apiRequest(path, { token: evState.token, onUnauthorized: () => promptToken(evTokenEntered) });
}

function evTokenEntered(token) {
  evState.token = token;
  evStreams();
  evRefresh();
}

// evURL adds the token for elements that cannot send headers (img, video).
function evURL(url) {
  return tokenURL(url, evState.token);
}

function evQuery(cursor) {
  const q = new URLSearchParams({ limit: String(EV_PAGE) });
  if (evState.stream) q.set("stream", evState.stream);
  if (evState.type) q.set("type", evState.type);
  if (cursor) q.set("cursor", cursor);
  return "/api/evidence?" + q.toString();
}

function evStatus(text, cls) {
  ev$("#ev-status .dot").className = "dot " + cls;
  ev$("#ev-status span").textContent = text;
}

// refresh reloads the newest page (new events, clips that were pending are written now).
async function evRefresh() {
  try {
    const page = await evApi(evQuery(""));
    const first = evState.items.size === 0;
    for (const it of page.items || []) evState.items.set(it.id, it);
    if (first) evState.next = page.next || "";
    evTrim();
    evStatus("recording", "ok");
    // a clip that was being recorded when its event was picked plays once written
    const sel = evState.items.get(evState.selected);
    if (sel && sel.has_clip && !ev$("#ev-video").dataset.src) { evSelect(sel.id); return; }
  } catch (e) {
    evStatus(e.status === 401 ? (evState.token ? "token refused" : "token needed") : e.message, e.status === 404 ? "idle" : "bad");
  }
  evRender();
}

async function evMore() {
  if (!evState.next) return;
  try {
    const page = await evApi(evQuery(evState.next));
    for (const it of page.items || []) evState.items.set(it.id, it);
    evState.next = page.next || "";
    evTrim();
  } catch (e) {
    evStatus(e.message, "bad");
  }
  evRender();
}

function evTrim() {
  if (evState.items.size <= EV_KEPT) return;
  const ids = [...evState.items.keys()].sort().reverse();
  for (const id of ids.slice(EV_KEPT)) if (id !== evState.selected) evState.items.delete(id);
}

function evSorted() {
  return [...evState.items.values()].sort((a, b) => (a.id < b.id ? 1 : a.id > b.id ? -1 : 0));
}

function evKind(type) { return (type || "").split(".").pop(); }

function evWhere(it) {
  const e = it.event || {};
  return e.zone || e.line || "";
}

function evClock(t) {
  const d = new Date(t);
  if (Number.isNaN(d.getTime())) return String(t);
  const p = (n, w = 2) => String(n).padStart(w, "0");
  return `${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}

function evClipText(it) {
  const c = it.clip;
  if (!c) return "no clip";
  if (c.state === "pending") return "clip being recorded";
  if (c.state === "gone") return "clip gone: " + (c.reason || "");
  return `clip ${(c.end - c.start).toFixed(1)} s${c.truncated ? " (starts late)" : ""}`;
}

// ---- event cards ----

const evCards = new Map(); // id → li
function evRenderList(items) {
  const list = ev$("#ev-list");
  const keep = new Set(items.map((it) => it.id));
  for (const [id, li] of evCards) if (!keep.has(id)) { li.remove(); evCards.delete(id); }
  let prev = null;
  for (const it of items) {
    let li = evCards.get(it.id);
    if (!li) {
      li = document.createElement("li");
      li.className = "ev-card";
      li.dataset.id = it.id;
      li.addEventListener("click", () => evSelect(it.id));
      evCards.set(it.id, li);
    }
    evFillCard(li, it);
    if (prev ? prev.nextSibling !== li : list.firstChild !== li) {
      if (prev) prev.after(li); else list.prepend(li);
    }
    prev = li;
  }
  ev$("#ev-empty").hidden = items.length > 0;
  ev$("#ev-more").hidden = !evState.next;
  ev$("#ev-count").textContent = items.length ? String(items.length) : "";
  ev$("#ev-total").textContent = String(items.length);
}

function evFillCard(li, it) {
  const key = [it.clip && it.clip.state, it.has_snapshot, it.id === evState.selected].join();
  if (li.dataset.key === key) return;
  li.dataset.key = key;
  li.dataset.state = it.clip ? it.clip.state : "none";
  li.dataset.stream = it.stream;
  li.dataset.type = it.type;
  li.dataset.node = it.node || ""; // on a cluster node: the node that holds the event
  li.classList.toggle("sel", it.id === evState.selected);
  let thumb;
  if (it.has_snapshot && it.snapshot_url) {
    thumb = document.createElement("img");
    thumb.className = "thumb";
    thumb.alt = `${it.type} snapshot`;
    thumb.loading = "lazy";
    thumb.src = evURL(it.snapshot_url + "?boxes=1");
  } else {
    thumb = document.createElement("div");
    thumb.className = "nothumb";
    thumb.textContent = it.clip && it.clip.state === "pending" ? "recording…" : "no snapshot";
  }
  const body = document.createElement("div");
  const l1 = document.createElement("div");
  l1.className = "l1";
  const ty = document.createElement("span");
  ty.className = "ty " + evKind(it.type);
  ty.textContent = it.type;
  const where = document.createElement("b");
  where.className = "where";
  where.textContent = evWhere(it);
  const time = document.createElement("time");
  time.className = "muted mono";
  time.textContent = evClock(it.time);
  l1.append(ty, where, time);
  const e = it.event || {};
  const l2 = document.createElement("div");
  l2.className = "l2";
  l2.textContent = `${it.stream}${it.node ? " @ " + it.node : ""} · #${e.track_id ?? "?"} ${e.label || ""} · ${e.direction ? "→ " + e.direction : e.dwell != null ? "dwell " + e.dwell.toFixed(1) + " s" : "pts " + it.pts.toFixed(1) + " s"}`;
  const l3 = document.createElement("div");
  l3.className = "l3";
  l3.textContent = evClipText(it);
  body.append(l1, l2, l3);
  li.replaceChildren(thumb, body);
}

// ---- timeline ----

function evRenderTimeline(items) {
  const tl = ev$("#ev-timeline");
  tl.replaceChildren();
  if (!items.length) { ev$("#ev-range").textContent = ""; return; }
  const times = items.map((it) => new Date(it.time).getTime());
  let t0 = Math.min(...times), t1 = Math.max(...times);
  const pad = Math.max((t1 - t0) * 0.03, 5000);
  t0 -= pad; t1 += pad;
  const streams = [...new Set(items.map((it) => it.stream))].sort();
  for (const s of streams) {
    const row = document.createElement("div");
    row.className = "tl-row";
    row.dataset.stream = s;
    const name = document.createElement("span");
    name.className = "tl-name";
    name.textContent = s;
    const bar = document.createElement("div");
    bar.className = "tl-bar";
    for (const it of items) {
      if (it.stream !== s) continue;
      const m = document.createElement("button");
      m.className = "tl-mark " + evKind(it.type) + (it.has_clip ? "" : " gone") + (it.id === evState.selected ? " sel" : "");
      m.dataset.id = it.id;
      m.title = `${it.type} ${evWhere(it)} · ${evClock(it.time)} · ${evClipText(it)}`;
      const at = new Date(it.time).getTime();
      // the mark spans the clip (event − its start … its end) when there is one
      const before = it.clip && it.clip.state === "written" ? (it.pts - it.clip.start) * 1000 : 0;
      const after = it.clip && it.clip.state === "written" ? (it.clip.end - it.pts) * 1000 : 0;
      const x0 = (at - before - t0) / (t1 - t0), x1 = (at + after - t0) / (t1 - t0);
      m.style.left = (Math.max(0, x0) * 100).toFixed(3) + "%";
      m.style.width = (Math.max(0.4, (x1 - x0) * 100)).toFixed(3) + "%";
      m.addEventListener("click", () => evSelect(it.id));
      bar.append(m);
    }
    row.append(name, bar);
    tl.append(row);
  }
  const axis = document.createElement("div");
  axis.className = "tl-axis";
  const a = document.createElement("span"), b = document.createElement("span");
  a.textContent = evClock(t0);
  b.textContent = evClock(t1);
  axis.append(a, b);
  tl.append(axis);
  ev$("#ev-range").textContent = `${evClock(t0)} – ${evClock(t1)}`;
}

// ---- player ----

// The clip's overlay: a recorded stream's results log (record: true) drawn at the frame shown;
// the clip's media time m is the source's PTS clip.start + m (evidence.WriteMP4's edit list).
const evOverlay = { id: "", zero: 0, frames: [] };
window.evidenceOverlay = { event: "", frame: null, pts: null, objects: [] };

async function evOverlayLoad(it) {
  evOverlay.id = it.id;
  evOverlay.zero = it.clip.start;
  evOverlay.frames = [];
  const at = Date.parse(it.time) - (it.pts - it.clip.start) * 1000; // the clip's start, about
  const frames = await ovResults((p, o) => apiRequest(p, Object.assign({ token: evState.token }, o)), it.stream,
    new Date(at - 5000), new Date(at + (it.clip.end - it.clip.start) * 1000 + 5000), it.clip.start - OV_MATCH, it.clip.end + OV_MATCH);
  if (evOverlay.id === it.id) evOverlay.frames = frames;
}

function evOverlayShow(m) {
  const pts = evOverlay.zero + m;
  const i = ovFind(evOverlay.frames, pts);
  const f = i >= 0 && Math.abs(evOverlay.frames[i].pts - pts) <= OV_MATCH ? evOverlay.frames[i] : null;
  window.evidenceOverlay = { event: evOverlay.id, frame: f ? f.frame : null, pts, objects: f ? f.objects : [] };
  ovDraw(ev$("#ev-overlay"), ev$("#ev-video"), f, false);
}

function evOverlayInit() {
  const v = ev$("#ev-video");
  if (v.requestVideoFrameCallback) {
    const tick = (_now, meta) => { evOverlayShow(meta.mediaTime); v.requestVideoFrameCallback(tick); };
    v.requestVideoFrameCallback(tick);
  }
  v.addEventListener("seeked", () => evOverlayShow(v.currentTime));
}

function evSelect(id) {
  const it = evState.items.get(id);
  if (!it) return;
  evState.selected = id;
  const v = ev$("#ev-video");
  if (it.has_clip && it.clip_url) {
    const src = evURL(it.clip_url);
    if (v.dataset.src !== src) {
      v.dataset.src = src;
      v.dataset.event = id;
      v.src = src;
      // start a little before the event (its offset in the clip)
      const offset = Math.max(0, it.pts - it.clip.start - 1);
      v.addEventListener("loadedmetadata", () => { if (offset < v.duration) v.currentTime = offset; }, { once: true });
      v.play().catch(() => { /* autoplay refused: the controls play it */ });
      evOverlayLoad(it);
    }
    ev$("#ev-video-empty").hidden = true;
  } else {
    v.removeAttribute("src");
    delete v.dataset.src;
    v.load();
    ev$("#ev-video-empty").hidden = false;
    ev$("#ev-video-empty").textContent = evClipText(it);
  }
  evRenderDetail(it);
  evRender();
}

function evRenderDetail(it) {
  const dl = ev$("#ev-detail");
  dl.replaceChildren();
  const row = (k, v, cls) => {
    const dt = document.createElement("dt"), dd = document.createElement("dd");
    dt.textContent = k;
    if (v instanceof Node) dd.append(v); else dd.textContent = v;
    if (cls) dd.className = cls;
    dl.append(dt, dd);
  };
  const e = it.event || {};
  row("event", `${it.type} ${evWhere(it)} · ${it.stream} · #${e.track_id ?? "?"} ${e.label || ""}`);
  row("time", `${it.time} · pts ${it.pts.toFixed(2)} s`);
  if (it.clip) {
    row("clip", it.clip.state === "written"
      ? `${it.clip.start.toFixed(2)} – ${it.clip.end.toFixed(2)} s (${(it.clip.bytes / 1e6).toFixed(1)} MB, ${it.clip.events.length} event${it.clip.events.length === 1 ? "" : "s"})`
      : evClipText(it), it.clip.state === "gone" ? "warn" : "");
    if (it.clip.truncated) row("note", `the buffer did not reach back to ${it.clip.want.toFixed(2)} s: the clip starts at the next key frame`, "warn");
  }
  if (it.best) row("snapshot", `best frame of the track at ${it.best.pts.toFixed(2)} s, score ${it.best.score.toFixed(2)}${it.best.cut ? ", cut by the border" : ""}`);
  const links = document.createElement("span");
  for (const [label, url] of [["clip.mp4", it.clip_url], ["snapshot", it.snapshot_url], ["with box", it.snapshot_url && it.snapshot_url + "?boxes=1"], ["event frame", it.frame_url]]) {
    if (!url) continue;
    const a = document.createElement("a");
    a.href = evURL(url);
    a.target = "_blank";
    a.rel = "noopener";
    a.textContent = label;
    links.append(a);
  }
  row("files", links);
}

function evRender() {
  const items = evSorted();
  evRenderList(items);
  evRenderTimeline(items);
  const it = evState.items.get(evState.selected);
  if (it) evRenderDetail(it);
}

// ---- filters ----

async function evStreams() {
  try {
    const body = await evApi("/api/streams");
    const sel = ev$("#ev-stream");
    const have = new Set([...sel.options].map((o) => o.value));
    for (const s of body.streams || []) {
      if (have.has(s.id)) continue;
      const o = document.createElement("option");
      o.value = o.textContent = s.id;
      sel.append(o);
    }
  } catch { /* the list still works unfiltered */ }
}

function evFilter() {
  evState.stream = ev$("#ev-stream").value;
  evState.type = ev$("#ev-type").value;
  evState.items.clear();
  evState.next = "";
  evRefresh();
}

ev$("#ev-stream").addEventListener("change", evFilter);
ev$("#ev-type").addEventListener("change", evFilter);
ev$("#ev-more").addEventListener("click", evMore);

evOverlayInit();
evStreams();
evRefresh();
setInterval(evRefresh, 3000);
setInterval(evStreams, 10000);
