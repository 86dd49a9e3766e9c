// Package cluster makes vinfer processes one cluster over NATS JetStream (an existing
// distributed engine, not a home-made one; docs/deploy.md):
//
//   - the stream registry is the key-value bucket BUCKET-streams (a stream added through any
//     node's API, or from a node's configuration file, is written there);
//   - each node announces itself in BUCKET-nodes with a heartbeat every lease/3; a node that
//     has not been heard from for a lease (measured on the observer's monotonic clock, so a
//     node whose wall clock is off changes nothing) is dead;
//   - each stream is owned by one node, recorded in BUCKET-owners; every node computes the same
//     placement (Assign: rendezvous hashing over the live nodes, weighted by capacity, with a
//     per-node cap) and a node only takes a stream's owner key by a compare-and-set on the key's
//     revision: when the key is free, or when its holder is dead. A node that is no longer a
//     stream's place stops it first and then releases the key (graceful handover), so the next
//     owner starts after the old one stopped. A node that runs a stream whose owner key changed
//     under it (it was thought dead) stops it at once;
//   - a node that cannot renew its heartbeat for 3/4 of a lease stops all its streams (others
//     take them over one lease after its last heartbeat), so a stream never runs twice for
//     longer than one lease;
//   - a node that finds the buckets lost (NATS restarted with an empty JetStream store) makes
//     them again and publishes what it knows: its owner keys, its heartbeat and the registry
//     (store.go).
//
// The package depends on the app only through Local (internal/defs' StreamControl and Streams).
package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"regexp"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/internal/defs"
	"github.com/vinfer/vinfer/internal/redact"
)

// Local is the node's own machine: the app's stream control and listing.
type Local interface {
	defs.StreamControl
	defs.Streams
}

// Options configure Start.
type Options struct {
	Config config.Cluster
	Local  Local
	// Seed are the configuration file's streams, written to the registry when absent (trusted:
	// their owner opens them without the API's path policy).
	Seed []config.Stream
	// DefaultMaxStreams is the cap when Config.MaxStreams is 0 (sources.max_streams).
	DefaultMaxStreams int
	Log               *slog.Logger
	// RetryFailed is how long a stream that could not be started waits before its owner tries
	// again (default 10 s).
	RetryFailed time.Duration
	// wall is the wall clock of the stamps the node publishes (heartbeats' sent_ms; default
	// time.Now): tests set a clock that is off. Nothing the node decides reads it.
	wall func() time.Time
}

// Errors of Start.
var (
	// ErrUnavailable: NATS could not be reached.
	ErrUnavailable = errors.New("cluster: NATS unavailable")
	// ErrDuplicateName: another live node has this node's name.
	ErrDuplicateName = errors.New("cluster: another live node has this name")
)

type regEntry struct {
	Stream  config.Stream `json:"stream"`
	Trusted bool          `json:"trusted,omitempty"`
	AddedBy string        `json:"added_by,omitempty"`
}

type ownerEntry struct {
	Node     string `json:"node"`
	Instance string `json:"instance"`
}

type beat struct {
	Node       string            `json:"node"`
	Instance   string            `json:"instance"`
	URL        string            `json:"url,omitempty"`
	Weight     float64           `json:"weight"`
	MaxStreams int               `json:"max_streams,omitempty"`
	Failed     map[string]string `json:"failed,omitempty"`
	// SentMS is the sender's wall clock, Unix milliseconds: compared with the NATS server's
	// stamp to warn about a clock that is off (clock.go) and, when signed, to refuse a stale
	// heartbeat (sign.go); liveness never reads it.
	SentMS int64 `json:"sent_ms,omitempty"`
	// Seq numbers the instance's heartbeats from 1 (a replay is not newer than the last).
	Seq uint64 `json:"seq,omitempty"`
	// Running are the streams the node holds the owner key of and started (or tried to: see
	// Failed); a node placed a stream that does not report it within a lease loses it.
	Running []string `json:"running,omitempty"`
}

// claim is a stream placed on another node that neither runs it nor is kept from it: since
// when (this observer's monotonic clock) and that node's heartbeat count then.
type claim struct {
	node  string
	since time.Time
	beats uint64
}

// seqMark is the last heartbeat accepted from a node: its instance, sequence number and
// revision in the bucket.
type seqMark struct {
	instance string
	seq, rev uint64
}

