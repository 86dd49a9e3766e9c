// Package api is vinfer's control plane: an HTTP server that lists, adds and removes streams at
// run time, reloads models, reports health and readiness, streams detection events over
// Server-Sent Events and WebSocket, serves snapshots with boxes drawn, Prometheus metrics,
// pprof and expvar, and a web page (embedded, no build step) to watch and drive it all.
//
// Routes (JSON unless noted; errors are {"error": "what to fix", "status": code}):
//
//	GET    /healthz                          process alive
//	GET    /readyz                           200 when models are loaded and sources started, else 503 with reasons
//	GET    /api                              this route list
//	GET    /api/streams                      streams with counters and rates; in a cluster every node's, each with its node (?scope=local: this node's)
//	POST   /api/streams                      add a stream: a config.Stream, {"id","source","model",...} as in the config file
//	GET    /api/streams/{id}                 one stream
//	DELETE /api/streams/{id}                 stop and remove a stream
//	POST   /api/streams/{id}/wake            a gated stream analyses every frame again (an idle one decodes its held GOP first)
//	GET    /api/streams/{id}/scene           zones and lines with their live counts
//	PUT    /api/streams/{id}/scene           replace zones and lines: {"zones":[…],"lines":[…]} (applied at the next frame)
//	GET    /api/streams/{id}/snapshot.jpg    latest frame, boxes and labels drawn (?boxes=0, ?width=N, ?quality=Q, ?wait=0)
//	POST   /api/streams/{id}/whep            live video over WebRTC: SDP offer in, answer out (api/live.go)
//	DELETE /api/streams/{id}/whep/{session}  leave a WebRTC session
//	GET    /api/streams/{id}/mse             WebSocket: live video as fragmented MP4 with the results
//	GET    /api/cluster                      the cluster's nodes, and which node runs which stream (cluster: section)
//	GET    /api/models                       declared models and their state
//	POST   /api/models/{name}/reload         load the model file again and swap it in
//	GET    /api/sinks                        delivering sinks (MQTT, Kafka, NATS, webhook): up, outbox state, counters
//	GET    /api/gb28181/devices              GB28181 devices, channels, status and sessions (gb28181: section)
//	GET    /api/gb28181/upstream             GB28181 upper platforms: registration, live views, counters
//	GET    /api/events                       Server-Sent Events, one "result" event per inferred frame (?stream=ID)
//	GET    /api/ws                           WebSocket, one text message per inferred frame (?stream=ID)
//	GET    /api/evidence                     recorded events with clips and snapshots (?stream, type, since, limit, cursor)
//	GET    /api/evidence/{id}[/clip.mp4|/snapshot.jpg|/frame.jpg]   one recorded event, its clip (range requests), its best frame, its own frame
//	GET    /api/events?…&limit=, /api/events/{id}[/…]   the same under /api/events (api/evidence.go)
//	GET    /metrics                          Prometheus exposition
//	GET    /debug/pprof/…, /debug/vars       profiling and expvar
//	GET    /                                 the web page
//
// With a token set, /api, /metrics and /debug need "Authorization: Bearer TOKEN" (or
// ?access_token=TOKEN, for EventSource, WebSocket and <img>, which cannot send headers);
// named tokens (Server.Tokens) hold a scope, viewer, operator or admin, per route and method
// (api/scopes.go), optionally stream ids and a rate of state-changing calls;
// /healthz, /readyz and the page itself stay open. Source URLs are redacted in every response and
// log line.
package api

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/internal/defs"
	"github.com/vinfer/vinfer/metrics"
)

// DefaultAddr is the address the server listens on when Addr is empty: loopback only, since
// the API can add sources and the page shows the video.
const DefaultAddr = "127.0.0.1:8080"

// maxBody bounds request bodies (a stream declaration is a few hundred bytes).
const maxBody = 64 << 10

// Core is what the API drives and shows: the small interfaces of package defs, which the app
// satisfies.
type Core interface {
	defs.Streams
	defs.StreamControl
	defs.Models
	defs.GPUs
	defs.Frames
	defs.Results
	// Started is when the system started.
	Started() time.Time
}

