package api

import (
	"expvar"
	"fmt"
	"net/http"
	"net/http/pprof"
	"strings"
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
// loaded, those of streams that failed to start aside (the API serves: it answers), else 503
// with the reasons under "waiting". Streams do not
// hold readiness back (a pod with one camera offline still serves the others); those not
// running are listed under "starting", "failed" and "degraded". With ?streams=all the view is
// strict: every stream must also have started (read its first access unit, or ended) and none
// may have failed. 400 for another value of streams.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	strict := false
	switch v := r.URL.Query().Get("streams"); v {
	case "":
	case "all":
		strict = true
	default:
		writeError(w, http.StatusBadRequest, "streams=%q: use streams=all (every stream must run), or leave it out (models loaded)", v)
		return
	}
	var waiting, starting, failed, degraded []string
	needed := map[string]bool{}
	models := s.App.Models()
	for _, m := range models {
		if m.Decl.Preload {
			needed[m.Decl.Name] = true
		}
	}
	for _, st := range s.App.Streams() {
		state := st.State()
		// A stream that could not start never loaded its model: strict view only.
		needed[st.Decl.Model] = needed[st.Decl.Model] || strict || state != defs.StateFailed
		switch state {
		case defs.StateFailed:
			msg := redact.Message(st.Err.Error(), st.Decl.Source)
			if p := "stream " + st.Decl.ID + ": "; !strings.HasPrefix(msg, p) {
				msg = p + msg
			}
			if r := st.Retry; r != nil && !r.Next.IsZero() {
				msg += fmt.Sprintf(" (attempt %d failed, next in %s)", r.Attempts, max(time.Until(r.Next), 0).Round(10*time.Millisecond))
			}
			failed = append(failed, msg)
		case defs.StateStarting:
			starting = append(starting, fmt.Sprintf("stream %s: source not started (no access unit yet)", st.Decl.ID))
		case defs.StateDegraded:
			degraded = append(degraded, fmt.Sprintf("stream %s: %.0f%% of its frames dropped over %s (inference behind)",
				st.Decl.ID, 100*st.Overload.Ratio, st.Overload.Window))
		}
	}
	for _, m := range models {
		if needed[m.Decl.Name] && !m.Loaded {
			waiting = append(waiting, fmt.Sprintf("model %s: not loaded", m.Decl.Name))
		}
	}
	if strict {
		waiting = append(append(waiting, starting...), failed...)
	}
	ready := len(waiting) == 0
	body := map[string]any{"ready": ready}
	for k, v := range map[string][]string{"waiting": waiting, "starting": starting, "failed": failed, "degraded": degraded} {
		if len(v) > 0 {
			body[k] = v
		}
	}
	code := http.StatusOK
	if !ready {
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
