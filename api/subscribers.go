package api

import (
	"context"
	"errors"
	"net/http"
	"os"
)

// subscriberGone notes a live subscriber (kind metrics.SubscriberSSE or SubscriberWS) whose
// write failed with err: one that did not read within eventWriteTimeout is dropped, counted in
// vinfer_api_subscribers_dropped_total{kind} and logged at debug level; one that left is not.
func (s *Server) subscriberGone(kind string, r *http.Request, err error) {
	if !errors.Is(err, os.ErrDeadlineExceeded) && !errors.Is(err, context.DeadlineExceeded) {
		return
	}
	s.Metrics.ObserveSubscriberDropped(kind)
	s.Log.Debug("api: event stream client too slow, dropped", "kind", kind, "remote", r.RemoteAddr)
}