// Server is the HTTP API of a running system. Set the fields, then Start; Close stops it.
type Server struct {
	// App is the running vinfer the API drives (required).
	App Core
	// Metrics is served on /metrics and counts requests and events. Give it to the pipeline as
	// its Observer for the per-frame histograms; nil: a set without them.
	Metrics *metrics.Metrics
	// Addr is the TCP listen address (DefaultAddr when empty; port 0 picks a free port).
	Addr string
	// Token, when set, is the bearer token the API, /metrics and /debug require: an admin
	// token, labelled "token" in the audit log.
	Token string
	// Tokens are further bearer tokens, each with a label, a scope and limits (api/scopes.go);
	// with any set, every route behind the token check requires one of them or Token.
	Tokens []config.Token
	// Log receives request and control-plane events (default App.Log).
	Log *slog.Logger
	// Insecure allows listening beyond loopback without a token (Start refuses otherwise).
	Insecure bool
	// AllowedHosts and AllowedOrigins extend the browser guard (see guard): Host names besides
	// the listen host, localhost and IP literals; origins besides the server's own.
	AllowedHosts, AllowedOrigins []string
	// TLSCert and TLSKey, both set, serve HTTPS (PEM files).
	TLSCert, TLSKey string
	// BodyTimeout bounds reading a request body (default 10 s); WriteTimeout writing a
	// response other than an event stream (default 30 s).
	BodyTimeout, WriteTimeout time.Duration
	// Evidence serves the recorded events with their clips and snapshots (/api/evidence);
	// nil: those routes answer 404.
	Evidence defs.Evidence
	// MaxSnapshots bounds the snapshots encoded at once (default 2); more wait up to 2 s,
	// then get 503.
	MaxSnapshots int
	// Cluster, when this node is in a cluster (package cluster): GET /api/cluster shows it,
	// POST and DELETE /api/streams go through its registry, and per-stream calls for streams
	// another node runs are forwarded there (api/cluster.go).
	Cluster defs.Cluster
	// Live answers WebRTC offers for the streams' live video (api/live.go); nil: those routes
	// answer 404.
	Live defs.Live

	ctx     context.Context
	cancel  context.CancelFunc
	ln      net.Listener
	srv     *http.Server
	handler http.Handler
	tracker *tracker
	guard   *guard
	snaps   chan struct{}
	wg      sync.WaitGroup
	closing sync.Once
	closed  error
	creds   []*credential // Token and Tokens; none: no token check
	routed  []string      // patterns registered behind the token check (TestRouteScopes)
	exports exportSlots   // recording and results exports being answered (api/exports.go)

	// evHeldBy remembers which node holds an event (api/evidence_cluster.go).
	evHeldBy heldBy
	// evLegacy bounds the lookups of event ids that name no node (api/lookupfair.go).
	evLegacy lookupLimit
}

