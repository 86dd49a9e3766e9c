package metrics

import "github.com/prometheus/client_golang/prometheus"

// Kinds of live subscribers (ObserveSubscriberDropped).
const (
	SubscriberSSE = "sse"
	SubscriberWS  = "ws"
)

func newSubscribersDropped() *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Name: "api_subscribers_dropped_total",
		Help: "Live subscribers (GET /api/events, GET /api/ws) disconnected because they did not take a message within the write timeout, by kind (sse or ws).",
	}, []string{"kind"})
	c.WithLabelValues(SubscriberSSE)
	c.WithLabelValues(SubscriberWS)
	return c
}

// ObserveSubscriberDropped counts a live subscriber of kind SubscriberSSE or SubscriberWS
// disconnected for being too slow.
func (m *Metrics) ObserveSubscriberDropped(kind string) { m.subsDropped.WithLabelValues(kind).Inc() }