type item[T any] struct {
	v    T
	rev  uint64
	seen time.Time // nodes: when this process saw the heartbeat (monotonic)
}

// Node is this process's membership in the cluster.
type Node struct {
	opt      Options
	log      *slog.Logger
	name     string
	instance string
	lease    time.Duration
	weight   float64
	max      int
	bucket   string

	sign    *signer          // nil: values unsigned
	trusted []*regexp.Regexp // cluster.trusted_peers
	beatSeq atomic.Uint64

	nc                      *nats.Conn
	js                      jetstream.JetStream
	kvStreams, kvOwners, kv jetstream.KeyValue

	// The store (store.go). storeIDs (the buckets' stream creation times), watchCancel and
	// registryLost belong to Start and then to the reconciler.
	storeIDs     [3]time.Time
	watchCancel  context.CancelFunc
	watchWG      sync.WaitGroup
	registryLost bool
	checkStore   atomic.Bool // the store may have changed: check it
	watchEnded   atomic.Bool // a watch ended by itself

	mu       sync.Mutex
	streams  map[string]item[regEntry]
	owners   map[string]item[ownerEntry]
	nodes    map[string]item[beat]
	badURL   map[string]time.Time // node → when its bad advertised URL was last logged
	badClock map[string]time.Time // node → when its clock offset was last logged
	badEntry map[string]time.Time // bucket/key → when its rejected entry was last logged
	lastSeq  map[string]seqMark   // node → its last accepted signed heartbeat
	beats    map[string]uint64    // node → heartbeats accepted from it
	// unserved are streams placed on another node that has not taken them yet (stream →
	// claim); shunned the nodes that left one untaken too long (stream → node → until when):
	// the stream is placed as if they were not there (lease.go).
	unserved map[string]claim
	held     map[string]claim // stream → the live node holding its key without running it
	shunned  map[string]map[string]time.Time
	// starting are the streams whose start is in progress: not listed as running yet.
	starting map[string]bool
	departed map[string]Departed // departed.go
	running  map[string]uint64   // streams this node started, under this owner-key revision
	failed   map[string]failure
	lastBeat time.Time
	beatRev  uint64
	isolated bool
	// stale: the connection dropped or the store was lost, and the buckets were not read
	// again since (store.go); nothing is planned meanwhile.
	stale    bool
	fatal    error
	counters map[string]uint64 // defs.ClusterView.Counters

	kick      chan struct{}
	ctx       context.Context
	cancel    context.CancelFunc
	wg        sync.WaitGroup
	done      chan struct{}
	once      sync.Once
	closeOnce sync.Once
}

type failure struct {
	err string
	at  time.Time
}

// Start connects to NATS, makes the buckets, claims the node's name (refused while another live
// node holds it), writes the seed streams and starts heartbeats and reconciliation.
func Start(ctx context.Context, o Options) (*Node, error) {
	c := o.Config
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if o.RetryFailed <= 0 {
		o.RetryFailed = 10 * time.Second
	}
	if o.wall == nil {
		o.wall = time.Now
	}
	name := c.Node
	if name == "" {
		h, err := os.Hostname()
		if err != nil {
			return nil, fmt.Errorf("cluster: no node name and no host name: %w", err)
		}
		name = h
	}
	id := make([]byte, 8)
	_, _ = rand.Read(id)
	n := &Node{opt: o, log: o.Log.With("node", name), name: name, instance: hex.EncodeToString(id),
		lease: c.LeaseDuration(), weight: c.NodeWeight(), max: c.MaxStreams, bucket: c.BucketName(),
		streams: map[string]item[regEntry]{}, owners: map[string]item[ownerEntry]{}, nodes: map[string]item[beat]{},
		badURL: map[string]time.Time{}, badClock: map[string]time.Time{}, badEntry: map[string]time.Time{},
		lastSeq: map[string]seqMark{}, beats: map[string]uint64{}, unserved: map[string]claim{}, held: map[string]claim{}, shunned: map[string]map[string]time.Time{}, starting: map[string]bool{}, departed: map[string]Departed{},
		running: map[string]uint64{}, failed: map[string]failure{}, counters: map[string]uint64{}, kick: make(chan struct{}, 1), done: make(chan struct{})}
	if n.max == 0 {
		n.max = o.DefaultMaxStreams
	}
	if c.SecretFile != "" {
		s, err := loadSecret(c.SecretFile)
		if err != nil {
			return nil, err
		}
		n.sign = s
	}
	for _, p := range c.TrustedPeers {
		re, err := config.PeerPattern(p)
		if err != nil {
			return nil, err
		}
		n.trusted = append(n.trusted, re)
	}
	opts, err := authOptions(c)
	if err != nil {
		return nil, err
	}
	opts = append(opts, nats.Name("vinfer "+name), nats.Timeout(n.lease),
		nats.MaxReconnects(-1), nats.ReconnectWait(n.lease/6), nats.RetryOnFailedConnect(false),
		nats.ReconnectBufSize(-1), // no request queued while cut off and replayed later
		// Watches do not survive a server's restart: the buckets are read again after each
		// reconnect, and a restarted server may have lost its store.
		nats.DisconnectErrHandler(func(*nats.Conn, error) { n.markStale() }),
		nats.ReconnectHandler(func(*nats.Conn) { n.suspectStore() }))
	nc, err := nats.Connect(c.NATS, opts...)
	if err != nil {
		return nil, connectError(redactedURLs(c.NATS), err)
	}
	n.nc = nc
	n.ctx, n.cancel = context.WithCancel(context.Background())
	if err := n.start(ctx); err != nil {
		n.cancel()
		n.watchWG.Wait()
		nc.Close()
		return nil, err
	}
	return n, nil
}