// Start validates the configuration, starts listening and serves in the background. Errors
// name the problem: no app, or an address that cannot be bound.
func (s *Server) Start() error {
	if s.App == nil {
		return errors.New("api: no app to serve")
	}
	if s.Log == nil {
		s.Log = slog.Default()
	}
	if s.Addr == "" {
		s.Addr = DefaultAddr
	}
	creds, err := s.credentials()
	if err != nil {
		return fmt.Errorf("api: %w", err)
	}
	s.creds = creds
	if len(s.creds) == 0 && !s.Insecure && !Loopback(s.Addr) {
		return fmt.Errorf("api: %w: %s (set output.token, or output.insecure: true to accept it)", ErrInsecure, s.Addr)
	}
	if s.BodyTimeout <= 0 {
		s.BodyTimeout = 10 * time.Second
	}
	if s.WriteTimeout <= 0 {
		s.WriteTimeout = 30 * time.Second
	}
	if s.MaxSnapshots <= 0 {
		s.MaxSnapshots = 2
	}
	s.snaps = make(chan struct{}, s.MaxSnapshots)
	s.guard = newGuard(s.Addr, s.AllowedHosts, s.AllowedOrigins)
	s.ctx, s.cancel = context.WithCancel(context.Background())
	if s.Metrics == nil {
		s.Metrics = metrics.New()
	}
	s.Metrics.Watch(s.App, s.ctx.Done())
	if s.Cluster != nil {
		s.Metrics.WatchCluster(s.Cluster)
	}
	s.tracker = newTracker()
	events, unsubscribe := s.App.Subscribe(defs.Subscription{})
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer unsubscribe()
		s.tracker.run(s.ctx, events)
	}()
	s.handler = s.routes()
	publishExpvar(s)

	ln, err := net.Listen("tcp", s.Addr)
	if err != nil {
		s.cancel()
		s.wg.Wait()
		return fmt.Errorf("api: listen on %s: %w (choose another address with --http, e.g. 127.0.0.1:8081)", s.Addr, err)
	}
	s.ln = ln
	s.srv = &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		BaseContext:       func(net.Listener) context.Context { return s.ctx },
		ErrorLog:          slog.NewLogLogger(s.Log.Handler(), slog.LevelDebug),
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		serve := func() error { return s.srv.Serve(ln) }
		if s.TLSCert != "" {
			serve = func() error { return s.srv.ServeTLS(ln, s.TLSCert, s.TLSKey) }
		}
		if err := serve(); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.Log.Error("api: serve", "err", err)
		}
	}()
	s.Log.Info("api: serving", "url", s.URL(), "tokens", len(s.creds))
	return nil
}

// URL is the server's base URL (http://host:port, https:// with TLS), valid after Start.
func (s *Server) URL() string {
	if s.TLSCert != "" {
		return "https://" + s.ln.Addr().String()
	}
	return "http://" + s.ln.Addr().String()
}

// Handler returns the server's routes (valid after Start), e.g. to mount them elsewhere.
func (s *Server) Handler() http.Handler { return s.handler }

// closeGrace is how long Close lets answers in flight finish before cutting their connections.
const closeGrace = 2 * time.Second

// Close ends event streams, stops listening and waits up to closeGrace for answers in flight,
// then cuts them. Later calls return the first call's result.
func (s *Server) Close() error {
	if s.srv == nil {
		return nil
	}
	s.closing.Do(func() {
		s.cancel() // ends SSE and WebSocket handlers, the tracker and the metrics sampler
		ctx, done := context.WithTimeout(context.Background(), closeGrace)
		defer done()
		s.closed = s.srv.Shutdown(ctx)
		if errors.Is(s.closed, context.DeadlineExceeded) {
			// Answers still being written (an export to a client that stopped reading) are cut.
			s.Log.Info("api: answers in flight cut at close", "after", closeGrace)
			s.closed = s.srv.Close()
		}
		s.wg.Wait()
		unpublishExpvar(s)
	})
	return s.closed
}

