package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/vinfer/vinfer/internal/defs"
)

// descClusterTrust counts what this node refused to trust (docs/deploy.md#trust).
var descClusterTrust = desc("cluster_trust_total", "What this node refused to trust, by kind: rejected (a bucket entry without a valid signature of cluster.secret_file, or a replayed heartbeat), shunned (a node skipped for a stream it was placed and did not take, or whose owner key it held without running it).", "kind")

// clusterTrustKinds are the kinds of vinfer_cluster_trust_total, exported at 0.
var clusterTrustKinds = []string{"rejected", "shunned"}

// collectClusterTrust sends vinfer_cluster_trust_total from a view's counters.
func collectClusterTrust(ch chan<- prometheus.Metric, v defs.ClusterView) {
	for _, k := range clusterTrustKinds {
		ch <- prometheus.MustNewConstMetric(descClusterTrust, prometheus.CounterValue, float64(v.Counters[k]), k)
	}
}
