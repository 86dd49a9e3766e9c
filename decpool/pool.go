// Package decpool shares video decoders among the streams that an activity gate keeps idle
// (docs/activity.md, "Decoders of idle streams"): an idle stream holds no decoder of its own;
// its key frames are decoded by a few shared probe decoders per codec and picture size, and
// when it wakes it is handed a warm decoder (made and primed ahead, so that a wake does not
// pay a decoder's creation: ~350 ms and ~222 MB of device memory for NVDEC at 1080p) on which
// it replays the access units held since its last key frame. The pool is generic over Decoder:
// FFmpeg's (codec.Decoder) and NVDEC's (codec.NVDECStream with Shared set) both plug in.
package decpool

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vinfer/vinfer/codec"
	"github.com/vinfer/vinfer/frame"
	"github.com/vinfer/vinfer/media"
)

// Decoder is a video decoder the pool hands around: pipeline.VideoDecoder's methods. Calls
// on one decoder never overlap, but successive calls may come from different goroutines.
type Decoder interface {
	Decode(ctx context.Context, au *media.AccessUnit, emit func(*frame.Frame) error) error
	Flush(ctx context.Context, emit func(*frame.Frame) error) error
	Close() error
}

// KeyProber is a Decoder that decodes a lone key frame without ending the stream where it
// can (codec.Decoder, codec.NVDECStream: ProbeKey), keeping its set-up for the next probe.
// The pool probes with it unless Config.Drain is set; other decoders are drained.
type KeyProber interface {
	ProbeKey(ctx context.Context, au *media.AccessUnit, emit func(*frame.Frame) error) (codec.KeyProbe, error)
}

// Parker is a Decoder that emits the pictures it holds without losing its set-up (codec's
// Park, where Flush's H.264 reset frees it): a stream going idle parks its decoder with it
// before Put, so that the decoder handed to a later wake is still set up.
type Parker interface {
	Park(ctx context.Context, emit func(*frame.Frame) error) error
}

// setupCounter is a Decoder that counts its set-ups (codec's Setups).
type setupCounter interface{ Setups() int64 }

// Key is the kind of picture a decoder is kept for: decoders are shared and handed out
// within one key (an NVDEC decoder is sized for its pictures). Width and Height are 0 while
// a stream has not decoded a picture yet.
type Key struct {
	Codec         media.Codec
	Width, Height int
}

func (k Key) String() string { return fmt.Sprintf("%v %dx%d", k.Codec, k.Width, k.Height) }

// Defaults of Config's zero fields.
const (
	// DefaultProbers is the number of shared key-frame decoders per key.
	DefaultProbers = 4
	// DefaultWarm is the number of warm decoders kept per key for waking streams.
	DefaultWarm = 2
	// DefaultWait bounds a probe's wait for a free shared decoder.
	DefaultWait = 2 * time.Second
	// maxPrimer bounds the key frame kept per key to prime new warm decoders (bytes).
	maxPrimer = 4 << 20
)

// Config configures a Pool.
type Config struct {
	// New makes a decoder for a codec; required. It may be called from the pool's own
	// goroutines (a warm decoder made ahead).
	New func(media.Codec) (Decoder, error)
	// Probers is the most shared key-frame decoders per key; 0: DefaultProbers.
	Probers int
	// Warm is how many decoders per key are kept ready for waking streams (decoders that
	// streams gave back when they went idle, or made ahead and primed with a key frame of
	// the key's size); 0: DefaultWarm, < 0: none.
	Warm int
	// Wait bounds a probe's wait for a free shared decoder; 0: DefaultWait.
	Wait time.Duration
	// Drain probes the old way, for comparisons: every key frame is decoded, then drained to
	// the end of stream and the decoder reset (Flush), even on a KeyProber.
	Drain bool
}

// Errors.
var (
	// ErrBusy: every shared decoder of the key stayed busy for Config.Wait; the key frame
	// was not decoded.
	ErrBusy = errors.New("decpool: every shared key-frame decoder is busy")
	// ErrClosed: the pool was closed.
	ErrClosed = errors.New("decpool: closed")
)