// routes builds the handler tree: authentication and accounting around a ServeMux.
func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	authed := func(pattern string, h http.Handler) {
		s.routed = append(s.routed, pattern)
		mux.Handle(pattern, s.authed(typed(h)))
	}
	api := func(pattern string, h http.HandlerFunc) { authed(pattern, h) }

	mux.Handle("/healthz", typed(http.HandlerFunc(s.healthz)))
	mux.Handle("/readyz", typed(http.HandlerFunc(s.readyz)))
	api("/api", s.index)
	api("/api/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "no API route %s %s: GET /api lists the routes", r.Method, r.URL.Path)
	})
	api("/api/streams", methods{"GET": s.listStreams, "POST": s.addStream}.serve)
	api("/api/streams/{id}", methods{"GET": s.clustered(s.getStream), "DELETE": s.deleteStream}.serve)
	api("/api/streams/{id}/snapshot.jpg", methods{"GET": s.clustered(s.snapshot)}.serve)
	api("/api/streams/{id}/wake", methods{"POST": s.clustered(s.wakeStream)}.serve)
	api("/api/streams/{id}/scene", methods{"GET": s.clustered(s.getScene), "PUT": s.clustered(s.putScene)}.serve)
	api("/api/cluster", methods{"GET": s.clusterInfo}.serve)
	api("/api/models", methods{"GET": s.listModels}.serve)
	api("/api/models/{name}", methods{"GET": s.getModel}.serve)
	api("/api/models/{name}/reload", methods{"POST": s.reloadModel}.serve)
	api("/api/sinks", methods{"GET": s.listSinks}.serve)
	api("/api/gb28181/devices", methods{"GET": s.gbDevices}.serve)
	api("/api/gb28181/upstream", methods{"GET": s.gbUpstreams}.serve)
	api("/api/onvif/cameras", methods{"GET": s.listCameras}.serve) // api/onvif.go
	api("/api/onvif/discover", methods{"POST": s.discoverCameras}.serve)
	api("/api/onvif/cameras/{id}/profiles", methods{"POST": s.cameraProfiles}.serve)
	api("/api/events", methods{"GET": s.recordedOr(s.clustered(s.sse))}.serve) // api/evidence.go
	api("/api/ws", methods{"GET": s.clustered(s.websocket)}.serve)
	s.evidenceRoutes(mux, api)
	s.recordingRoutes(api) // api/recordings.go
	s.liveRoutes(api)
	authed("/metrics", s.Metrics.Handler())
	debugRoutes(authed)
	mux.Handle("/", typed(webHandler()))
	return securityHeaders(s.account(s.guard.guarded(s.deadlines(mux))))
}

// contentSecurityPolicy allows the page its own script, style, images (the favicon is a data:
// URL, snapshots are decoded from blobs), media (clips; live video from a MediaSource, a blob:
// URL) and connections (fetch, EventSource, WebSocket), and
// nothing from elsewhere; no page may frame any response (clickjacking).
const contentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; " +
	"img-src 'self' data: blob:; media-src 'self' blob:; connect-src 'self'; object-src 'none'; base-uri 'none'; " +
	"form-action 'self'; frame-ancestors 'none'"

// securityHeaders sets, on every response (errors and refusals included), the headers that
// keep other sites from framing the server's pages and the page from loading foreign content.
func securityHeaders(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("X-Frame-Options", "DENY")
		hd.Set("Content-Security-Policy", contentSecurityPolicy)
		hd.Set("X-Content-Type-Options", "nosniff")
		h.ServeHTTP(w, r)
	})
}

// methods dispatches on the request method, answering others with a JSON 405 and an Allow
// header.
type methods map[string]http.HandlerFunc

func (m methods) serve(w http.ResponseWriter, r *http.Request) {
	h, ok := m[r.Method]
	if !ok && r.Method == http.MethodHead {
		h, ok = m[http.MethodGet]
	}
	if !ok {
		allow := make([]string, 0, len(m))
		for k := range m {
			allow = append(allow, k)
		}
		w.Header().Set("Allow", strings.Join(allow, ", "))
		writeError(w, http.StatusMethodNotAllowed, "%s %s: method not allowed (use %s)", r.Method, r.URL.Path, strings.Join(allow, " or "))
		return
	}
	h(w, r)
}

// authed requires a bearer token, when any is set, whose scope and streams allow the route
// (routeAccess), within its rate; the token's label goes to the audit line.
func (s *Server) authed(h http.Handler) http.Handler {
	if len(s.creds) == 0 {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, how := bearer(r)
		if got == "" {
			w.Header().Set("WWW-Authenticate", `Bearer realm="vinfer"`)
			writeError(w, http.StatusUnauthorized, "missing bearer token: send the header \"Authorization: Bearer TOKEN\" (or ?access_token=TOKEN for EventSource, WebSocket and images)")
			return
		}
		c := match(s.creds, got)
		if c == nil {
			w.Header().Set("WWW-Authenticate", `Bearer realm="vinfer", error="invalid_token"`)
			writeError(w, http.StatusUnauthorized, "wrong bearer token in the %s: use the token vinfer was started with (output.token or output.tokens in the config)", how)
			return
		}
		if who, ok := r.Context().Value(whoKey{}).(*string); ok {
			*who = c.label
		}
		if !s.permit(w, r, c) {
			return
		}
		h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), credKey{}, c)))
	})
}