func (n *Node) start(ctx context.Context) error {
	js, err := jetstream.New(n.nc)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	n.js = js
	cctx, cancel := context.WithTimeout(ctx, n.storeTimeout())
	defer cancel()
	kvs, err := n.makeBuckets(cctx)
	if err != nil {
		return err
	}
	n.kvStreams, n.kvOwners, n.kv = kvs[0], kvs[1], kvs[2]
	if err := n.claimName(cctx); err != nil {
		return err
	}
	if err := n.startWatches(cctx); err != nil {
		return err
	}
	for _, s := range n.opt.Seed {
		b := n.sign.seal(kindStreams, s.ID, regEntry{Stream: s, Trusted: true, AddedBy: n.name})
		if _, err := n.kvStreams.Create(cctx, s.ID, b); err != nil && !errors.Is(err, jetstream.ErrKeyExists) {
			return fmt.Errorf("cluster: registering stream %s: %w", s.ID, err)
		}
	}
	n.wg.Add(2)
	go n.heartbeats()
	go n.reconciler()
	n.log.Info("cluster: joined", "bucket", n.bucket, "lease", n.lease, "weight", n.weight, "max_streams", n.max,
		"signed", n.sign != nil, "trusted_peers", len(n.trusted))
	if n.sign == nil && len(n.trusted) == 0 {
		n.log.Warn("cluster: neither cluster.trusted_peers nor cluster.secret_file is set: API calls are forwarded, " +
			"with the client's token, to any node that writes a heartbeat on this NATS account (docs/deploy.md#trust)")
	}
	return nil
}