// Stats counts what a Pool did and holds.
type Stats struct {
	// Probers, Warm and Taken are the decoders alive now: shared key-frame decoders, warm
	// ones waiting for a wake, and those streams hold.
	Probers, Warm, Taken int
	// Created counts decoders made; Closed those closed.
	Created, Closed int64
	// Probes counts key frames decoded on a shared decoder; Busy those refused (ErrBusy);
	// ProbeNanos is the time spent in probes (decode and drain).
	Probes, Busy, ProbeNanos int64
	// ProbeDrains counts probes that drained to the end of stream and reset the decoder
	// (Config.Drain, a decoder that is no KeyProber, H.265, an H.264 key frame without IDR,
	// no picture out otherwise); ProbePushes those whose picture an H.264 end of sequence
	// pushed out; ProbeSetups the decoder set-ups during probes (with NVDEC a CUVID decoder
	// and its surfaces made anew: what a drain's reset costs H.264), for decoders that count
	// them. SendNanos, PushNanos and DrainNanos split ProbeNanos by phase (KeyProbe).
	ProbeDrains, ProbePushes, ProbeSetups int64
	SendNanos, PushNanos, DrainNanos      int64
	// Handouts counts decoders handed out warm; Cold those a Take had to make.
	Handouts, Cold int64
}

// Pool shares decoders among streams. Its methods are safe for concurrent use.
type Pool struct {
	cfg Config

	mu     sync.Mutex
	keys   map[Key]*slot
	closed bool
	taken  int
	fills  sync.WaitGroup // warm decoders being made, decoders being closed

	created, closedN, probes, busy, probeNanos, handouts, cold atomic.Int64
	drains, pushes, setups, sendNanos, pushNanos, drainNanos   atomic.Int64
}

// slot is one key's decoders.
type slot struct {
	free   chan Decoder // idle shared key-frame decoders
	made   int          // shared decoders alive (free or probing); guarded by Pool.mu
	warm   []Decoder    // guarded by Pool.mu
	fill   int          // warm decoders being made; guarded by Pool.mu
	primer []byte       // the last key frame probed (primes new warm decoders); guarded by Pool.mu
}

// New returns a pool; cfg.New is required.
func New(cfg Config) (*Pool, error) {
	if cfg.New == nil {
		return nil, errors.New("decpool: Config.New is required")
	}
	cfg.Probers = cmp.Or(cfg.Probers, DefaultProbers)
	if cfg.Probers < 1 {
		return nil, fmt.Errorf("decpool: probers %d must be ≥ 1", cfg.Probers)
	}
	if cfg.Warm == 0 {
		cfg.Warm = DefaultWarm
	}
	cfg.Warm = max(cfg.Warm, 0)
	cfg.Wait = cmp.Or(cfg.Wait, DefaultWait)
	return &Pool{cfg: cfg, keys: map[Key]*slot{}}, nil
}

func (p *Pool) slot(k Key) *slot {
	s := p.keys[k]
	if s == nil {
		s = &slot{free: make(chan Decoder, p.cfg.Probers)}
		p.keys[k] = s
	}
	return s
}

func (p *Pool) make(c media.Codec) (Decoder, error) {
	d, err := p.cfg.New(c)
	if err != nil {
		return nil, err
	}
	p.created.Add(1)
	return d, nil
}

func (p *Pool) close(d Decoder) {
	d.Close()
	p.closedN.Add(1)
}

// closeLater closes d on a goroutine of its own: a decoder waits for its frames still in
// flight (an NVDEC decoder up to 2 s), which a stream giving it back must not. Close waits.
func (p *Pool) closeLater(d Decoder) {
	p.fills.Add(1)
	go func() {
		defer p.fills.Done()
		p.close(d)
	}()
}

