package cluster

import (
	"slices"
	"time"
)

// Streams placed but not taken. A node whose heartbeat makes it a member but that does not take
// the streams placed on it (a forged heartbeat, or a node whose starts hang) would hold them
// hostage: they run nowhere. Every observer therefore tracks, for each stream placed on another
// node, whether that node serves it (holds its owner key and lists it in its heartbeat's
// running or failed streams) or is kept from it (another live node holds the key and serves
// it: a handover in progress). When neither holds for unservedLeases leases and
// minBeatsUnserved of that node's heartbeats, the node is shunned for that stream for
// shunLeases leases: the placement skips it, and the owner key it may hold can be taken from it
// though it is live. A live node that holds the owner key of a stream placed elsewhere without
// running it (a forged owner key) is shunned for it the same way (held), so the stream's node
// can take the key. A shunned node that serves the stream after all, leaves, or restarts (a
// new instance) is no longer shunned for it; when the shun ends the stream is placed on the
// node again, and shunned again if it still does not take it.

const (
	// unservedLeases is how long, in leases, a node may leave a stream placed on it untaken:
	// two, as a node that just joined may see a dead node live for its first lease and wait
	// for it.
	unservedLeases = 2
	// minBeatsUnserved is how many heartbeats of the node must arrive meanwhile (a node that
	// is not heard from is dead, not slow).
	minBeatsUnserved = 3
	// shunLeases is how long, in leases, a shun lasts.
	shunLeases = 20
)

// skipLocked is plan's and ClusterView's placement filter; n.mu held.
func (n *Node) skipLocked(id, node string) bool {
	until, ok := n.shunned[id][node]
	return ok && time.Now().Before(until)
}

// servesLocked reports whether node serves stream id: holds its owner key and lists it as
// running or failed in its heartbeat (this node: runs it). n.mu held.
func (n *Node) servesLocked(node, id string) bool {
	o, ok := n.owners[id]
	if !ok || o.v.Node != node {
		return false
	}
	if node == n.name {
		_, mine := n.running[id]
		return mine && o.v.Instance == n.instance
	}
	b, ok := n.nodes[node]
	if !ok {
		return false
	}
	_, failed := b.v.Failed[id]
	return failed || slices.Contains(b.v.Running, id)
}

// trackUnservedLocked updates the unserved claims and the shunned nodes from a placement; live
// are the members. n.mu held.
func (n *Node) trackUnservedLocked(place map[string]string, live map[string]bool, now time.Time) {
	for id, sh := range n.shunned {
		if _, ok := n.streams[id]; !ok {
			delete(n.shunned, id)
			continue
		}
		for node, until := range sh {
			if !live[node] || !now.Before(until) || n.servesLocked(node, id) {
				delete(sh, node)
			}
		}
		if len(sh) == 0 {
			delete(n.shunned, id)
		}
	}
	for id, c := range n.unserved {
		if place[id] != c.node {
			delete(n.unserved, id)
		}
	}
	for id, c := range n.held {
		if o, ok := n.owners[id]; !ok || o.v.Node != c.node {
			delete(n.held, id)
		}
	}
	for id, x := range place {
		holder := "" // another live node holding the key of a stream placed elsewhere
		if o, ok := n.owners[id]; ok && o.v.Node != x && o.v.Node != "" && o.v.Node != n.name && live[o.v.Node] {
			holder = o.v.Node
		}
		switch {
		case holder != "" && !n.servesLocked(holder, id):
			// Neither runs nor releases it: x is kept from it by a node that holds it hostage.
			delete(n.unserved, id)
			n.strikeLocked(n.held, id, holder, now, "cluster: a node holds a stream's owner key without running it: taking it")
		case holder != "" || x == n.name || n.servesLocked(x, id):
			// Served, or a handover in progress (the holder runs it and releases it first).
			delete(n.unserved, id)
			delete(n.held, id)
		default:
			delete(n.held, id)
			n.strikeLocked(n.unserved, id, x, now, "cluster: a node was placed a stream and did not take it: placing it elsewhere")
		}
	}
}

// strikeLocked advances the claim on stream id against node in claims: started now, or, once
// it is unservedLeases old with minBeatsUnserved of node's heartbeats since, the node is
// shunned for the stream (logged with msg). n.mu held.
func (n *Node) strikeLocked(claims map[string]claim, id, node string, now time.Time, msg string) {
	c, ok := claims[id]
	if !ok || c.node != node {
		claims[id] = claim{node: node, since: now, beats: n.beats[node]}
		return
	}
	if now.Sub(c.since) < unservedLeases*n.lease || n.beats[node]-c.beats < minBeatsUnserved {
		return
	}
	delete(claims, id)
	if n.shunned[id] == nil {
		n.shunned[id] = map[string]time.Time{}
	}
	n.shunned[id][node] = now.Add(shunLeases * n.lease)
	n.counters["shunned"]++
	n.log.Warn(msg, "peer", node, "stream", id, "waited", now.Sub(c.since).Round(time.Millisecond), "for", shunLeases*n.lease)
}

// forgetNodeLocked drops what this node tracked about node (it left, or restarted as a new
// instance). n.mu held.
func (n *Node) forgetNodeLocked(node string) {
	for id, sh := range n.shunned {
		delete(sh, node)
		if len(sh) == 0 {
			delete(n.shunned, id)
		}
	}
	for _, claims := range []map[string]claim{n.unserved, n.held} {
		for id, c := range claims {
			if c.node == node {
				delete(claims, id)
			}
		}
	}
}
