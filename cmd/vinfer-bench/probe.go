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
// newProbe before the stream is added; the stream's loop and realtime settings apply, so a
// paced stream is the product's realtime file) read through a probe that notes when each access
// unit was handed on, by the frame number of its PTS. The probe delays the first read until its
// start, so that paced streams run out of phase, as cameras do. Every stage is the product's.
var probeKind = source.Kind{Schemes: []string{"bench"}, Open: openProbe}

func init() { source.Register(probeKind) }

var probes sync.Map // ID → *probe

// probe wraps one stream's source; see probeKind.
type probe struct {
	path     string
	start    time.Time     // the first read waits for it
	frameDur time.Duration // numbers frames by PTS

	inner    source.Source
	started  bool
	arrivals [128]atomic.Int64 // unix ns the unit of frame n%128 was handed on
}

// newProbe registers the probe of stream id and returns its source URL.
func newProbe(id, path string, fps float64, start time.Time) (*probe, string) {
	p := &probe{path: path, start: start, frameDur: time.Duration(float64(time.Second) / fps)}
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

// Read returns the inner source's next unit and notes its arrival; the first read waits for
// the probe's start.
func (p *probe) Read(ctx context.Context) (*media.AccessUnit, error) {
	if !p.started {
		p.started = true
		if wait := time.Until(p.start); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return nil, ctx.Err()
			}
		}
	}
	au, err := p.inner.Read(ctx)
	if err != nil {
		return au, err
	}
	p.arrivals[p.slot(au.PTS)].Store(time.Now().UnixNano())
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
func (p *probe) Close() error           { return p.inner.Close() }
