package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/media"
	"github.com/vinfer/vinfer/source"
	"github.com/vinfer/vinfer/source/file"
)

// probeKind is the bench's source kind, bench://ID: the file source of probe ID (registered by
// newProbe before the stream is added), read through a probe that notes when each access unit
// was handed on, by the frame number of its PTS, and with pacing releases the units at their
// decoding times from the probe's start instead of as fast as the pipeline takes them. Every
// other stage is the product's.
var probeKind = source.Kind{Schemes: []string{"bench"}, Open: openProbe}

func init() { source.Register(probeKind) }

var probes sync.Map // ID → *probe

// probe wraps one stream's source; see probeKind.
type probe struct {
	path     string
	paced    bool
	start    time.Time     // paced: when the unit with the first DTS is due
	frameDur time.Duration // numbers frames by PTS

	inner    source.Source
	first    time.Duration // DTS of the first unit
	started  bool
	timer    *time.Timer
	arrivals [128]atomic.Int64 // unix ns the unit of frame n%128 was handed on (or due, paced)
}

// newProbe registers the probe of stream id and returns its source URL.
func newProbe(id, path string, fps float64, paced bool, start time.Time) (*probe, string) {
	p := &probe{path: path, paced: paced, start: start, frameDur: time.Duration(float64(time.Second) / fps)}
	probes.Store(id, p)
	return p, "bench://" + id
}

func openProbe(s *config.Stream, pol source.Policy) (source.Source, error) {
	id := strings.TrimPrefix(s.Source, "bench://")
	v, ok := probes.Load(id)
	if !ok {
		return nil, fmt.Errorf("bench source %q: no such probe", id)
	}
	p := v.(*probe)
	fs := *s
	fs.Source = p.path
	inner, err := file.Kind.Open(&fs, pol)
	if err != nil {
		return nil, err
	}
	p.inner = inner
	return p, nil
}

// Read returns the inner source's next unit, paced when asked, and notes its arrival.
func (p *probe) Read(ctx context.Context) (*media.AccessUnit, error) {
	au, err := p.inner.Read(ctx)
	if err != nil {
		return au, err
	}
	if !p.started {
		p.first, p.started = au.DTS, true
	}
	at := time.Now()
	if p.paced {
		due := p.start.Add(au.DTS - p.first)
		if wait := due.Sub(at); wait > 0 {
			if p.timer == nil {
				p.timer = time.NewTimer(wait)
			} else {
				p.timer.Reset(wait)
			}
			select {
			case <-p.timer.C:
			case <-ctx.Done():
				p.timer.Stop()
				return nil, ctx.Err()
			}
		}
		at = due // late units count from when they were due
	}
	p.arrivals[p.slot(au.PTS)].Store(at.UnixNano())
	return au, nil
}

func (p *probe) slot(pts time.Duration) int64 {
	n := int64((pts + p.frameDur/2) / p.frameDur)
	return n & (int64(len(p.arrivals)) - 1)
}

// arrival is when the unit of the frame at pts was handed on (zero if never noted).
func (p *probe) arrival(pts time.Duration) time.Time {
	ns := p.arrivals[p.slot(pts)].Load()
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns)
}

func (p *probe) Info() media.StreamInfo { return p.inner.Info() }
func (p *probe) Live() bool             { return p.inner.Live() }
func (p *probe) Close() error {
	if p.timer != nil {
		p.timer.Stop()
	}
	return p.inner.Close()
}
