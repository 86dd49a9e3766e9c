// GB28181 devices panel: the devices registered with vinfer's GB28181 platform (GET
// /api/gb28181/devices), online or offline with their last keepalive, and each device's channels
// from its catalog; "Analyse" on a channel adds the stream gb28181://<device>/<channel> through
// POST /api/streams, which the platform INVITEs. The panel stays hidden while the route answers
// 404 (no gb28181: section). Uses app.js's api(), toast(), select(), refreshStreams() and state.
"use strict";

const gb = {
  panel: null,
  info: null, // the last answer
  busy: new Set(), // channel ids being added
  seq: 0,
};

function gbPanel() {
  if (gb.panel) return gb.panel;
  const p = document.createElement("div");
  p.className = "panel gb-panel";
  p.id = "gb-devices";
  p.hidden = true;
  p.innerHTML = `<div class="panel-head"><h2>GB28181 devices</h2><span class="muted" id="gb-count"></span></div>
    <div class="gb-platform mono muted" id="gb-platform"></div>
    <label class="gb-transport">media transport<select id="gb-transport">
      <option value="">platform default</option><option value="udp">UDP</option>
      <option value="tcp-passive">TCP passive</option><option value="tcp-active">TCP active</option></select></label>
    <div id="gb-list" class="gb-list"></div>
    <p class="empty" id="gb-empty">No device has registered yet: point a camera's SIP settings at this platform (docs/gb28181.md).</p>
    <p class="form-error" id="gb-error" role="alert"></p>`;
  document.querySelector(".streams-col").append(p);
  gb.panel = p;
  return p;
}

// ago formats the seconds since an RFC 3339 time ("–" for none or the zero time).
function gbAgo(t) {
  const ms = Date.parse(t);
  if (!t || Number.isNaN(ms) || ms <= 0) return "–";
  const s = Math.max(0, (Date.now() - ms) / 1000);
  return s < 1 ? "just now" : duration(s) + " ago";
}

function gbEl(tag, cls, text) {
  const el = document.createElement(tag);
  if (cls) el.className = cls;
  if (text !== undefined) el.textContent = text;
  return el;
}

function gbDevice(d) {
  const el = gbEl("div", "gb-device");
  el.dataset.device = d.id;
  el.dataset.online = d.online ? "1" : "0";
  const head = gbEl("div", "gb-head");
  const dot = gbEl("i", "dot " + (d.online ? "ok" : "bad"));
  const name = gbEl("b", "gb-name", d.name || d.id);
  const st = gbEl("span", "gb-state " + (d.online ? "on" : "off"), d.online ? "online" : "offline");
  head.append(dot, name, st);
  const id = gbEl("div", "mono muted gb-id", d.id);
  const meta = gbEl("div", "gb-meta");
  const keep = gbEl("span", "gb-keepalive", "last keepalive " + gbAgo(d.last_seen));
  keep.dataset.lastSeen = d.last_seen || "";
  meta.append(keep);
  const parts = [];
  if (d.transport) parts.push(`${d.transport} ${d.addr || ""}`.trim());
  if (d.manufacturer || d.model) parts.push([d.manufacturer, d.model].filter(Boolean).join(" "));
  const chans = d.channels || [];
  parts.push(`${chans.length}${d.sum_num ? "/" + d.sum_num : ""} channel${(d.sum_num || chans.length) === 1 ? "" : "s"}`);
  for (const p of parts) meta.append(gbEl("span", "", p));
  const list = gbEl("div", "gb-channels");
  for (const c of chans) list.append(gbChannel(d, c));
  el.append(head, id, meta, list);
  return el;
}