// claimName writes this node's first heartbeat. A heartbeat key with the name already there is
// watched for 1.5 leases: a heartbeat from another instance in that time means a live node has
// the name (refused); silence means it is a dead predecessor (a restarted pod), whose key is
// taken over.
func (n *Node) claimName(ctx context.Context) error {
	t0 := time.Now()
	rev, err := n.kv.Create(ctx, n.name, n.beatJSON())
	if err == nil {
		n.lastBeat, n.beatRev = t0, rev
		return nil
	}
	if !errors.Is(err, jetstream.ErrKeyExists) {
		return fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	e, err := n.kv.Get(ctx, n.name)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	n.log.Info("cluster: a heartbeat with this node's name exists: waiting a lease and a half to see whether it is alive")
	w, err := n.kv.Watch(ctx, n.name, jetstream.UpdatesOnly())
	if err != nil {
		return fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	defer w.Stop()
	last := e.Revision()
	timer := time.NewTimer(n.lease * 3 / 2)
	defer timer.Stop()
	for wait := true; wait; {
		select {
		case u := <-w.Updates():
			if u == nil {
				continue
			}
			var b beat
			if u.Operation() == jetstream.KeyValuePut && n.sign.open(kindNodes, n.name, u.Value(), &b) == nil && b.Instance != n.instance {
				return fmt.Errorf("%w: %q (give each node its own cluster.node or --node-name)", ErrDuplicateName, n.name)
			}
			last = u.Revision()
		case <-timer.C:
			wait = false
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	t0 = time.Now()
	rev, err = n.kv.Update(ctx, n.name, n.beatJSON(), last)
	if err != nil {
		return fmt.Errorf("%w: %q: %v", ErrDuplicateName, n.name, err)
	}
	n.lastBeat, n.beatRev = t0, rev
	return nil
}

func (n *Node) beatJSON() []byte {
	n.mu.Lock()
	b := beat{Node: n.name, Instance: n.instance, URL: n.opt.Config.Advertise, Weight: n.weight, MaxStreams: n.max,
		SentMS: n.opt.wall().UnixMilli(), Seq: n.beatSeq.Add(1)}
	for id := range n.running {
		if !n.starting[id] {
			b.Running = append(b.Running, id)
		}
	}
	sort.Strings(b.Running)
	if len(n.failed) > 0 {
		b.Failed = map[string]string{}
		for id, f := range n.failed {
			b.Failed[id] = f.err
		}
	}
	n.mu.Unlock()
	return n.sign.seal(kindNodes, n.name, b)
}

func (n *Node) poke() {
	select {
	case n.kick <- struct{}{}:
	default:
	}
}

func (n *Node) applyStream(e jetstream.KeyValueEntry) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if e.Operation() != jetstream.KeyValuePut {
		delete(n.streams, e.Key())
		return
	}
	var r regEntry
	if err := n.openEntry(kindStreams, e, &r); errors.Is(err, ErrUnsigned) || errors.Is(err, ErrReplayed) {
		delete(n.streams, e.Key())
		n.rejectedLocked(kindStreams, e.Key(), err)
		return
	} else if err != nil || r.Stream.ID != e.Key() {
		n.log.Warn("cluster: ignoring a malformed registry entry", "key", e.Key(), "err", err)
		return
	}
	n.streams[e.Key()] = item[regEntry]{v: r, rev: e.Revision()}
}

func (n *Node) applyOwner(e jetstream.KeyValueEntry) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if e.Operation() != jetstream.KeyValuePut {
		delete(n.owners, e.Key())
		return
	}
	var o ownerEntry
	if err := n.openEntry(kindOwners, e, &o); errors.Is(err, ErrUnsigned) || errors.Is(err, ErrReplayed) {
		// Kept without a node: the key is there (taken by a compare-and-set on its revision)
		// but no node holds it.
		n.rejectedLocked(kindOwners, e.Key(), err)
		o = ownerEntry{}
	} else if err != nil {
		return
	}
	if cur, ok := n.owners[e.Key()]; ok && cur.rev > e.Revision() {
		return // this node's own write, applied already (setOwner)
	}
	n.owners[e.Key()] = item[ownerEntry]{v: o, rev: e.Revision()}
}

func (n *Node) applyNode(e jetstream.KeyValueEntry) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if e.Operation() != jetstream.KeyValuePut {
		delete(n.nodes, e.Key())
		delete(n.badURL, e.Key())
		delete(n.badClock, e.Key())
		delete(n.lastSeq, e.Key())
		n.forgetNodeLocked(e.Key())
		return
	}
	var b beat
	if err := n.openEntry(kindNodes, e, &b); err != nil {
		if errors.Is(err, ErrUnsigned) || errors.Is(err, ErrReplayed) {
			n.rejectedLocked(kindNodes, e.Key(), err)
		}
		return
	}
	if b.Node != e.Key() {
		n.rejectedLocked(kindNodes, e.Key(), fmt.Errorf("heartbeat of node %q under another key", b.Node))
		return
	}
	if n.sign != nil {
		if err := n.freshLocked(e, b); err != nil {
			n.rejectedLocked(kindNodes, e.Key(), err)
			return
		}
	}
	if b.Node == n.name && b.Instance != n.instance && n.fatal == nil {
		n.fatal = fmt.Errorf("%w: %q: another instance writes its heartbeat (give each node its own name)", ErrDuplicateName, n.name)
		n.log.Error(n.fatal.Error())
	}
	n.checkClockLocked(e, b)
	if b.URL != "" && b.Node != n.name {
		if err := checkPeerURL(b.URL); err != nil {
			// Still live for placement; no call (and no client token) is forwarded there.
			if warnDue(n.badURL, e.Key(), peerURLWarnEvery) {
				n.log.Warn("cluster: ignoring a node's advertised URL for forwarding", "peer", e.Key(), "url", redactedURL(b.URL), "err", err)
			}
			b.URL = ""
		} else if !n.trustedPeerLocked(b.URL) {
			if warnDue(n.badURL, e.Key(), peerURLWarnEvery) {
				n.log.Warn("cluster: a node's advertised URL is not in cluster.trusted_peers: no call is forwarded there", "peer", e.Key(), "url", redactedURL(b.URL))
			}
			b.URL = ""
		}
	}
	if prev, ok := n.nodes[e.Key()]; ok && prev.v.Instance != b.Instance {
		n.forgetNodeLocked(e.Key())
	}
	n.nodes[e.Key()] = item[beat]{v: b, rev: e.Revision(), seen: time.Now()}
	n.beats[e.Key()]++
}

// heartbeats renews the node's heartbeat every lease/3 and stops every local stream when it
// could not for 3/4 of a lease (checked every lease/6).
func (n *Node) heartbeats() {
	defer n.wg.Done()
	t := time.NewTicker(n.lease / 6)
	defer t.Stop()
	lastTry := time.Time{}
	for {
		select {
		case <-n.ctx.Done():
			return
		case <-t.C:
		}
		if time.Since(lastTry) >= n.lease/3-n.lease/12 {
			lastTry = time.Now()
			n.beat()
		}
		n.mu.Lock()
		lost := time.Since(n.lastBeat) >= n.lease*3/4 && !n.isolated
		if lost {
			n.isolated = true
		}
		fatal := n.fatal
		n.mu.Unlock()
		if lost {
			n.log.Warn("cluster: NATS unreachable for 3/4 of a lease: stopping this node's streams (other nodes take them over)")
			n.stopAll(WhyIsolated)
		}
		if fatal != nil {
			n.stopAll(WhyIsolated)
			n.once.Do(func() { close(n.done) })
			return
		}
	}
}

func (n *Node) beat() {
	ctx, cancel := context.WithTimeout(n.ctx, n.lease/3)
	defer cancel()
	t0 := time.Now()
	n.mu.Lock()
	rev := n.beatRev
	n.mu.Unlock()
	newRev, err := n.kv.Update(ctx, n.name, n.beatJSON(), rev)
	if err != nil && (errors.Is(err, jetstream.ErrKeyRevisionMismatch) || errors.Is(err, jetstream.ErrKeyExists)) {
		e, gerr := n.kv.Get(ctx, n.name)
		switch {
		case errors.Is(gerr, jetstream.ErrKeyNotFound): // aged out or deleted: write it again
			newRev, err = n.kv.Create(ctx, n.name, n.beatJSON())
		case gerr != nil:
			err = gerr
		default:
			var b beat
			if n.sign.open(kindNodes, n.name, e.Value(), &b) == nil && b.Instance == n.instance {
				newRev, err = n.kv.Update(ctx, n.name, n.beatJSON(), e.Revision())
			} else {
				n.mu.Lock()
				if n.fatal == nil {
					n.fatal = fmt.Errorf("%w: %q: another instance writes its heartbeat", ErrDuplicateName, n.name)
					n.log.Error(n.fatal.Error())
				}
				n.mu.Unlock()
				return
			}
		}
	}
	if err != nil {
		n.log.Debug("cluster: heartbeat failed", "err", err)
		if n.ctx.Err() == nil {
			n.suspectStore() // a bucket gone answers "no response from stream"
		}
		return
	}
	n.mu.Lock()
	n.beatRev, n.lastBeat = newRev, t0
	rejoined := n.isolated
	n.isolated = false
	n.mu.Unlock()
	if rejoined {
		n.log.Info("cluster: NATS reachable again: rejoining")
		n.poke()
	}
}

// reconciler brings the local streams in line with the placement, on every change and every
// lease/6 (dead nodes are noticed by time passing).
func (n *Node) reconciler() {
	defer n.wg.Done()
	t := time.NewTicker(n.lease / 6)
	defer t.Stop()
	for {
		select {
		case <-n.ctx.Done():
			return
		case <-t.C:
		case <-n.kick:
		}
		n.checkAndRecover()
		n.reconcile()
	}
}

// live returns the members of the placement: nodes heard from within a lease, this node while
// it is not isolated.
func (n *Node) liveLocked(now time.Time) []Member {
	var out []Member
	for name, it := range n.nodes {
		if name == n.name || now.Sub(it.seen) >= n.lease {
			continue
		}
		out = append(out, Member{Name: name, Weight: it.v.Weight, Max: it.v.MaxStreams})
	}
	if !n.isolated && n.fatal == nil {
		out = append(out, Member{Name: n.name, Weight: n.weight, Max: n.max})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

type action struct {
	id    string
	kind  int // stop, release, take, start
	rev   uint64
	entry regEntry
	from  string // actTake: the node holding the owner key
}

const (
	actStop    = iota // stop locally (fenced: the key is no longer ours)
	actRelease        // stop locally, then delete the owner key at rev
	actCreate         // create the owner key, start
	actTake           // update the owner key from rev (its holder is dead, or it is ours), start
	actCleanup        // delete the owner key of a removed stream whose holder is dead
)

func (n *Node) plan() []action {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.isolated || n.fatal != nil || n.stale {
		return nil
	}
	now := time.Now()
	members := n.liveLocked(now)
	live := map[string]bool{}
	for _, m := range members {
		live[m.Name] = true
	}
	ids := make([]string, 0, len(n.streams))
	for id := range n.streams {
		ids = append(ids, id)
	}
	place := AssignExcept(ids, members, n.skipLocked)
	n.trackUnservedLocked(place, live, now)
	var acts []action
	for id, rev := range n.running {
		o, owned := n.owners[id]
		_, registered := n.streams[id]
		switch {
		case !owned || o.rev != rev || o.v.Node != n.name || o.v.Instance != n.instance:
			acts = append(acts, action{id: id, kind: actStop})
		case !registered || place[id] != n.name:
			acts = append(acts, action{id: id, kind: actRelease, rev: rev})
		}
	}
	for _, id := range ids {
		if place[id] != n.name {
			continue
		}
		if _, ok := n.running[id]; ok {
			continue
		}
		if f, ok := n.failed[id]; ok && now.Sub(f.at) < n.opt.RetryFailed {
			continue
		}
		e := n.streams[id].v
		o, owned := n.owners[id]
		switch {
		case !owned:
			acts = append(acts, action{id: id, kind: actCreate, entry: e})
		case o.v.Node == n.name || !live[o.v.Node] || n.skipLocked(id, o.v.Node):
			acts = append(acts, action{id: id, kind: actTake, rev: o.rev, entry: e, from: o.v.Node})
		}
	}
	for id, o := range n.owners {
		// o.v.Node "": an entry that failed the signature check is no one's to clean up.
		if _, ok := n.streams[id]; !ok && !live[o.v.Node] && o.v.Node != "" {
			if _, mine := n.running[id]; !mine {
				acts = append(acts, action{id: id, kind: actCleanup, rev: o.rev})
			}
		}
	}
	sort.Slice(acts, func(i, j int) bool { // stops before starts
		if acts[i].kind != acts[j].kind {
			return acts[i].kind < acts[j].kind
		}
		return acts[i].id < acts[j].id
	})
	return acts
}

func (n *Node) reconcile() {
	for _, a := range n.plan() {
		if n.ctx.Err() != nil {
			return
		}
		ctx, cancel := context.WithTimeout(n.ctx, n.lease/2)
		switch a.kind {
		case actStop:
			n.log.Warn("cluster: stream's owner key moved to another node: stopping it here", "stream", a.id)
			n.stopLocal(a.id, WhyFenced)
			n.count("fenced")
		case actRelease:
			n.stopLocal(a.id, WhyHandedOver)
			if err := n.kvOwners.Delete(ctx, a.id, jetstream.LastRevision(a.rev)); err != nil {
				n.log.Debug("cluster: release", "stream", a.id, "err", err)
			} else {
				n.log.Info("cluster: stream handed over", "stream", a.id)
				n.count("handed_over")
			}
		case actCreate, actTake:
			val := n.sign.seal(kindOwners, a.id, ownerEntry{Node: n.name, Instance: n.instance})
			var rev uint64
			var err error
			if a.kind == actCreate {
				rev, err = n.kvOwners.Create(ctx, a.id, val)
			} else {
				rev, err = n.kvOwners.Update(ctx, a.id, val, a.rev)
			}
			if err != nil {
				n.log.Debug("cluster: owner key not taken", "stream", a.id, "err", err)
				break
			}
			n.mu.Lock() // the watcher brings the same revision later
			n.owners[a.id] = item[ownerEntry]{v: ownerEntry{Node: n.name, Instance: n.instance}, rev: rev}
			if a.kind == actTake && a.from != n.name {
				n.counters["taken_over"]++
			}
			n.mu.Unlock()
			n.startLocal(a.id, rev, a.entry)
		case actCleanup:
			_ = n.kvOwners.Delete(ctx, a.id, jetstream.LastRevision(a.rev))
		}
		cancel()
	}
}

// startLocal starts a stream whose owner key this node holds at rev.
func (n *Node) startLocal(id string, rev uint64, e regEntry) {
	n.mu.Lock()
	n.running[id] = rev // before the start: a fencing change seen meanwhile stops it again
	n.starting[id] = true
	n.mu.Unlock()
	var err error
	if e.Trusted {
		err = n.opt.Local.AddStream(e.Stream)
	} else {
		err = n.opt.Local.AddRemoteStream(e.Stream)
	}
	n.mu.Lock()
	delete(n.starting, id)
	if err != nil {
		// Heartbeats carry it to every node's API: without the source's credentials.
		n.failed[id] = failure{err: redact.Message(err.Error(), e.Stream.Source), at: time.Now()}
		n.counters["start_failed"]++
	} else {
		delete(n.failed, id)
		n.counters["started"]++
	}
	n.mu.Unlock()
	if err != nil {
		n.log.Warn("cluster: stream could not be started here (retried later)", "stream", id, "err", redact.Message(err.Error(), e.Stream.Source))
		return
	}
	n.log.Info("cluster: stream started", "stream", id, "owner_revision", rev)
}

// stopLocal stops stream id here, remembering its counters and why (Departed).
func (n *Node) stopLocal(id, why string) {
	n.mu.Lock()
	delete(n.running, id)
	_, failed := n.failed[id]
	delete(n.failed, id)
	n.mu.Unlock()
	if info, ok := n.opt.Local.Stream(id); ok {
		n.mu.Lock()
		n.departLocked(info, why)
		n.mu.Unlock()
		if err := n.opt.Local.RemoveStream(id); err != nil && !failed {
			n.log.Warn("cluster: stopping stream", "stream", id, "err", err)
		}
	}
}

func (n *Node) stopAll(why string) {
	n.mu.Lock()
	ids := make([]string, 0, len(n.running))
	for id := range n.running {
		ids = append(ids, id)
	}
	n.mu.Unlock()
	for _, id := range ids {
		n.stopLocal(id, why)
	}
}

// count adds one to a counter of ClusterView.Counters.
func (n *Node) count(name string) {
	n.mu.Lock()
	n.counters[name]++
	n.mu.Unlock()
}

// Done is closed when the node left the cluster by itself (another live node has its name);
// Err says why.
func (n *Node) Done() <-chan struct{} { return n.done }

// Err is why the node left the cluster, nil while it is a member.
func (n *Node) Err() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.fatal
}

// kill ends the node as SIGKILL would: no stream stopped, no key released (tests).
func (n *Node) kill() {
	n.cancel()
	n.nc.Close()
	n.wg.Wait()
	n.watchWG.Wait()
}

// Name is this node's name.
func (n *Node) Name() string { return n.name }

// Close leaves the cluster gracefully: stops the local streams and releases their owner keys
// (the other nodes start them at once), then removes the heartbeat.
func (n *Node) Close() error {
	n.closeOnce.Do(n.close)
	return nil
}

func (n *Node) close() {
	n.cancel()
	n.wg.Wait()
	n.watchWG.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), n.lease)
	defer cancel()
	n.mu.Lock()
	running := make(map[string]uint64, len(n.running))
	for id, rev := range n.running {
		running[id] = rev
	}
	n.mu.Unlock()
	for id, rev := range running {
		n.stopLocal(id, WhyHandedOver)
		_ = n.kvOwners.Delete(ctx, id, jetstream.LastRevision(rev))
	}
	if n.Err() == nil {
		_ = n.kv.Delete(ctx, n.name)
	}
	n.nc.Close()
	n.once.Do(func() { close(n.done) })
	n.log.Info("cluster: left")
}

