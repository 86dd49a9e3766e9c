// ONVIF cameras panel: "Find" probes for cameras (POST /api/onvif/discover: the local network,
// or the address typed), each camera's profiles are read with the user and password typed
// (POST /api/onvif/cameras/{id}/profiles), and "Use" on a profile fills the Add stream form
// with its onvif:// source: the stream is added only when the user submits that form. Uses
// app.js's api() and toast().
"use strict";

const cams = { panel: null };

function camEl(tag, cls, text) {
  const el = document.createElement(tag);
  if (cls) el.className = cls;
  if (text !== undefined) el.textContent = text;
  return el;
}

function camPanel() {
  if (cams.panel) return cams.panel;
  const p = camEl("div", "panel cam-panel");
  p.id = "cameras";
  p.innerHTML = `<div class="panel-head"><h2>Cameras (ONVIF)</h2><span class="muted" id="cam-count"></span></div>
    <form id="cam-find" class="row" autocomplete="off">
      <input id="cam-target" class="mono" placeholder="local network, or 192.168.1.20:3702" title="a loopback or private IPv4 address:port to probe; empty: the local network">
      <button type="submit" id="cam-find-btn">Find</button>
    </form>
    <div id="cam-list" class="cam-list"></div>
    <p class="form-error" id="cam-error" role="alert"></p>`;
  document.querySelector(".side-col").append(p);
  p.querySelector("#cam-find").addEventListener("submit", (ev) => { ev.preventDefault(); camFind(); });
  cams.panel = p;
  return p;
}

async function camFind() {
  const btn = document.getElementById("cam-find-btn");
  const err = document.getElementById("cam-error");
  btn.disabled = true;
  err.textContent = "";
  try {
    const target = document.getElementById("cam-target").value.trim();
    const v = await api("/api/onvif/discover", { method: "POST", json: target ? { target } : {} });
    camRender(v.cameras || []);
  } catch (e) {
    err.textContent = e.message;
  } finally {
    btn.disabled = false;
  }
}

function camRender(list) {
  const box = document.getElementById("cam-list");
  box.replaceChildren();
  document.getElementById("cam-count").textContent = list.length ? String(list.length) : "none found";
  for (const c of list) {
    const el = camEl("div", "cam");
    el.dataset.camera = c.id;
    el.append(camEl("b", "cam-name", c.name || c.endpoint), camEl("div", "mono muted cam-addr", c.xaddr + (c.hardware ? " · " + c.hardware : "")));
    const form = camEl("form", "row cam-login");
    form.autocomplete = "off";
    const user = camEl("input", "cam-user mono");
    user.placeholder = "user";
    const pass = camEl("input", "cam-pass mono");
    pass.type = "password";
    pass.placeholder = "password";
    const go = camEl("button", "ghost cam-profiles-btn", "Profiles");
    go.type = "submit";
    form.append(user, pass, go);
    const profiles = camEl("div", "cam-profiles");
    form.addEventListener("submit", async (ev) => {
      ev.preventDefault();
      go.disabled = true;
      profiles.replaceChildren();
      try {
        const v = await api(`/api/onvif/cameras/${encodeURIComponent(c.id)}/profiles`, { method: "POST", json: { user: user.value, password: pass.value } });
        for (const p of v.profiles || []) profiles.append(camProfile(c, p, user.value, pass.value));
      } catch (e) {
        profiles.append(camEl("p", "form-error", e.message));
      } finally {
        go.disabled = false;
      }
    });
    el.append(form, profiles);
    box.append(el);
  }
}

// camProfile is one profile's row; "Use" fills the Add stream form (id and source with the
// password), for the user to submit.
function camProfile(c, p, user, password) {
  const row = camEl("div", "cam-profile");
  row.dataset.token = p.token;
  const size = p.width && p.height ? ` ${p.width}×${p.height}` : "";
  row.append(camEl("span", "cam-profile-name", `${p.name || p.token} · ${p.encoding || "?"}${size}`));
  const use = camEl("button", "ghost cam-use", "Use");
  use.type = "button";
  use.addEventListener("click", () => {
    const u = new URL(p.source.replace(/^onvif:/, "http:"));
    u.username = user;
    u.password = password;
    const src = "onvif:" + u.href.slice("http:".length);
    const form = document.getElementById("add-form");
    form.elements.source.value = src;
    if (!form.elements.id.value) form.elements.id.value = ((c.name || "camera") + "-" + p.token).replace(/[^A-Za-z0-9._-]+/g, "-").slice(0, 64);
    form.elements.id.focus();
    toast(`Source filled in: choose a model and add the stream`);
  });
  row.append(use);
  return row;
}

camPanel();
