package metrics

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vinfer/vinfer/internal/defs"
)

// Cluster metrics, read at scrape time from the node's view of the cluster (WatchCluster);
// none without a cluster.
var (
	descClusterMember  = desc("cluster_member", "1 while this node is a member of the cluster, 0 when isolated (lost NATS for longer than a lease: its streams are stopped) or refused (another live node has its name).")
	descClusterNodes   = desc("cluster_nodes", "Nodes known from their heartbeats, by state: live (heard within a lease) or dead.", "state")
	descClusterStreams = desc("cluster_streams", "Streams each node owns (holds the owner key of), as this node sees it.", "node")
	descClusterReg     = desc("cluster_registry_streams", "Streams of the cluster's registry by state: running (on its place), moving (handed over), unowned (placed, not started yet), pending (every live node at its cap).", "state")
	descClusterSeen    = desc("cluster_node_last_seen_seconds", "Time since this node saw each node's last heartbeat.", "node")
	descClusterChanges = desc("cluster_ownership_changes_total", "This node's ownership changes, by kind: started, start_failed, handed_over (stopped and released to the stream's new place), taken_over (from a dead node), fenced (stopped: the owner key moved).", "kind")
	descClusterRebuilt = desc("cluster_store_recoveries_total", "Times this node rebuilt the cluster's JetStream buckets after NATS lost its store (owner keys, heartbeat and registry republished).")
)

// clusterKinds are the kinds of vinfer_cluster_ownership_changes_total, exported at 0 before
// their first change.
var clusterKinds = []string{"started", "start_failed", "handed_over", "taken_over", "fenced"}

// clusterStates are the registry states of vinfer_cluster_registry_streams.
var clusterStates = []string{"running", "moving", "unowned", "pending"}

type clusterRef struct{ defs.Cluster }

// clusterCollector reads the watched cluster at scrape time.
type clusterCollector struct{ c *atomic.Pointer[clusterRef] }

// Describe implements prometheus.Collector.
func (clusterCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descClusterMember, descClusterNodes, descClusterStreams, descClusterReg, descClusterSeen, descClusterChanges, descClusterRebuilt, descClusterTrust} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (cc clusterCollector) Collect(ch chan<- prometheus.Metric) {
	ref := cc.c.Load()
	if ref == nil {
		return
	}
	v := ref.ClusterView()
	g := func(d *prometheus.Desc, val float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, val, labels...)
	}
	member := 0.0
	if v.State == "member" {
		member = 1
	}
	g(descClusterMember, member)
	live, dead := 0, 0
	for _, n := range v.Nodes {
		if n.Live {
			live++
		} else {
			dead++
		}
		g(descClusterStreams, float64(len(n.Streams)), n.Name)
		g(descClusterSeen, n.LastSeen.Seconds(), n.Name)
	}
	g(descClusterNodes, float64(live), "live")
	g(descClusterNodes, float64(dead), "dead")
	states := map[string]int{}
	for _, s := range v.Streams {
		states[s.State]++
	}
	for _, s := range clusterStates {
		g(descClusterReg, float64(states[s]), s)
	}
	for _, k := range clusterKinds {
		ch <- prometheus.MustNewConstMetric(descClusterChanges, prometheus.CounterValue, float64(v.Counters[k]), k)
	}
	ch <- prometheus.MustNewConstMetric(descClusterRebuilt, prometheus.CounterValue, float64(v.Counters["store_recovered"]))
	collectClusterTrust(ch, v)
}

// WatchCluster makes the scrape-time metrics read the node's view of its cluster
// (vinfer_cluster_*); nil stops them.
func (m *Metrics) WatchCluster(c defs.Cluster) {
	if c == nil {
		m.cluster.Store(nil)
		return
	}
	m.cluster.Store(&clusterRef{c})
}

// ObserveForward counts a per-stream API request forwarded to the node that runs the stream,
// by that node and result (ok: it answered; error: it did not).
func (m *Metrics) ObserveForward(node string, err error) {
	res := "ok"
	if err != nil {
		res = "error"
	}
	m.forwarded.WithLabelValues(node, res).Inc()
}