function gbChannel(d, c) {
  const el = gbEl("div", "gb-channel");
  el.dataset.channel = c.id;
  el.dataset.online = c.online ? "1" : "0";
  const dot = gbEl("i", "dot " + (d.online && c.online ? "ok" : c.online ? "idle" : "bad"));
  dot.title = c.status || (c.online ? "ON" : "OFF");
  const text = gbEl("div", "gb-ch-text");
  text.append(gbEl("span", "gb-ch-name", c.name || c.id), gbEl("span", "mono muted gb-ch-id", c.id));
  el.append(dot, text);
  const streams = c.streams || [];
  if (streams.length) {
    const box = gbEl("div", "gb-streams");
    for (const s of streams) {
      const alarms = s.alarms ? ` · ${s.alarms} alarm${s.alarms === 1 ? "" : "s"}` : "";
      const chip = gbEl("button", "gb-stream " + s.state, `${s.id} · ${s.state}${alarms}`);
      chip.dataset.stream = s.id;
      chip.dataset.state = s.state;
      chip.dataset.alarms = s.alarms || 0;
      chip.title = [`transport ${s.transport}`, `SSRC ${s.ssrc}`, s.port ? `port ${s.port}` : "",
        `${s.invites} INVITE${s.invites === 1 ? "" : "s"}`, s.last_error || "",
        s.last_alarm ? `last alarm ${s.last_alarm}` : ""].filter(Boolean).join(" · ");
      chip.addEventListener("click", () => select(s.id));
      box.append(chip);
    }
    el.append(box);
  } else {
    const btn = gbEl("button", "ghost gb-analyse", gb.busy.has(c.id) ? "Adding…" : "Analyse");
    btn.disabled = gb.busy.has(c.id);
    btn.title = `Add the stream gb28181://${d.id}/${c.id} with the model chosen in the form`;
    btn.addEventListener("click", () => gbAnalyse(d.id, c.id));
    el.append(btn);
  }
  return el;
}

// gbStreamId picks a free stream id for a channel: gb-<channel id>, then -2, -3…
function gbStreamId(channel) {
  const taken = new Set(state.streams.map((s) => s.id));
  let id = "gb-" + channel;
  for (let i = 2; taken.has(id); i++) id = `gb-${channel}-${i}`;
  return id;
}

async function gbAnalyse(device, channel) {
  const transport = $("#gb-transport").value;
  const body = {
    id: gbStreamId(channel),
    source: `gb28181://${device}/${channel}` + (transport ? `?transport=${enc(transport)}` : ""),
    model: $("#model-select").value,
  };
  $("#gb-error").textContent = "";
  gb.busy.add(channel);
  gbRender();
  try {
    const s = await api("/api/streams", { method: "POST", json: body });
    toast(`Analysing ${channel} as ${s.id}`);
    await refreshStreams();
    select(s.id);
  } catch (e) {
    $("#gb-error").textContent = e.message;
  } finally {
    gb.busy.delete(channel);
    refreshDevices();
  }
}

function gbRender() {
  const p = gbPanel();
  const info = gb.info;
  p.hidden = !info;
  $("#nav-devices") && ($("#nav-devices").hidden = !info);
  if (!info) return;
  const devs = info.devices || [];
  $("#gb-platform").textContent = `platform ${info.id} · domain ${info.domain} · SIP ${info.listen}`;
  const online = devs.filter((d) => d.online).length;
  $("#gb-count").textContent = devs.length ? `${online}/${devs.length} online` : "";
  $("#gb-empty").hidden = devs.length > 0;
  $("#gb-list").replaceChildren(...devs.map(gbDevice));
  p.dataset.devices = String(devs.length);
  p.dataset.online = String(online);
}

async function refreshDevices() {
  const seq = ++gb.seq;
  try {
    const info = await api("/api/gb28181/devices");
    if (seq === gb.seq) gb.info = info;
  } catch (e) {
    if (e.status === 404 && seq === gb.seq) gb.info = null;
    else return; // kept as it was: retried
  }
  gbRender();
}

feature("gb28181", () => { // polled only on a node that has it
  refreshDevices();
  setInterval(refreshDevices, 2000);
});