// Probe decodes the key frame au alone on one of k's shared decoders, calling emit for its
// picture (Decoder.Decode's contract; the frame belongs to the shared decoder's frame pool:
// release it soon): with KeyProber.ProbeKey, which keeps the decoder set up, else decoded and
// drained (Config.Drain). It waits up to Config.Wait for a free shared decoder (ErrBusy) and
// returns the decode's error otherwise; a decoder that failed is closed.
func (p *Pool) Probe(ctx context.Context, k Key, au *media.AccessUnit, emit func(*frame.Frame) error) error {
	d, err := p.prober(ctx, k)
	if err != nil {
		return err
	}
	t0 := time.Now()
	kp, err := p.probe(ctx, d, au, emit)
	p.probes.Add(1)
	p.probeNanos.Add(int64(time.Since(t0)))
	p.count(kp)
	p.mu.Lock()
	s := p.slot(k)
	if len(au.Data) <= maxPrimer && err == nil {
		s.primer = append(s.primer[:0], au.Data...)
	}
	if ctx.Err() != nil || p.closed { // a decode cut short may leave the decoder mid-picture
		s.made--
		p.mu.Unlock()
		p.close(d)
		return err
	}
	s.free <- d // never blocks: at most Probers decoders exist per key; under mu, so Close sees it
	p.mu.Unlock()
	return err
}

// probe decodes au alone on d (Probe).
func (p *Pool) probe(ctx context.Context, d Decoder, au *media.AccessUnit, emit func(*frame.Frame) error) (codec.KeyProbe, error) {
	if kd, ok := d.(KeyProber); ok && !p.cfg.Drain {
		return kd.ProbeKey(ctx, au, emit)
	}
	var kp codec.KeyProbe
	sc, _ := d.(setupCounter)
	var s0 int64
	if sc != nil {
		s0 = sc.Setups()
	}
	t := time.Now()
	err := d.Decode(ctx, au, emit)
	kp.Send = time.Since(t)
	t = time.Now()
	if ferr := d.Flush(ctx, emit); err == nil {
		err = ferr
	}
	kp.Drain, kp.Drained = time.Since(t), true
	if sc != nil {
		kp.Setups = sc.Setups() - s0
	}
	return kp, err
}

// count adds a probe's figures to the pool's.
func (p *Pool) count(kp codec.KeyProbe) {
	if kp.Drained {
		p.drains.Add(1)
	}
	if kp.Pushed {
		p.pushes.Add(1)
	}
	p.setups.Add(kp.Setups)
	p.sendNanos.Add(int64(kp.Send))
	p.pushNanos.Add(int64(kp.Push))
	p.drainNanos.Add(int64(kp.Drain))
}

// prober takes a free shared decoder of k, making one while fewer than Probers exist.
func (p *Pool) prober(ctx context.Context, k Key) (Decoder, error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, ErrClosed
	}
	s := p.slot(k)
	select {
	case d := <-s.free:
		p.mu.Unlock()
		return d, nil
	default:
	}
	if s.made < p.cfg.Probers {
		s.made++
		p.mu.Unlock()
		d, err := p.make(k.Codec)
		if err != nil {
			p.mu.Lock()
			s.made--
			p.mu.Unlock()
			return nil, err
		}
		return d, nil
	}
	p.mu.Unlock()
	t := time.NewTimer(p.cfg.Wait)
	defer t.Stop()
	select {
	case d := <-s.free:
		return d, nil
	case <-t.C:
		p.busy.Add(1)
		return nil, fmt.Errorf("%w (%v, %d decoders, %v)", ErrBusy, k, p.cfg.Probers, p.cfg.Wait)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Take hands out a decoder for k: a warm one when there is one (for a k of unknown size, a
// stream's first, a warm one of any size of its codec), else a new one (counted in Cold). The caller owns it until it gives it back with Put or Drop; the pool then makes a
// warm decoder ahead for the next wake of k (primed with k's last probed key frame).
func (p *Pool) Take(ctx context.Context, k Key) (Decoder, error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, ErrClosed
	}
	s := p.slot(k)
	if len(s.warm) == 0 && k.Width == 0 { // a new stream, size unknown: any warm one of its codec
		for wk, ws := range p.keys {
			if wk.Codec == k.Codec && len(ws.warm) > 0 {
				k, s = wk, ws
				break
			}
		}
	}
	if n := len(s.warm); n > 0 {
		d := s.warm[n-1]
		s.warm[n-1] = nil
		s.warm = s.warm[:n-1]
		p.taken++
		p.refill(k, s)
		p.mu.Unlock()
		p.handouts.Add(1)
		return d, nil
	}
	p.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	d, err := p.make(k.Codec)
	if err != nil {
		return nil, err
	}
	p.cold.Add(1)
	p.mu.Lock()
	p.taken++
	p.refill(k, p.slot(k))
	p.mu.Unlock()
	return d, nil
}

// refill starts making warm decoders for k up to Config.Warm (a key whose size is known and
// that has a primer only). Called with p.mu held.
func (p *Pool) refill(k Key, s *slot) {
	if p.closed || k.Width == 0 || s.primer == nil {
		return
	}
	for len(s.warm)+s.fill < p.cfg.Warm {
		s.fill++
		primer := bytes.Clone(s.primer)
		p.fills.Add(1)
		go p.makeWarm(k, s, primer)
	}
}

// makeWarm makes one decoder and primes it with a key frame of k (decoded and released: with
// KeyProber.ProbeKey, which keeps the set-up, where a drain would free it again for H.264),
// so that its first real picture does not pay the decoder's set-up.
func (p *Pool) makeWarm(k Key, s *slot, primer []byte) {
	defer p.fills.Done()
	d, err := p.make(k.Codec)
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), p.cfg.Wait)
		drop := func(f *frame.Frame) error { f.Release(); return nil }
		au := media.AccessUnit{Codec: k.Codec, Data: primer, Key: true}
		if kd, ok := d.(KeyProber); ok {
			_, err = kd.ProbeKey(ctx, &au, drop)
		} else if err = d.Decode(ctx, &au, drop); err == nil {
			err = d.Flush(ctx, drop)
		}
		cancel()
		if err != nil {
			p.close(d)
		}
	}
	p.mu.Lock()
	s.fill--
	if err != nil || p.closed || len(s.warm) >= p.cfg.Warm {
		p.mu.Unlock()
		if err == nil {
			p.close(d)
		}
		return
	}
	s.warm = append(s.warm, d)
	p.mu.Unlock()
}

