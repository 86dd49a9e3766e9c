package app

import (
	"fmt"
	"time"

	"github.com/vinfer/vinfer/gb28181/cascade"
	"github.com/vinfer/vinfer/gb28181/manscdp"
	"github.com/vinfer/vinfer/internal/defs"
	"github.com/vinfer/vinfer/media"
	"github.com/vinfer/vinfer/pipeline"
	"github.com/vinfer/vinfer/sink"
)

var _ defs.GB28181Upstreams = (*App)(nil)

// GB28181Upstreams returns the upper platforms' states (defs.GB28181Upstreams).
func (a *App) GB28181Upstreams() []defs.GB28181Upstream {
	if a.gb == nil || a.gb.up == nil {
		return nil
	}
	return a.gb.up.Infos()
}

// startCascade starts the GB28181 upward cascade of a gb28181 section with upstream entries
// (gb28181/cascade): vinfer registers with each upper platform as a lower platform.
func (a *App) startCascade() error {
	g := a.Config.GB28181
	if g == nil || len(g.Upstream) == 0 {
		return nil
	}
	c := &cascade.Cascade{Upstreams: g.Upstream, Logger: a.Log, Version: "vinfer",
		Online: func(id string) bool {
			p := a.gb.pipe.Load()
			if p == nil {
				return false
			}
			_, ok := p.Stream(id)
			return ok
		}}
	if a.rec != nil {
		c.Recordings, c.Replay = a.rec.spans, a.rec.rec.Replay
	}
	if err := c.Init(); err != nil {
		return err
	}
	configured := map[string]bool{}
	for _, s := range a.Config.Streams {
		configured[s.ID] = true
	}
	for i, u := range g.Upstream {
		for j, ch := range u.Channels {
			if !configured[ch.Stream] { // shown OFF until a stream of that id runs (added by the API)
				a.Log.Warn("gb28181: upstream channel's stream is not in the configuration: the upper platform sees it OFF until a stream with that id runs",
					"field", fmt.Sprintf("gb28181.upstream[%d].channels[%d].stream", i, j), "stream", ch.Stream, "channel", ch.ID)
			}
		}
	}
	a.gb.up = c
	a.gb.fwd.Store(c)
	return nil
}

// forwardAlarm hands a device's alarm to the upper platforms with channels of its streams
// (platform.Server.Forward).
func (g *gbPlatform) forwardAlarm(streams []string, m *manscdp.Message) {
	if c := g.fwd.Load(); c != nil {
		c.DeviceAlarm(streams, m)
	}
}

// linkCascade lets the cascade see the streams (catalog status) once the pipeline runs.
func (a *App) linkCascade() {
	if a.gb != nil {
		a.gb.pipe.Store(a.Pipeline)
	}
}

// cascadeSinks is the cascade as a sink (its alarms), after the evidence recorder so that
// alarms carry the snapshot's URL; none without upstream entries.
func (a *App) cascadeSinks() []sink.Sink {
	if a.gb == nil || a.gb.up == nil {
		return nil
	}
	return []sink.Sink{a.gb.up}
}

// auObserver is what sees stream id's access units: the evidence ring and the cascade's tap,
// either, both or none (nil).
func (a *App) auObserver(id string) pipeline.AUObserver {
	var obs []pipeline.AUObserver
	if a.evidence != nil {
		obs = append(obs, a.evidence.Ring(id))
	}
	if a.gb != nil && a.gb.up != nil {
		if t := a.gb.up.Observer(id); t != nil {
			obs = append(obs, t)
		}
	}
	if a.rtspMeta != nil {
		obs = append(obs, a.rtspMeta.Observer(id))
	}
	switch len(obs) {
	case 0:
		return nil
	case 1:
		return obs[0]
	}
	return observers(obs)
}

// observers hands each access unit to several observers in turn.
type observers []pipeline.AUObserver

func (o observers) ObserveAccessUnit(au *media.AccessUnit) {
	for _, x := range o {
		x.ObserveAccessUnit(au)
	}
}

func (o observers) EndOfStream() {
	for _, x := range o {
		x.EndOfStream()
	}
}

// spans is stream's recorded video overlapping [from, to) as the cascade's spans (RecordInfo).
func (rc *recording) spans(stream string, from, to time.Time) []cascade.Span {
	segs, err := rc.rec.Segments(stream, from, to)
	if err != nil {
		return nil
	}
	out := make([]cascade.Span, len(segs))
	for i, s := range segs {
		out[i] = cascade.Span{Start: s.Start, End: s.End}
	}
	return out
}
