package metrics_test

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/internal/defs"
	"github.com/vinfer/vinfer/metrics"
)

type trustView struct{ counters map[string]uint64 }

func (c trustView) ClusterView() defs.ClusterView {
	return defs.ClusterView{Self: "a", State: "member", Counters: c.counters}
}
func (trustView) Owner(string) (string, string, bool, bool) { return "", "", false, false }
func (trustView) RegisterStream(config.Stream) error        { return nil }
func (trustView) UnregisterStream(string) error             { return nil }

// TestClusterTrustMetrics: the node's rejected entries and shunned nodes are counters of
// /metrics, both exported at 0 before their first.
func TestClusterTrustMetrics(t *testing.T) {
	m := metrics.New()
	m.WatchCluster(trustView{map[string]uint64{"rejected": 7}})
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	for _, want := range []string{`vinfer_cluster_trust_total{kind="rejected"} 7`, `vinfer_cluster_trust_total{kind="shunned"} 0`} {
		if !strings.Contains(rec.Body.String(), want) {
			t.Errorf("no %s in /metrics", want)
		}
	}
}
