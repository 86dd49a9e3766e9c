package api

import (
	"expvar"
	"fmt"
	"net/http"
	"net/http/pprof"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vinfer/vinfer/internal/defs"
	"github.com/vinfer/vinfer/internal/redact"
)

// healthz answers GET /healthz: 200 while the process serves requests.
func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"status": "ok",
		"uptime_seconds": round2(time.Since(s.App.Started()).Seconds())})
}

// readyz answers GET /readyz: 200 when every model that is preloaded or used by a stream is
// loaded and every stream's source has started (delivered its first access unit, or ended),
// else 503 with the reasons. A stream that failed is listed but does not hold readiness back:
// other streams are served.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	var waiting, failed []string
	needed := map[string]bool{}
	models := s.App.Models()
	for _, m := range models {
		if m.Decl.Preload {
			needed[m.Decl.Name] = true
		}
	}
	for _, st := range s.App.Streams() {
		needed[st.Decl.Model] = true
		switch st.State() {
		case defs.StateFailed:
			failed = append(failed, fmt.Sprintf("stream %s: %s", st.Decl.ID, redact.Message(st.Err.Error(), st.Decl.Source)))
		case defs.StateStarting:
			waiting = append(waiting, fmt.Sprintf("stream %s: source not started (no access unit yet)", st.Decl.ID))
		}
	}
	for _, m := range models {
		if needed[m.Decl.Name] && !m.Loaded {
			waiting = append([]string{fmt.Sprintf("model %s: not loaded", m.Decl.Name)}, waiting...)
		}
	}
	body := map[string]any{"ready": len(waiting) == 0}
	if len(waiting) > 0 {
		body["waiting"] = waiting
	}
	if len(failed) > 0 {
		body["failed"] = failed
	}
	code := http.StatusOK
	if len(waiting) > 0 {
		code = http.StatusServiceUnavailable
	}
	writeJSON(w, code, body)
}

// debugRoutes mounts net/http/pprof and expvar under /debug with handle (behind the token
// check).
func debugRoutes(handle func(pattern string, h http.Handler)) {
	handle("/debug/pprof/", http.HandlerFunc(pprof.Index))
	handle("/debug/pprof/cmdline", http.HandlerFunc(pprof.Cmdline))
	handle("/debug/pprof/profile", http.HandlerFunc(pprof.Profile))
	handle("/debug/pprof/symbol", http.HandlerFunc(pprof.Symbol))
	handle("/debug/pprof/trace", http.HandlerFunc(pprof.Trace))
	handle("/debug/vars", expvar.Handler())
}

// expvar publishes one "vinfer" variable for the process (expvar names are global); it reports
// the most recently started server's streams and models.
var (
	expvarOnce   sync.Once
	expvarServer atomic.Pointer[Server]
)

func publishExpvar(s *Server) {
	expvarServer.Store(s)
	expvarOnce.Do(func() {
		expvar.Publish("vinfer", expvar.Func(func() any {
			srv := expvarServer.Load()
			if srv == nil {
				return nil
			}
			streams := map[string]any{}
			for _, st := range srv.App.Streams() {
				c := &st.Counters
				streams[st.Decl.ID] = map[string]int64{
					"access_units": c.AccessUnits, "decoded": c.Decoded, "inferred": c.Inferred,
					"dropped": c.DroppedTotal(), "detections": c.Detections, "queue": int64(st.Queue),
				}
			}
			models := map[string]any{}
			for _, m := range srv.App.Models() {
				if m.Loaded {
					models[m.Decl.Name] = map[string]int64{"batches": m.Batches, "frames": m.BatchFrames}
				}
			}
			return map[string]any{"uptime_seconds": time.Since(srv.App.Started()).Seconds(),
				"streams": streams, "models": models}
		}))
	})
}

func unpublishExpvar(s *Server) { expvarServer.CompareAndSwap(s, nil) }
