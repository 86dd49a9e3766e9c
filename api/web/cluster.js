// Cluster panel: the nodes of a vinfer cluster (GET /api/cluster) with their health (live or
// dead, last heartbeat, streams against their cap, streams that failed to start there), the
// streams each node owns, the streams waiting for a place, and this node's own state; each
// stream card of the list is tagged with the node that runs it (GET /api/streams is
// cluster-wide and names it). The panel stays hidden while the route answers 404 (no cluster:
// section). Uses app.js's api(), select(), duration() and state.
"use strict";

const cl = { panel: null, view: null, seq: 0 };

function clEl(tag, cls, text) {
  const el = document.createElement(tag);
  if (cls) el.className = cls;
  if (text !== undefined) el.textContent = text;
  return el;
}

function clPanel() {
  if (cl.panel) return cl.panel;
  const p = clEl("div", "panel cl-panel");
  p.id = "cluster";
  p.hidden = true;
  p.innerHTML = `<div class="panel-head"><h2>Cluster</h2><span class="muted" id="cl-summary"></span></div>
    <div class="cl-self" id="cl-self"></div>
    <div id="cl-nodes" class="cl-nodes"></div>
    <div id="cl-waiting" class="cl-waiting"></div>`;
  const side = document.querySelector(".side-col");
  side.prepend(p);
  cl.panel = p;
  return p;
}

function clStreamChip(id, st) {
  const b = clEl("button", "cl-stream " + (st || ""), id);
  b.dataset.stream = id;
  if (st) b.dataset.placement = st;
  b.title = st ? `${id}: ${st}` : id;
  b.addEventListener("click", () => select(id));
  return b;
}

function clNode(n, v, placement) {
  const el = clEl("div", "cl-node");
  el.dataset.node = n.name;
  el.dataset.live = n.live ? "1" : "0";
  el.dataset.streams = String(n.streams.length);
  const head = clEl("div", "cl-head");
  head.append(clEl("i", "dot " + (n.live ? "ok" : "bad")), clEl("b", "cl-name", n.name));
  if (n.self) head.append(clEl("span", "cl-you", "this node"));
  head.append(clEl("span", "cl-state " + (n.live ? "on" : "off"), n.live ? "live" : "dead"));
  const meta = clEl("div", "cl-meta");
  const cap = n.max_streams ? ` / ${n.max_streams}` : "";
  meta.append(clEl("span", "cl-count", `${n.streams.length}${cap} stream${n.streams.length === 1 && !cap ? "" : "s"}`));
  meta.append(clEl("span", "", `weight ${n.weight}`));
  meta.append(clEl("span", "cl-seen", n.self ? "heartbeat " + clAgo(n.last_seen_seconds) : "seen " + clAgo(n.last_seen_seconds)));
  if (n.url) meta.append(clEl("span", "mono cl-url", n.url));
  const bar = clEl("div", "bar cl-bar");
  const fill = clEl("i");
  const total = Math.max(1, v.streams.length);
  fill.style.width = `${Math.round((n.max_streams ? n.streams.length / n.max_streams : n.streams.length / total) * 100)}%`;
  bar.append(fill);
  bar.title = n.max_streams ? "streams against the node's cap" : "share of the cluster's streams";
  const list = clEl("div", "cl-streams");
  for (const id of n.streams) list.append(clStreamChip(id, placement.get(id)));
  el.append(head, meta, bar, list);
  const failed = Object.entries(n.failed || {});
  if (failed.length) {
    const f = clEl("div", "err cl-failed", `${failed.length} could not start here: ` + failed.map(([id, e]) => `${id} (${e})`).join("; "));
    el.append(f);
  }
  return el;
}

function clAgo(s) {
  if (s == null) return "–";
  return s < 1 ? "just now" : duration(s) + " ago";
}

function clRender() {
  const p = clPanel();
  const v = cl.view;
  p.hidden = !v;
  const nav = $("#nav-cluster");
  if (nav) nav.hidden = !v;
  if (!v) return;
  const live = v.nodes.filter((n) => n.live).length;
  $("#cl-summary").textContent = `${live}/${v.nodes.length} nodes live · ${v.streams.length} stream${v.streams.length === 1 ? "" : "s"}`;
  const self = $("#cl-self");
  self.textContent = `${v.self} · ${v.state} · bucket ${v.bucket}`;
  self.className = "cl-self mono " + (v.state === "member" ? "ok" : "bad");
  p.dataset.state = v.state;
  p.dataset.live = String(live);
  const placement = new Map(v.streams.map((s) => [s.id, s.state]));
  $("#cl-nodes").replaceChildren(...v.nodes.map((n) => clNode(n, v, placement)));
  const waiting = v.streams.filter((s) => s.state !== "running");
  const w = $("#cl-waiting");
  if (!waiting.length) {
    w.replaceChildren();
  } else {
    const h = clEl("h3", "", `Not on their place (${waiting.length})`);
    const list = clEl("div", "cl-streams");
    for (const s of waiting) {
      const c = clStreamChip(s.id, s.state);
      c.textContent = `${s.id} · ${s.state}` + (s.owner && s.owner !== s.assigned ? ` (${s.owner} → ${s.assigned || "?"})` : "");
      list.append(c);
    }
    w.replaceChildren(h, list);
  }
  clTagCards();
}

// clTagCards tags each stream card with the node that runs it (from GET /api/streams).
function clTagCards() {
  if (!cl.view) return;
  const nodes = new Map(state.streams.map((s) => [s.id, s.node]));
  for (const card of document.querySelectorAll(".stream[data-stream]")) {
    const node = nodes.get(card.dataset.stream);
    let tag = card.querySelector(".cl-tag");
    if (!tag) {
      tag = clEl("span", "cl-tag");
      card.querySelector(".name").append(tag);
    }
    tag.textContent = node || "no node";
    tag.classList.toggle("self", node === cl.view.self);
    card.dataset.node = node || "";
  }
}

async function refreshCluster() {
  const seq = ++cl.seq;
  try {
    const v = await api("/api/cluster");
    if (seq === cl.seq) cl.view = v;
  } catch (e) {
    if (e.status === 404 && seq === cl.seq) cl.view = null;
    else return; // kept as it was: retried
  }
  clRender();
}

feature("cluster", () => { // polled only on a node that has it
  refreshCluster();
  setInterval(refreshCluster, 2000);
});
setInterval(clTagCards, 1000);
