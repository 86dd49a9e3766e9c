package cluster

import (
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Wall clocks. Liveness is judged on each observer's monotonic clock (when it saw a heartbeat
// change), so a node whose wall clock is off is live, placed and fenced like any other. Its wall
// clock still stamps its events and logs, so a heartbeat carries the sender's wall clock
// (sent_ms) and every node compares it with the NATS server's stamp of the same message (the
// entry's creation time): an offset beyond clockWarn is logged, once per clockWarnEvery per node.

// clockWarnEvery rate-limits the warning about one node's clock.
const clockWarnEvery = 10 * time.Minute

// clockWarn is the offset between a node's and the NATS server's wall clocks that is logged:
// 10 s, or a lease when longer (a heartbeat's way to the server takes well under a lease).
func (n *Node) clockWarn() time.Duration { return max(10*time.Second, n.lease) }

// checkClockLocked logs the offset of a heartbeat's sender's wall clock from the server's,
// when beyond clockWarn; n.mu held.
func (n *Node) checkClockLocked(e jetstream.KeyValueEntry, b beat) {
	if b.SentMS == 0 || e.Created().IsZero() {
		return
	}
	off := time.UnixMilli(b.SentMS).Sub(e.Created())
	if off.Abs() <= n.clockWarn() {
		return
	}
	if !warnDue(n.badClock, e.Key(), clockWarnEvery) {
		return
	}
	n.log.Warn("cluster: a node's wall clock is off from the NATS server's (liveness is not affected; its event times are)",
		"peer", e.Key(), "offset", off.Round(time.Second))
}
