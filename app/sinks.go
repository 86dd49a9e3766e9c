package app

import (
	"github.com/vinfer/vinfer/deliver"
	"github.com/vinfer/vinfer/internal/defs"
	"github.com/vinfer/vinfer/outbox"
)

var _ defs.Sinks = (*App)(nil)

// deliveringSink is a sink with an outbox and delivery statistics (package sink/brokered).
type deliveringSink interface {
	Name() string
	Type() string
	Stats() deliver.Stats
}

// Sinks returns the statistics of the configuration's delivering sinks (empty after Stop).
func (a *App) Sinks() []defs.SinkInfo {
	a.sinksMu.Lock()
	sinks := a.sinks
	a.sinksMu.Unlock()
	var out []defs.SinkInfo
	for _, s := range sinks {
		d, ok := s.(deliveringSink)
		if !ok {
			continue
		}
		st := d.Stats()
		info := defs.SinkInfo{Name: d.Name(), Type: d.Type(), Up: st.Up, LastError: st.LastError,
			Delivered: st.Delivered, Retried: st.Retried, Failed: st.Failed, Undeliverable: st.Undeliverable,
			Dropped: make(map[string]uint64, outbox.NumReasons), Depth: st.Depth, DepthBytes: st.DepthBytes,
			OldestAge: st.OldestAge, DiskFullSince: st.DiskFullSince}
		for r := range outbox.NumReasons {
			info.Dropped[r.String()] = st.Dropped[r]
		}
		out = append(out, info)
	}
	return out
}
