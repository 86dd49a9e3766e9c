// vinfer web pages' API helper, shared by the live page (app.js, with devices.js and
// cluster.js) and the evidence page (evidence.js): each page loads it first. Plain script, no
// build step.
"use strict";

// TOKEN_KEY is where the pages keep the API token (localStorage), so one entered on the live
// page serves the evidence page too.
const TOKEN_KEY = "vinfer.token";

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
