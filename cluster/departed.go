package cluster

import (
	"sort"

	"github.com/vinfer/vinfer/internal/defs"
)

// Departed is a stream this node ran and stopped for the cluster: its counters just before
// each stop, summed over its runs here, and why it last stopped (Why*).
type Departed struct {
	Info defs.StreamInfo
	Why  string
}

// Why a stream stopped here.
const (
	WhyHandedOver = "handed over" // placed on another node, or this node left
	WhyFenced     = "fenced"      // its owner key moved to another node
	WhyIsolated   = "isolated"    // NATS lost for 3/4 of a lease, or the node left the cluster
)

// maxDeparted bounds the streams remembered (the registry's ids, one entry each).
const maxDeparted = 10000

// departLocked records stream id's snapshot before a stop; n.mu held.
func (n *Node) departLocked(info defs.StreamInfo, why string) {
	id := info.Decl.ID
	d, seen := n.departed[id]
	if !seen && len(n.departed) >= maxDeparted {
		return
	}
	if seen {
		c := &info.Counters
		p := &d.Info.Counters
		c.AccessUnits += p.AccessUnits
		c.Decoded += p.Decoded
		c.Inferred += p.Inferred
		c.Detections += p.Detections
		c.LatencyNanos += p.LatencyNanos
		for i := range c.Dropped {
			c.Dropped[i] += p.Dropped[i]
		}
		info.Elapsed += d.Info.Elapsed
		if len(d.Info.Classes) > 0 {
			sum := map[string]int64{}
			for k, v := range d.Info.Classes {
				sum[k] += v
			}
			for k, v := range info.Classes {
				sum[k] += v
			}
			info.Classes = sum
		}
	}
	n.departed[id] = Departed{Info: info, Why: why}
}

// Departed returns the streams this node ran and stopped for the cluster, sorted by id: what
// the run summary lists besides the streams still local.
func (n *Node) Departed() []Departed {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make([]Departed, 0, len(n.departed))
	for _, d := range n.departed {
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Info.Decl.ID < out[j].Info.Decl.ID })
	return out
}
