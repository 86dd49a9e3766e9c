package api

import (
	"expvar"
	"fmt"
	"net/http"
	"net/http/pprof"
	"sync"
	"sync/atomic"
	"time"
)

// healthz answers GET /healthz: 200 while the process serves requests.
func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"status": "ok",
		"uptime_seconds": round2(time.Since(s.App.Started).Seconds())})
}

// readyz answers GET /readyz: 200 when every model that is preloaded or used by a stream is
// loaded and every stream's source has started (delivered its first access unit, or ended),
// else 503 with the reasons. A stream that failed is listed but does not hold readiness back:
// other streams are served.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	var waiting, failed []string
	needed := map[string]bool{}
	for _, n := range s.App.Registry.Names() {
		if d, _ := s.App.Registry.Declaration(n); d.Preload {
			needed[n] = true
		}
	}
	for _, st := range s.App.Pipeline.Streams() {
		needed[st.Model] = true
		switch {
		case st.Err != nil:
			failed = append(failed, fmt.Sprintf("stream %s: %s", st.ID, scrubMessage(st.Err.Error(), s.rawSource(st.ID))))
		case !st.Ended && st.Stats.AccessUnits.Load() == 0:
			waiting = append(waiting, fmt.Sprintf("stream %s: source not started (no access unit yet)", st.ID))
		}
	}
	for _, n := range s.App.Registry.Names() {
		if !needed[n] {
			continue
		}
		if e := s.App.Registry.Loaded(n); e == nil || e.Current() == nil {
			waiting = append([]string{fmt.Sprintf("model %s: not loaded", n)}, waiting...)
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

// debugRoutes mounts net/http/pprof and expvar under /debug, behind wrap (the token check).
func debugRoutes(mux *http.ServeMux, wrap func(http.Handler) http.Handler) {
	mux.Handle("/debug/pprof/", wrap(http.HandlerFunc(pprof.Index)))
	mux.Handle("/debug/pprof/cmdline", wrap(http.HandlerFunc(pprof.Cmdline)))
	mux.Handle("/debug/pprof/profile", wrap(http.HandlerFunc(pprof.Profile)))
	mux.Handle("/debug/pprof/symbol", wrap(http.HandlerFunc(pprof.Symbol)))
	mux.Handle("/debug/pprof/trace", wrap(http.HandlerFunc(pprof.Trace)))
	mux.Handle("/debug/vars", wrap(expvar.Handler()))
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
			for _, st := range srv.App.Pipeline.Streams() {
				streams[st.ID] = map[string]int64{
					"access_units": st.Stats.AccessUnits.Load(), "decoded": st.Stats.Decoded.Load(),
					"inferred": st.Stats.Inferred.Load(), "dropped": st.Stats.DroppedTotal(),
					"detections": st.Stats.Detections.Load(), "queue": int64(st.Queue),
				}
			}
			models := map[string]any{}
			for n, b := range srv.App.Pipeline.ModelStats() {
				models[n] = map[string]int64{"batches": b[0], "frames": b[1]}
			}
			return map[string]any{"uptime_seconds": time.Since(srv.App.Started).Seconds(),
				"streams": streams, "models": models}
		}))
	})
}

func unpublishExpvar(s *Server) { expvarServer.CompareAndSwap(s, nil) }
