// vinfer web pages' API helper, shared by the live page (app.js, with devices.js and
// cluster.js) and the evidence page (evidence.js): each page loads it first. Plain script, no
// build step.
"use strict";

// TOKEN_KEY is where the pages keep the API token: sessionStorage, so one entered on any page
// serves the others in this tab, and it goes when the tab closes. Pages before kept it in
// localStorage for good: removed on load.
const TOKEN_KEY = "vinfer.token";
localStorage.removeItem(TOKEN_KEY);

// pageToken is the token this tab holds, "" without one.
function pageToken() {
  return sessionStorage.getItem(TOKEN_KEY) || "";
}

// tokenWaiters are promptToken's callbacks while its form is open; null when closed.
let tokenWaiters = null;

// promptToken shows the token form (#token-dialog, made here when the page has none) saying
// why: a token is needed, or, when the tab held one, that it was refused (its data-state is
// "needed", "refused" or "change" with opts.change, from the token button). On submit the
// token is kept (sessionStorage) and each distinct then(token) runs once.
function promptToken(then, opts = {}) {
  if (tokenWaiters) {
    if (then && !tokenWaiters.includes(then)) tokenWaiters.push(then);
    return;
  }
  tokenWaiters = then ? [then] : [];
  const dlg = tokenDialog();
  const held = pageToken();
  const state = opts.change ? "change" : held ? "refused" : "needed";
  dlg.dataset.state = state;
  dlg.querySelector("#token-why").textContent = {
    needed: "This vinfer requires an API token (output.token in its config).",
    refused: "The token was refused (401 Unauthorized): enter the right one.",
    change: "The API token this tab sends.",
  }[state];
  dlg.querySelector("#token-input").value = state === "change" ? held : "";
  dlg.addEventListener("close", () => {
    const token = dlg.querySelector("#token-input").value.trim();
    sessionStorage.setItem(TOKEN_KEY, token);
    const waiters = tokenWaiters;
    tokenWaiters = null;
    for (const w of waiters) w(token);
  }, { once: true });
  dlg.showModal();
}

// tokenDialog returns the page's token form, made on first use: a dialog holding a form
// (#token-form) with the reason (#token-why), a password field (#token-input) and a button.
function tokenDialog() {
  let dlg = document.getElementById("token-dialog");
  if (dlg) return dlg;
  const el = (tag, props, ...kids) => { const e = Object.assign(document.createElement(tag), props); e.append(...kids); return e; };
  dlg = el("dialog", { id: "token-dialog" },
    el("form", { method: "dialog", id: "token-form" },
      el("h2", { textContent: "API token" }),
      el("p", { id: "token-why", className: "muted" }),
      el("input", { id: "token-input", type: "password", placeholder: "token", className: "mono", autocomplete: "current-password" }),
      el("div", { className: "row end" }, el("button", { value: "ok", textContent: "Use token" }))));
  document.body.append(dlg);
  return dlg;
}

// apiRequest sends one request to the API and returns its JSON body (null when empty), or the
// Response itself with opts.raw. opts: token (sent as a bearer token when set), method (GET),
// json (a body, sent as application/json: the API takes state changes as JSON only, which a
// cross-site form cannot send; POST always says so), headers, raw, onUnauthorized (called on a
// 401 before anything else). Without raw, a status other than 2xx throws an Error with the API's
// {"error"} message (else the status line) and the status as .status.
async function apiRequest(path, opts = {}) {
  const headers = Object.assign({}, opts.headers);
  if (opts.token) headers.Authorization = "Bearer " + opts.token;
  if (opts.json !== undefined || opts.method === "POST") headers["Content-Type"] = "application/json";
  const res = await fetch(path, {
    method: opts.method || "GET", headers,
    body: opts.json !== undefined ? JSON.stringify(opts.json) : undefined,
  });
  if (res.status === 401 && opts.onUnauthorized) opts.onUnauthorized();
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

// tokenURL adds the token as ?access_token= to url, for what cannot send headers (img, video,
// EventSource); url as it is without a token.
function tokenURL(url, token) {
  if (!url || !token) return url;
  return url + (url.includes("?") ? "&" : "?") + "access_token=" + encodeURIComponent(token);
}
