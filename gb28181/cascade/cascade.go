// Package cascade makes vinfer a lower platform of one or more GB28181 upper platforms (GB/T
// 28181-2016 §9, cascading; the 2022 edition where it differs): it registers with digest
// authentication, sends keepalives and registers again on expiry or loss (§9.1, §9.6),
// answers Catalog, DeviceInfo and DeviceStatus queries with the channels configured for that
// platform only (§9.5), answers INVITE by sending the channel's own coded video as PS over RTP
// (UDP, TCP active or passive; no re-encoding, §9.2) until BYE, and reports AI events as
// video alarms (§9.4, AlarmMethod 5): line.cross as tripwire (5), zone.enter as intrusion (6),
// zone.loiter as loitering (8), by NOTIFY to an alarm subscriber (§9.11) or else by MESSAGE;
// alarms of GB28181 devices registered with vinfer are forwarded the same way on the channels
// of their streams, with the device's priority, method and type (DeviceAlarm). A RecordInfo
// query (§9.7) lists the channel stream's recorded spans (Recordings), in parts; a playback
// or download INVITE (§9.8, §9.9) sends the recorded range as PS over RTP, paced, ending with
// MediaStatus 121 (Replay).
//
// Each upper platform has its own SIP user agent and socket (emiago/sipgo); requests are
// served only from the configured platform's address and ID, and only for its channels.
// Passwords are never logged.
package cascade

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/gb28181/manscdp"
	"github.com/vinfer/vinfer/internal/defs"
	"github.com/vinfer/vinfer/media"
	"github.com/vinfer/vinfer/sink"
)

// Cascade is the set of upper platforms. Set Upstreams (each Init'd by config.GB28181.Init),
// Online and Logger, then Init; Observer feeds it each stream's video, Write its events;
// Close ends everything.
type Cascade struct {
	// Upstreams are the gb28181.upstream entries.
	Upstreams []config.GB28181Upstream
	// Online reports whether stream id runs (a catalog's ON/OFF, DeviceStatus); nil: all
	// streams are.
	Online func(stream string) bool
	// Recordings returns stream's recorded video overlapping [from, to), oldest first (the
	// record/ segments); nil: no recordings (RecordInfo lists none).
	Recordings func(stream string, from, to time.Time) []Span
	// Replay hands fn stream's recorded access units in [from, to) with their wall times,
	// from the key frame before from (record.Recorder.Replay); fn's error stops it and is
	// returned. nil: playback and download INVITEs are answered 488.
	Replay func(ctx context.Context, stream string, from, to time.Time, fn func(au *media.AccessUnit, at time.Time) error) error
	// Version is the Firmware a DeviceInfo response names.
	Version string
	// Logger receives registrations, refusals and sessions; nil: slog.Default().
	Logger *slog.Logger

	ups  []*Upstream
	taps map[string]*Tap // stream id → its tap (only streams some upstream names)
	mu   sync.Mutex
}

// Init starts every upstream (registration runs in the background). Errors: a socket that
// cannot be opened.
func (c *Cascade) Init() error {
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Online == nil {
		c.Online = func(string) bool { return true }
	}
	c.taps = map[string]*Tap{}
	for i := range c.Upstreams {
		for _, ch := range c.Upstreams[i].Channels {
			if c.taps[ch.Stream] == nil {
				c.taps[ch.Stream] = &Tap{}
			}
		}
	}
	for i := range c.Upstreams {
		u, err := newUpstream(c, c.Upstreams[i])
		if err != nil {
			c.Close()
			return err
		}
		c.ups = append(c.ups, u)
	}
	return nil
}

// Upstream returns upstream i (in configuration order).
func (c *Cascade) Upstream(i int) *Upstream { return c.ups[i] }

// Infos returns every upstream's state, in configuration order.
func (c *Cascade) Infos() []defs.GB28181Upstream {
	out := make([]defs.GB28181Upstream, 0, len(c.ups))
	for _, u := range c.ups {
		out = append(out, u.Info())
	}
	return out
}

