package cluster

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// The node's JetStream store: the three buckets, their watches, and what the node does when the
// store is lost (NATS restarted with an empty JetStream store, or a bucket deleted). Each
// bucket's stream is known by its creation time (StreamInfo.Created); a stream that is gone, or
// that has another creation time (another node made it again), means the store was lost. The
// node then makes the buckets again (same configuration), publishes what it knows: the owner
// keys of the streams it runs, its heartbeat and, when the registry was lost, every registry
// entry it knew (the running nodes' knowledge repopulates the registry); then it watches the
// new buckets. It does not plan meanwhile, and its streams keep running. Watches do not resume
// by themselves after a server restart even when the store was kept, so a node whose connection
// dropped plans nothing until it has read the buckets again after the reconnect (same steps,
// without making the buckets or writing the registry).

// bucketConfigs are the buckets' configurations, in the order streams, owners, nodes.
func (n *Node) bucketConfigs() [3]jetstream.KeyValueConfig {
	return [3]jetstream.KeyValueConfig{
		{Bucket: n.bucket + "-streams", Description: "vinfer stream registry", History: 1},
		{Bucket: n.bucket + "-owners", Description: "vinfer stream owners", History: 1},
		// Heartbeat keys of nodes gone for good age out; liveness is judged by each observer.
		{Bucket: n.bucket + "-nodes", Description: "vinfer node heartbeats", History: 1, TTL: 20 * n.lease},
	}
}

// storeTimeout bounds making the buckets: JetStream writes its file store, which takes seconds
// on a busy server (a dead server fails the connection before this).
func (n *Node) storeTimeout() time.Duration { return max(2*n.lease+5*time.Second, 30*time.Second) }

// makeBuckets creates the buckets or updates them to their configuration, and records each
// one's stream creation time.
func (n *Node) makeBuckets(ctx context.Context) ([3]jetstream.KeyValue, error) {
	var kvs [3]jetstream.KeyValue
	for i, c := range n.bucketConfigs() {
		kv, err := n.js.CreateOrUpdateKeyValue(ctx, c)
		if err != nil {
			return kvs, fmt.Errorf("%w: bucket %s: %v (is JetStream enabled on the server?)", ErrUnavailable, c.Bucket, err)
		}
		created, err := streamCreated(ctx, kv)
		if err != nil {
			return kvs, fmt.Errorf("%w: bucket %s: %v", ErrUnavailable, c.Bucket, err)
		}
		kvs[i] = kv
		n.storeIDs[i] = created
	}
	return kvs, nil
}

func streamCreated(ctx context.Context, kv jetstream.KeyValue) (time.Time, error) {
	st, err := kv.Status(ctx)
	if err != nil {
		return time.Time{}, err
	}
	s, ok := st.(*jetstream.KeyValueBucketStatus)
	if !ok || s.StreamInfo() == nil {
		return time.Time{}, errors.New("no stream info")
	}
	return s.StreamInfo().Created, nil
}

// storeLost asks JetStream for the buckets' streams: which are gone or were made again since
// this node recorded them (lost[0] the registry). An error: no answer (retried later).
func (n *Node) storeLost(ctx context.Context) (lost [3]bool, err error) {
	for i, kv := range [3]jetstream.KeyValue{n.kvStreams, n.kvOwners, n.kv} {
		created, err := streamCreated(ctx, kv)
		switch {
		case errors.Is(err, jetstream.ErrStreamNotFound) || errors.Is(err, jetstream.ErrBucketNotFound):
			lost[i] = true
		case err != nil:
			return lost, err
		default:
			lost[i] = !created.Equal(n.storeIDs[i])
		}
	}
	return lost, nil
}

// markStale stops planning until the buckets are read again: the connection dropped, so the
// watches may have missed changes (and do not resume by themselves after a server restart).
func (n *Node) markStale() {
	n.mu.Lock()
	n.stale = true
	n.mu.Unlock()
}

// suspectStore asks the reconciler to check the store: NATS reconnected, a heartbeat failed
// or a watch ended.
func (n *Node) suspectStore() {
	n.checkStore.Store(true)
	n.poke()
}