// Put gives back a decoder taken with Take (or any decoder of the caller's for k, e.g. a
// stream's own that goes idle), already drained with Parker.Park or Flush: it is kept warm for k's next wake
// while fewer than Config.Warm are, closed otherwise (in the background).
func (p *Pool) Put(k Key, d Decoder, taken bool) {
	p.mu.Lock()
	if taken {
		p.taken--
	}
	if !p.closed && k.Width != 0 {
		s := p.slot(k)
		if len(s.warm) < p.cfg.Warm {
			s.warm = append(s.warm, d)
			p.mu.Unlock()
			return
		}
	}
	p.mu.Unlock()
	p.closeLater(d)
}

// Drop closes a decoder taken with Take (a stream that ended, a failed decoder), in the
// background.
func (p *Pool) Drop(d Decoder) {
	p.mu.Lock()
	p.taken--
	p.mu.Unlock()
	p.closeLater(d)
}

// Stats returns the pool's counters and the decoders alive.
func (p *Pool) Stats() Stats {
	st := Stats{Created: p.created.Load(), Closed: p.closedN.Load(), Probes: p.probes.Load(),
		Busy: p.busy.Load(), ProbeNanos: p.probeNanos.Load(), Handouts: p.handouts.Load(), Cold: p.cold.Load(),
		ProbeDrains: p.drains.Load(), ProbePushes: p.pushes.Load(), ProbeSetups: p.setups.Load(),
		SendNanos: p.sendNanos.Load(), PushNanos: p.pushNanos.Load(), DrainNanos: p.drainNanos.Load()}
	p.mu.Lock()
	defer p.mu.Unlock()
	st.Taken = p.taken
	for _, s := range p.keys {
		st.Probers += s.made
		st.Warm += len(s.warm)
	}
	return st
}

// Close closes the shared and warm decoders (waiting for those being made or closed);
// decoders that streams hold are theirs to Drop. Probes in progress close their decoder when they end.
func (p *Pool) Close() error {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.fills.Wait()
	p.mu.Lock()
	var ds []Decoder
	for _, s := range p.keys {
		ds = append(ds, s.warm...)
		s.warm = nil
	drain:
		for {
			select {
			case d := <-s.free:
				ds = append(ds, d)
				s.made--
			default:
				break drain
			}
		}
	}
	p.mu.Unlock()
	for _, d := range ds {
		p.close(d)
	}
	return nil
}