// Observer returns the tap of stream id (a pipeline.AUObserver), nil when no upper platform
// has a channel of it.
func (c *Cascade) Observer(id string) *Tap {
	if t := c.taps[id]; t != nil {
		return t
	}
	return nil
}

// Write turns r's line.cross, zone.enter and zone.loiter events into alarms to every upper
// platform with a channel of r.Stream (sink.Sink). It never blocks: alarms beyond an
// upstream's queue are dropped, counted.
func (c *Cascade) Write(r *sink.Result) error {
	for i := range r.Events {
		for _, u := range c.ups {
			u.alarm(&r.Events[i])
		}
	}
	return nil
}

// DeviceAlarm forwards a GB28181 device's Alarm notification m (GB/T 28181-2016 §9.4,
// §A.2.5.5) to every upper platform with a channel of one of streams, as that channel's alarm
// with the device's priority, method, type and time, through the same queue and subscription
// filter as AI alarms (platform.Server.Forward). It never blocks: alarms beyond an upstream's
// queue, or with a priority or method out of range, are dropped, counted.
func (c *Cascade) DeviceAlarm(streams []string, m *manscdp.Message) {
	a, ok := manscdp.DeviceAlarm(m, time.Now())
	c.mu.Lock() // Close may be ending
	defer c.mu.Unlock()
	for _, u := range c.ups {
		for _, st := range streams {
			if !ok {
				if u.carries(st) {
					u.Counters.AlarmsDropped.Add(1)
				}
				continue
			}
			u.queue(pending{stream: st, a: a})
		}
	}
}

// Close ends the media sessions, unregisters from every upper platform at once (2 s at most)
// and closes the sockets.
func (c *Cascade) Close() error {
	errs := make([]error, len(c.ups))
	var wg sync.WaitGroup
	for i, u := range c.ups {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = u.close() }()
	}
	wg.Wait()
	c.mu.Lock()
	c.ups = nil
	c.mu.Unlock()
	return errors.Join(errs...)
}

// ErrUpstream is wrapped by errors starting an upstream.
var ErrUpstream = errors.New("gb28181 upstream")

// Tap hands a stream's access units to the media sessions that send it (pipeline.AUObserver):
// each session gets copies through a bounded queue; a full queue drops the unit, counted, and
// that session resumes at the next key frame.
type Tap struct {
	mu    sync.Mutex
	codec media.Codec
	feeds map[*feed]struct{}
}

// feedQueue is the most access units waiting for one session's sender.
const feedQueue = 64

type feed struct {
	ch      chan *media.AccessUnit
	waitKey bool
	dropped int64
}

// ObserveAccessUnit copies au to every session (pipeline.AUObserver).
func (t *Tap) ObserveAccessUnit(au *media.AccessUnit) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.codec = au.Codec
	for f := range t.feeds {
		if f.waitKey && !au.Key || au.Discard {
			continue
		}
		cp := *au
		cp.Data = append([]byte(nil), au.Data...)
		select {
		case f.ch <- &cp:
			f.waitKey = false
		default:
			f.dropped++
			f.waitKey = true
		}
	}
}

// EndOfStream implements pipeline.AUObserver; sessions stay until BYE (a restarted stream
// goes on feeding them).
func (t *Tap) EndOfStream() {}

// Codec is the codec of the last access unit seen (H.264 before any).
func (t *Tap) Codec() media.Codec {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.codec == media.CodecUnknown {
		return media.CodecH264
	}
	return t.codec
}

func (t *Tap) subscribe() *feed {
	f := &feed{ch: make(chan *media.AccessUnit, feedQueue), waitKey: true}
	t.mu.Lock()
	if t.feeds == nil {
		t.feeds = map[*feed]struct{}{}
	}
	t.feeds[f] = struct{}{}
	t.mu.Unlock()
	return f
}

func (t *Tap) unsubscribe(f *feed) (dropped int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.feeds, f)
	return f.dropped
}
