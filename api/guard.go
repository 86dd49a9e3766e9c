package api

import (
	"errors"
	"mime"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
)

// Errors of the browser guard.
var (
	// ErrHost: the Host header names a host the server does not answer to (DNS rebinding).
	ErrHost = errors.New("host not allowed")
	// ErrOrigin: a state change or WebSocket from another site's page.
	ErrOrigin = errors.New("cross-origin request refused")
)

// guard keeps web pages of other sites out: a Host check defeats DNS rebinding (a page whose
// name resolves to 127.0.0.1 sends its own name as Host), an Origin check refuses state changes
// and WebSocket upgrades from other origins. Clients that are not browsers send no Origin.
type guard struct {
	anyHost bool
	hosts   map[string]bool // lower case, without port
	origins map[string]bool // scheme://host[:port], lower case
}

// newGuard allows the listen host, localhost and every IP literal (rebinding needs a name),
// the machine's host name when listening beyond loopback, and the configured extras ("*" in
// hosts turns the Host check off, for a reverse proxy that checks it).
func newGuard(listen string, hosts, origins []string) *guard {
	g := &guard{hosts: map[string]bool{"localhost": true}, origins: map[string]bool{}}
	if h, _, err := net.SplitHostPort(listen); err == nil {
		if ip := net.ParseIP(h); h == "" || (ip != nil && ip.IsUnspecified()) || (ip != nil && !ip.IsLoopback()) {
			if name, err := os.Hostname(); err == nil {
				g.hosts[strings.ToLower(name)] = true
			}
		}
		if h != "" {
			g.hosts[strings.ToLower(h)] = true
		}
	}
	for _, h := range hosts {
		if h == "*" {
			g.anyHost = true
		}
		g.hosts[strings.ToLower(strings.TrimSpace(h))] = true
	}
	for _, o := range origins {
		g.origins[strings.ToLower(strings.TrimRight(strings.TrimSpace(o), "/"))] = true
	}
	return g
}

// hostOK reports whether a Host header value names this server.
func (g *guard) hostOK(hostport string) bool {
	if g.anyHost {
		return true
	}
	h := hostport
	if hh, _, err := net.SplitHostPort(hostport); err == nil {
		h = hh
	}
	h = strings.ToLower(strings.TrimSuffix(strings.TrimPrefix(h, "["), "]"))
	if h == "" {
		return false
	}
	if net.ParseIP(h) != nil {
		return true
	}
	return g.hosts[strings.TrimSuffix(h, ".")]
}

// originOK reports whether a browser request from origin may change state: the page was served
// by this server (same scheme-less host and port as the request), or the origin is configured.
func (g *guard) originOK(origin, host string) bool {
	o := strings.ToLower(origin)
	if g.origins[o] || g.origins["*"] {
		return true
	}
	u, err := url.Parse(o)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return false // includes "null" (sandboxed frames, file:// pages)
	}
	return strings.EqualFold(u.Host, host) && g.hostOK(u.Host)
}

// check answers a refused request and reports false.
func (g *guard) check(w http.ResponseWriter, r *http.Request) bool {
	if !g.hostOK(r.Host) {
		writeError(w, http.StatusMisdirectedRequest, "%v: %q is not a name of this server (add it to output.allowed_hosts)", ErrHost, r.Host)
		return false
	}
	if !changesState(r) {
		return true
	}
	if site := r.Header.Get("Sec-Fetch-Site"); site == "cross-site" {
		writeError(w, http.StatusForbidden, "%v: request from another site's page", ErrOrigin)
		return false
	}
	if o := r.Header.Get("Origin"); o != "" && !g.originOK(o, r.Host) {
		writeError(w, http.StatusForbidden, "%v: origin %q (add it to output.allowed_origins)", ErrOrigin, o)
		return false
	}
	return true
}

// typed refuses a POST or PUT not declared application/json or application/sdp (a WHEP offer,
// api/live.go) with 415: neither is a type a page may send to another origin without asking
// (CORS preflight). It runs after authentication and the scope check, so a client that may not
// call a route learns nothing of what it accepts.
func typed(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost || r.Method == http.MethodPut {
			if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" && mt != "application/sdp" {
				writeError(w, http.StatusUnsupportedMediaType, "Content-Type %q: send %s requests as application/json (also without a body; application/sdp for a WHEP offer)", r.Header.Get("Content-Type"), r.Method)
				return
			}
		}
		h.ServeHTTP(w, r)
	})
}

// changesState reports requests a page of another origin must not send: anything but GET, HEAD
// and OPTIONS, and WebSocket upgrades (browsers send those cross-origin without asking).
func changesState(r *http.Request) bool {
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return strings.EqualFold(r.Header.Get("Upgrade"), "websocket")
	}
	return true
}

// guarded refuses requests g does not allow, before h sees them.
func (g *guard) guarded(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if g.check(w, r) {
			h.ServeHTTP(w, r)
		}
	})
}
