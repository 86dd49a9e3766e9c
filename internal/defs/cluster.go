package defs

import (
	"errors"
	"time"

	"github.com/vinfer/vinfer/config"
)

// Cluster is a node's view of, and hand on, a cluster of vinfer nodes (package cluster): the
// API shows it and forwards per-stream calls to the stream's owner.
type Cluster interface {
	// ClusterView returns the nodes and who runs which stream.
	ClusterView() ClusterView
	// Owner returns the node that runs stream id and its advertised base URL; self is true when
	// it is this node. ok is false when the stream is not in the registry or no node runs it.
	Owner(id string) (node, url string, self, ok bool)
	// RegisterStream writes a stream declared through the API into the cluster's registry; the
	// node it falls to starts it (with the API's path policy). ErrStreamExists when the id is
	// taken.
	RegisterStream(s config.Stream) error
	// UnregisterStream removes a stream from the registry; its owner stops it.
	// ErrNoStream when there is none.
	UnregisterStream(id string) error
}

// Errors of Cluster.
var (
	// ErrStreamExists (errors.go) when the id is in the registry already.
	ErrNoStream = errors.New("no such stream in the cluster's registry")
)

// ClusterView is a snapshot of the cluster as one node sees it.
type ClusterView struct {
	// Self is this node's name; Bucket the key-value buckets' prefix.
	Self, Bucket string
	// State is this node's own state: "member", or "isolated" when it lost NATS for longer
	// than a lease (its streams are stopped).
	State string
	Nodes []ClusterNode
	// Streams are the registry's streams, sorted by id.
	Streams []ClusterStream
	// Counters count this node's ownership changes since it started: started and
	// start_failed (stream starts), handed_over (stopped and released to the stream's new
	// place), taken_over (owner key taken from a dead node), fenced (stopped because the owner
	// key moved to another node); rejected (entries failing the signature check) and shunned
	// (nodes skipped for a stream they did not take or held without running it).
	Counters map[string]uint64
}

// ClusterNode is one node known from its heartbeats.
type ClusterNode struct {
	Name, URL  string
	Weight     float64
	MaxStreams int
	// Live: a heartbeat arrived within the last lease.
	Live bool
	// LastSeen is how long ago this node saw its last heartbeat.
	LastSeen time.Duration
	// Streams are the streams the node owns (owner keys), sorted.
	Streams []string
	// Failed are streams the node could not start, with the reason (from its heartbeat).
	Failed map[string]string
}

// ClusterStream is one stream of the registry.
type ClusterStream struct {
	ID, Model string
	// Owner holds the stream's owner key ("" when none); Assigned is where rendezvous
	// hashing places it now ("" when every live node is at its cap).
	Owner, Assigned string
	// State: running (owned by its assigned node), moving (owned by another node, being
	// handed over), pending (no live node has room), unowned (assigned, not yet started).
	State string
}