// RegisterStream writes an API-declared stream into the registry.
func (n *Node) RegisterStream(s config.Stream) error {
	b := n.sign.seal(kindStreams, s.ID, regEntry{Stream: s, AddedBy: n.name})
	ctx, cancel := context.WithTimeout(n.ctx, n.lease)
	defer cancel()
	if _, err := n.kvStreams.Create(ctx, s.ID, b); err != nil {
		if errors.Is(err, jetstream.ErrKeyExists) {
			return fmt.Errorf("stream %s: %w", s.ID, defs.ErrStreamExists)
		}
		return fmt.Errorf("cluster: registering stream %s: %w", s.ID, err)
	}
	return nil
}

// UnregisterStream removes a stream from the registry; its owner stops it.
func (n *Node) UnregisterStream(id string) error {
	ctx, cancel := context.WithTimeout(n.ctx, n.lease)
	defer cancel()
	e, err := n.kvStreams.Get(ctx, id)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return fmt.Errorf("stream %s: %w", id, defs.ErrNoStream)
	}
	if err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	if err := n.kvStreams.Delete(ctx, id, jetstream.LastRevision(e.Revision())); err != nil {
		return fmt.Errorf("cluster: removing stream %s: %w", id, err)
	}
	return nil
}

// Owner returns the node running stream id and its URL.
func (n *Node) Owner(id string) (node, url string, self, ok bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, mine := n.running[id]; mine {
		return n.name, n.opt.Config.Advertise, true, true
	}
	o, owned := n.owners[id]
	if !owned {
		return "", "", false, false
	}
	b, known := n.nodes[o.v.Node]
	if !known || time.Since(b.seen) >= n.lease {
		return o.v.Node, "", false, false
	}
	return o.v.Node, b.v.URL, o.v.Node == n.name, true
}

