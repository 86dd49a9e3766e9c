// vinfer web pages' overlay of recorded results on recorded video, shared by the review page
// (review.js) and the evidence page (evidence.js). Results come from the per-frame results log
// (GET /api/streams/{id}/results, JSON Lines) and are matched to the frame the video shows by
// its PTS: the source PTS of a frame shown at media time m is the video's zero PTS + m
// (docs/recording.md). Plain script, no build step; all data goes into the page as text.
"use strict";

// OV_MATCH is how far (s) a frame's PTS may be from a logged frame's and still be that frame:
// the 90 kHz media clock and the log's µs round, a frame lasts far longer.
const OV_MATCH = 0.001;

// ovParse turns JSON Lines results into frames sorted by pts, keeping those with
// lo ≤ pts ≤ hi.
function ovParse(text, lo, hi) {
  const out = [];
  for (const line of text.split("\n")) {
    if (!line) continue;
    let f;
    try { f = JSON.parse(line); } catch { continue; }
    if (typeof f.pts === "number" && f.pts >= lo && f.pts <= hi) out.push(f);
  }
  out.sort((a, b) => a.pts - b.pts);
  return out;
}

// ovFind returns the index of the last frame with pts ≤ pts + OV_MATCH (-1: none).
function ovFind(frames, pts) {
  let lo = 0, hi = frames.length - 1, at = -1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (frames[mid].pts <= pts + OV_MATCH) { at = mid; lo = mid + 1; } else hi = mid - 1;
  }
  return at;
}

// ovColor gives a track a steady color.
function ovColor(id) {
  const hue = ((id > 0 ? id : 0) * 67) % 360;
  return id > 0 ? `hsl(${hue} 85% 58%)` : "#4cc9f0";
}

// ovDraw draws frame's objects (null: none) on canvas over video (object-fit: contain). held
// marks boxes of an earlier frame (the shown one was not inferred): drawn dashed.
function ovDraw(canvas, video, frame, held) {
  const dpr = window.devicePixelRatio || 1;
  const cw = canvas.clientWidth, ch = canvas.clientHeight;
  if (canvas.width !== Math.round(cw * dpr) || canvas.height !== Math.round(ch * dpr)) {
    canvas.width = Math.round(cw * dpr);
    canvas.height = Math.round(ch * dpr);
  }
  const g = canvas.getContext("2d");
  g.setTransform(1, 0, 0, 1, 0, 0);
  g.clearRect(0, 0, canvas.width, canvas.height);
  if (!frame || !video.videoWidth) return;
  const vw = frame.width || video.videoWidth, vh = frame.height || video.videoHeight;
  const s = Math.min(cw / vw, ch / vh);
  const ox = (cw - vw * s) / 2, oy = (ch - vh * s) / 2;
  g.setTransform(dpr, 0, 0, dpr, 0, 0);
  g.lineWidth = 2;
  g.font = "600 12px system-ui, sans-serif";
  g.setLineDash(held ? [6, 4] : []);
  for (const o of frame.objects || []) {
    const [x1, y1, x2, y2] = o.box;
    const x = ox + x1 * s, y = oy + y1 * s, w = (x2 - x1) * s, h = (y2 - y1) * s;
    const c = ovColor(o.track_id || 0);
    g.strokeStyle = c;
    g.strokeRect(x, y, w, h);
    const label = `${o.track_id ? "#" + o.track_id + " " : ""}${o.label || o.class_id} ${Math.round(o.score * 100)}%`;
    const tw = g.measureText(label).width + 8;
    g.fillStyle = c;
    g.fillRect(x - 1, Math.max(0, y - 17), tw, 17);
    g.fillStyle = "#04141b";
    g.fillText(label, x + 3, Math.max(12, y - 4));
  }
}

// ovResults fetches the results logged in [start, end] (Dates) of stream as frames with
// lo ≤ pts ≤ hi; api is the page's request function (token included).
async function ovResults(api, stream, start, end, lo, hi) {
  const q = new URLSearchParams({ start: start.toISOString(), end: end.toISOString(), format: "jsonl" });
  const res = await api(`/api/streams/${encodeURIComponent(stream)}/results?${q}`, { raw: true });
  if (!res.ok) return [];
  return ovParse(await res.text(), lo, hi);
}