// checkAndRecover runs in the reconciler when the store is suspect; a check that got no answer
// or a recovery that failed is tried again on the next round.
func (n *Node) checkAndRecover() {
	if !n.checkStore.Swap(false) {
		return
	}
	ctx, cancel := context.WithTimeout(n.ctx, n.lease)
	lost, err := n.storeLost(ctx)
	cancel()
	if err != nil {
		n.checkStore.Store(true)
		n.log.Debug("cluster: checking the JetStream buckets", "err", err)
		return
	}
	anyLost := lost[0] || lost[1] || lost[2]
	n.mu.Lock()
	redo := n.stale
	n.mu.Unlock()
	if !anyLost && !redo && !n.watchEnded.Swap(false) {
		return
	}
	if anyLost {
		n.log.Warn("cluster: JetStream buckets lost (NATS restarted with an empty store?): making them again and publishing this node's state",
			"registry_lost", lost[0], "owners_lost", lost[1], "heartbeats_lost", lost[2])
	}
	n.registryLost = n.registryLost || lost[0]
	ctx, cancel = context.WithTimeout(n.ctx, n.storeTimeout())
	defer cancel()
	if err := n.recoverStore(ctx, anyLost); err != nil {
		n.checkStore.Store(true)
		n.log.Warn("cluster: rebuilding the JetStream buckets (retried)", "err", err)
	}
}

// recoverStore makes the buckets again (when lost), publishes this node's state and watches
// the buckets anew (also after a reconnect, the store kept). Planning waits until it succeeded.
func (n *Node) recoverStore(ctx context.Context, remake bool) error {
	n.mu.Lock()
	n.stale = true
	n.mu.Unlock()
	if remake {
		if _, err := n.makeBuckets(ctx); err != nil { // the handles stay valid: they address by name
			return err
		}
	}
	n.stopWatches()
	if err := n.republishOwners(ctx); err != nil {
		return fmt.Errorf("owner keys: %w", err)
	}
	if n.registryLost {
		if err := n.republishRegistry(ctx); err != nil {
			return fmt.Errorf("registry: %w", err)
		}
	}
	n.mu.Lock()
	n.beatRev = 0 // create the key, or take this instance's own (beat)
	n.mu.Unlock()
	n.beat()
	if hook := testHookBeforeWatch.Load(); hook != nil {
		(*hook)()
	}
	n.mu.Lock()
	// The views are read again from the watches; what this node knew is kept until they are in,
	// for a next recovery (the store lost again meanwhile) to republish.
	streams, owners := n.streams, n.owners
	n.streams = map[string]item[regEntry]{}
	n.owners = map[string]item[ownerEntry]{}
	// n.nodes is kept: liveness stays what this node measured, refreshed by new heartbeats.
	n.mu.Unlock()
	if err := n.startWatches(ctx); err != nil {
		n.mu.Lock()
		n.streams, n.owners = streams, owners
		n.mu.Unlock()
		return err
	}
	n.mu.Lock()
	n.stale = false
	if remake {
		n.counters["store_recovered"]++
	}
	n.mu.Unlock()
	n.registryLost = false
	if remake {
		n.log.Info("cluster: JetStream buckets rebuilt; watching them again")
	} else {
		n.log.Info("cluster: buckets read again after the reconnect")
	}
	n.poke()
	return nil
}

// testHookBeforeWatch, set by tests, runs in recoverStore before the buckets are watched again.
var testHookBeforeWatch atomic.Pointer[func()]

// republishOwners writes the owner key of every stream this node runs (create; a key already
// there that is this instance's is kept). A key another node holds fences the stream here.
func (n *Node) republishOwners(ctx context.Context) error {
	n.mu.Lock()
	ids := make([]string, 0, len(n.running))
	for id := range n.running {
		ids = append(ids, id)
	}
	n.mu.Unlock()
	sort.Strings(ids)
	mine := ownerEntry{Node: n.name, Instance: n.instance}
	for _, id := range ids {
		rev, err := n.kvOwners.Create(ctx, id, n.sign.seal(kindOwners, id, mine))
		if errors.Is(err, jetstream.ErrKeyExists) {
			e, gerr := n.kvOwners.Get(ctx, id)
			if gerr != nil {
				return gerr
			}
			var o ownerEntry
			if n.openEntry(kindOwners, e, &o) != nil || o != mine {
				n.log.Warn("cluster: another node took the stream's owner key while the store was rebuilt: stopping it here", "stream", id, "owner", o.Node)
				n.stopLocal(id, WhyFenced)
				n.count("fenced")
				continue
			}
			rev, err = e.Revision(), nil
		}
		if err != nil {
			return err
		}
		n.mu.Lock()
		_, still := n.running[id]
		if still {
			n.running[id] = rev
		}
		n.mu.Unlock()
		if !still { // stopped meanwhile (NATS was lost for 3/4 of a lease): let it go
			_ = n.kvOwners.Delete(ctx, id, jetstream.LastRevision(rev))
		}
	}
	return nil
}