// ClusterView returns the nodes and who runs what.
func (n *Node) ClusterView() defs.ClusterView {
	n.mu.Lock()
	defer n.mu.Unlock()
	now := time.Now()
	v := defs.ClusterView{Self: n.name, Bucket: n.bucket, State: "member", Counters: make(map[string]uint64, len(n.counters))}
	for k, c := range n.counters {
		v.Counters[k] = c
	}
	switch {
	case n.fatal != nil:
		v.State = "refused"
	case n.isolated:
		v.State = "isolated"
	}
	members := n.liveLocked(now)
	ids := make([]string, 0, len(n.streams))
	for id := range n.streams {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	place := AssignExcept(ids, members, n.skipLocked)
	owned := map[string][]string{}
	for id, o := range n.owners {
		owned[o.v.Node] = append(owned[o.v.Node], id)
	}
	for name, it := range n.nodes {
		live := now.Sub(it.seen) < n.lease
		if name == n.name {
			live = !n.isolated && n.fatal == nil
		}
		s := owned[name]
		sort.Strings(s)
		v.Nodes = append(v.Nodes, defs.ClusterNode{Name: name, URL: it.v.URL, Weight: it.v.Weight, MaxStreams: it.v.MaxStreams,
			Live: live, LastSeen: now.Sub(it.seen), Streams: s, Failed: it.v.Failed})
	}
	sort.Slice(v.Nodes, func(i, j int) bool { return v.Nodes[i].Name < v.Nodes[j].Name })
	for _, id := range ids {
		cs := defs.ClusterStream{ID: id, Model: n.streams[id].v.Stream.Model, Assigned: place[id]}
		if o, ok := n.owners[id]; ok {
			cs.Owner = o.v.Node
		}
		switch {
		case cs.Assigned == "":
			cs.State = "pending"
		case cs.Owner == "":
			cs.State = "unowned"
		case cs.Owner == cs.Assigned:
			cs.State = "running"
		default:
			cs.State = "moving"
		}
		v.Streams = append(v.Streams, cs)
	}
	return v
}

// String describes the node for logs.
func (n *Node) String() string {
	return fmt.Sprintf("node %s (bucket %s, %s)", n.name, n.bucket, redactedURLs(n.opt.Config.NATS))
}

var _ defs.Cluster = (*Node)(nil)