// bearer returns the request's token (RFC 6750 §2.1 header, else §2.3 query parameter) and
// where it was found.
func bearer(r *http.Request) (token, where string) {
	if h := r.Header.Get("Authorization"); h != "" {
		scheme, tok, ok := strings.Cut(h, " ")
		if ok && strings.EqualFold(scheme, "Bearer") {
			return strings.TrimSpace(tok), "Authorization header"
		}
		return "", ""
	}
	if t := r.URL.Query().Get("access_token"); t != "" {
		return t, "access_token parameter"
	}
	return "", ""
}

// account counts requests by route pattern and status, and logs them at debug level.
func (s *Server) account(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t0 := time.Now()
		rec := &statusRecorder{ResponseWriter: w}
		r, who := withWho(r)
		h.ServeHTTP(rec, r)
		if rec.status == 0 {
			rec.status = http.StatusOK
		}
		route := r.Pattern
		if route == "" || route == "/" {
			route = "other"
		}
		s.Metrics.ObserveRequest(route, rec.status)
		if changesState(r) && r.Method != http.MethodGet {
			s.audit(r, rec.status, *who)
		}
		s.Log.Debug("api: request", "method", r.Method, "path", r.URL.Path, "status", rec.status,
			"duration", time.Since(t0).Round(time.Microsecond))
	})
}

// statusRecorder remembers the status code; Unwrap lets http.ResponseController reach the
// connection's Flush and Hijack (SSE, WebSocket).
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// Hijack hands the connection over (WebSocket upgrade); the status is 101 then.
func (r *statusRecorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	r.status = http.StatusSwitchingProtocols
	return http.NewResponseController(r.ResponseWriter).Hijack()
}

// Flush sends buffered data (SSE).
func (r *statusRecorder) Flush() { _ = http.NewResponseController(r.ResponseWriter).Flush() }

// apiError is the body of every error response.
type apiError struct {
	Error  string `json:"error"`
	Status int    `json:"status"`
}

// writeError writes a JSON error whose message says what to fix.
func writeError(w http.ResponseWriter, code int, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if len(msg) > maxErrorText { // a body of thousands of bad points must not echo them all
		cut := maxErrorText
		for cut > 0 && !utf8.RuneStart(msg[cut]) {
			cut--
		}
		msg = msg[:cut] + fmt.Sprintf("… (%d more bytes)", len(msg)-cut)
	}
	writeJSON(w, code, apiError{Error: msg, Status: code})
}

// maxErrorText bounds the error text of a response.
const maxErrorText = 4 << 10

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

// index lists the routes and the features the node runs (features.go).
func (s *Server) index(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{
		"routes": []string{
			"GET /healthz", "GET /readyz",
			"GET /api/streams", "POST /api/streams", "GET /api/streams/{id}", "DELETE /api/streams/{id}",
			"GET /api/streams/{id}/snapshot.jpg",
			"POST /api/streams/{id}/whep", "DELETE /api/streams/{id}/whep/{session}", "GET /api/streams/{id}/mse (WebSocket)",
			"GET /api/models", "GET /api/models/{name}", "POST /api/models/{name}/reload",
			"GET /api/sinks", "GET /api/gb28181/devices", "GET /api/gb28181/upstream", "GET /api/cluster",
			"GET /api/events (SSE)", "GET /api/ws (WebSocket)",
			"GET /api/evidence", "GET /api/evidence/{id}", "GET /api/evidence/{id}/clip.mp4", "GET /api/evidence/{id}/snapshot.jpg", "GET /api/evidence/{id}/frame.jpg",
			"GET /api/events?stream=&type=&since=&limit= (recorded)", "GET /api/events/{id}[/clip.mp4|/snapshot.jpg|/frame.jpg]",
			"GET /metrics", "GET /debug/pprof/", "GET /debug/vars",
		},
		"features": s.features(),
	})
}