// republishRegistry writes every registry entry this node knew (create: an entry already there
// wins).
func (n *Node) republishRegistry(ctx context.Context) error {
	n.mu.Lock()
	entries := make([]regEntry, 0, len(n.streams))
	for _, it := range n.streams {
		entries = append(entries, it.v)
	}
	n.mu.Unlock()
	for _, e := range entries {
		if _, err := n.kvStreams.Create(ctx, e.Stream.ID, n.sign.seal(kindStreams, e.Stream.ID, e)); err != nil && !errors.Is(err, jetstream.ErrKeyExists) {
			return fmt.Errorf("stream %s: %w", e.Stream.ID, err)
		}
	}
	return nil
}

// startWatches watches the three buckets (current values first, within ctx), after ending the
// previous watches.
func (n *Node) startWatches(ctx context.Context) error {
	n.stopWatches()
	gctx, cancel := context.WithCancel(n.ctx)
	n.watchCancel = cancel
	for _, w := range []struct {
		kv    jetstream.KeyValue
		apply func(jetstream.KeyValueEntry)
	}{{n.kvStreams, n.applyStream}, {n.kvOwners, n.applyOwner}, {n.kv, n.applyNode}} {
		if err := n.watch(ctx, gctx, w.kv, w.apply); err != nil {
			n.stopWatches()
			return err
		}
	}
	n.watchEnded.Store(false)
	return nil
}

// stopWatches ends the watches and waits for their goroutines.
func (n *Node) stopWatches() {
	if n.watchCancel != nil {
		n.watchCancel()
		n.watchCancel = nil
	}
	n.watchWG.Wait()
}

// watch applies a bucket's current values (within ctx), then its updates in the background
// until gctx ends. A watch that ends by itself (its consumer could not be made again after a
// reconnect: the stream is gone) makes the store suspect.
func (n *Node) watch(ctx, gctx context.Context, kv jetstream.KeyValue, apply func(jetstream.KeyValueEntry)) error {
	w, err := kv.WatchAll(gctx)
	if err != nil {
		return fmt.Errorf("%w: watch %s: %v", ErrUnavailable, kv.Bucket(), err)
	}
	for {
		select {
		case e, ok := <-w.Updates():
			if !ok {
				return fmt.Errorf("%w: watch %s ended", ErrUnavailable, kv.Bucket())
			}
			if e != nil {
				apply(e)
				continue
			}
			// The current values are in.
			n.watchWG.Add(1)
			go func() {
				defer n.watchWG.Done()
				defer n.endWatch(w)
				for {
					select {
					case e, ok := <-w.Updates():
						if !ok {
							if gctx.Err() == nil {
								n.log.Warn("cluster: a bucket's watch ended: checking the JetStream buckets", "bucket", kv.Bucket())
								n.watchEnded.Store(true)
								n.suspectStore()
							}
							return
						}
						if e != nil {
							apply(e)
							n.poke()
						}
					case <-gctx.Done():
						return
					}
				}
			}()
			return nil
		case <-ctx.Done():
			n.endWatch(w)
			return fmt.Errorf("%w: watch %s: %v", ErrUnavailable, kv.Bucket(), ctx.Err())
		}
	}
}

// endWatch stops a watcher and drains its updates (for at most a lease) so that the client's
// delivery, blocked on a full channel, can end.
func (n *Node) endWatch(w jetstream.KeyWatcher) {
	_ = w.Stop()
	go func() {
		t := time.NewTimer(n.lease)
		defer t.Stop()
		for {
			select {
			case _, ok := <-w.Updates():
				if !ok {
					return
				}
			case <-t.C:
				return
			}
		}
	}()
}
