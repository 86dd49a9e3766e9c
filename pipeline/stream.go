package pipeline

import (
	"context"
	"errors"
	"fmt"
	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/objects"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vinfer/vinfer/activity"
	"github.com/vinfer/vinfer/decpool"
	"github.com/vinfer/vinfer/frame"
	"github.com/vinfer/vinfer/media"
	"github.com/vinfer/vinfer/preprocess"
	"github.com/vinfer/vinfer/source"
)

// VideoDecoder turns a stream's access units into frames (package codec implements it).
type VideoDecoder interface {
	// Decode sends one access unit and calls emit for every frame that comes out, in
	// presentation order. emit owns the frame's reference. A corrupt access unit returns an
	// error wrapping ErrCorrupt-like causes; the decoder stays usable.
	Decode(ctx context.Context, au *media.AccessUnit, emit func(*frame.Frame) error) error
	// Flush drains frames still held for reordering at the end of the stream.
	Flush(ctx context.Context, emit func(*frame.Frame) error) error
	Close() error
}

// DecoderFrames is the least frame pool a host stream's decoder needs to feed a model of batch
// maxBatch through a queue of queueDepth frames (≤ 0: the default, 2) without waiting on
// inference: the pipeline holds up to the queued frames, the batch running and the next one
// staged (maxBatch each), the frame being queued and the latest kept for snapshots. With a
// smaller pool a drop-oldest stream stalls in its decoder while inference is slow.
func DecoderFrames(maxBatch, queueDepth int) int {
	if queueDepth <= 0 {
		queueDepth = 2
	}
	return queueDepth + 2*max(maxBatch, 1) + 2
}

// Preprocessor writes one frame into one [3,H,W] float32 input slot. One stream's preprocessor
// is called by one goroutine at a time.
type Preprocessor interface {
	Run(f *frame.Frame, dst []float32) (preprocess.Transform, error)
}

// StreamConfig is one stream as the pipeline runs it: its declaration and what runs it.
type StreamConfig struct {
	config.Stream
	// Source delivers the access units (package source's registry opens it).
	Source source.Source
	// NewDecoder makes the decoder for the stream's codec, on the first access unit (a live
	// source may only learn its codec then) and again if the codec changes. The pipeline closes
	// the decoders.
	NewDecoder func(media.Codec) (VideoDecoder, error)
	// Preprocessor writes the stream's host frames into the model's input when their batch is
	// staged (frames are queued as decoded); nil: a CPU preprocessor for the model's spec.
	Preprocessor Preprocessor
	// QueueDepth is the most frames waiting for inference (default 2).
	QueueDepth int
	// AUObserver, when set, sees every access unit before it is decoded (evidence recording).
	AUObserver AUObserver
	// Decoders, when set, is where a stream with idle decoding (activity mode idle) gets its
	// decoders: it holds none while idle, its idle key frames are decoded on the pool's shared
	// decoders and a wake is handed a warm one (parked.go). NewDecoder is then unused, except
	// for a source whose timestamps its own decoder re-stamps (PTSInDecodeOrder).
	Decoders *decpool.Pool
	// Device is the GPU ordinal whose memory holds the frames of a stream decoded on a GPU
	// (Stream.OnGPU): the model's runner for that device (a FrameRunner) preprocesses each
	// batch itself.
	Device int
}

// AUObserver sees a stream's access units on the stream's goroutine, before decoding. The
// unit is borrowed (copy what is kept) and the call must not block.
type AUObserver interface {
	ObserveAccessUnit(au *media.AccessUnit)
	// EndOfStream is called once the source has ended or failed.
	EndOfStream()
}

// stream is a running stream: source → decoder → filter → queue (of decoded frames; the
// model's worker preprocesses each batch straight into the input it runs).
type stream struct {
	cfg    StreamConfig
	stats  *StreamStats
	q      *queue
	sched  *scheduler
	prepMu sync.Mutex // held around cfg.Preprocessor.Run (items of one batch prepare in parallel)
	// cropView is the view of a frame's crop the detector sees (activity crop: motion), under
	// prepMu.
	cropView frame.Frame
	ownPre   *preprocess.CPU // the preprocessor the pipeline made for the stream (nil: the caller's)
	p        *Pipeline

	cancel context.CancelFunc
	done   chan struct{}
	torn   chan struct{} // closed once finish released the decoder, its frames and the source
	err    error
	ended  atomic.Bool
	// stopped: the stream was stopped (the pipeline stopping, or removed) before its end.
	stopped atomic.Bool

	nextAt   time.Time   // fps cap: earliest wall-clock time of the next inferred frame
	capTimer *time.Timer // fps cap: a blocking stream's wait
	dec      VideoDecoder
	codec    media.Codec
	policy   DropPolicy                      // resolved from the declaration and the source
	inflight atomic.Int64                    // items queued or in an inference batch
	idle     chan struct{}                   // signalled when inflight drops to 0
	decStart time.Time                       // decoder work for the next emitted frame began here
	poolOf   interface{ Pool() *frame.Pool } // the decoder, when it has a frame pool
	pool     atomic.Pointer[frame.Pool]      // its current pool (metrics)

	scene *scene         // tracker and zones/lines; nil with tracker: none
	rules *objects.Stage // groups, filters and masks; nil: none
	gate  *activity.Gate // activity gating (config.Activity); nil: off
	watch watched        // gate: classes whose objects keep the stream active (nil: all)

	dpool     *decpool.Pool // cfg.Decoders for a stream with idle decoding (parked.go); nil: own decoders
	dkey      decpool.Key   // the stream's pictures: codec, and size of the last one its own decoder made
	taken     bool          // s.dec came from dpool
	parked    bool          // idle: the stream gave its decoder back to dpool
	holdsNone atomic.Bool   // parked, for status readers
	shared    bool          // a shared decoder's frame is being emitted (not kept for snapshots)
	frames    int64         // dpool: frames decoded (Frame.Index across the decoders used)
	readAt    time.Time     // when the current access unit was read
	wakeAt    time.Time     // when the current wake began (zero: none waiting for its first result)

	outNext uint64      // output goroutine: seq of the next result to deliver
	outHeld []resultMsg // output goroutine: results that came ahead of their turn

	latestMu sync.Mutex
	latest   *frame.Frame // most recent decoded frame, retained for snapshots
}

func (s *stream) run(ctx context.Context) {
	defer close(s.done)
	err := s.loop(ctx)
	if err != nil && !errors.Is(err, context.Canceled) {
		s.err = err
		s.p.log("stream %s: %v", s.cfg.ID, err)
	}
	s.stats.endedAt.Store(time.Now().UnixNano())
	if s.err == nil && ctx.Err() != nil {
		s.stopped.Store(true)
	}
	s.ended.Store(true)
}

func (s *stream) loop(ctx context.Context) error {
	if usesPool(&s.cfg, s.gate) {
		s.dpool = s.cfg.Decoders
	}
	emit := s.onFrame(ctx)
	if o := s.cfg.AUObserver; o != nil {
		defer o.EndOfStream()
	}
	for {
		au, err := s.cfg.Source.Read(ctx)
		if err == io.EOF {
			if s.dec == nil && !s.parked {
				return errors.New("source ended before its first access unit")
			}
			if s.dec == nil { // parked: nothing to drain
				return ctx.Err()
			}
			s.decStart = time.Now()
			if err := s.dec.Flush(ctx, emit); err != nil && ctx.Err() == nil {
				// The decoder reports a damaged last access unit when it drains: a decode
				// error like any other, not a failed stream.
				s.stats.Dropped[DropDecodeError].Add(1)
				s.p.debugf("stream %s: end of stream: %v", s.cfg.ID, err)
			}
			return ctx.Err()
		}
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("source: %w", err)
		}
		s.stats.AccessUnits.Add(1)
		s.readAt = time.Now()
		if o := s.cfg.AUObserver; o != nil {
			o.ObserveAccessUnit(au)
		}
		if s.dec == nil && !s.parked || au.Codec != s.codec {
			if err := s.openDecoder(ctx, au.Codec); err != nil {
				return err
			}
		}
		if s.gate != nil {
			if err := s.gatedDecode(ctx, au, emit); err != nil {
				return err
			}
			continue
		}
		if err := s.decode(ctx, au, emit); err != nil {
			return err
		}
	}
}

// decode decodes one access unit; a decode error is counted, not returned (ctx's is).
func (s *stream) decode(ctx context.Context, au *media.AccessUnit, emit func(*frame.Frame) error) error {
	s.decStart = time.Now()
	if err := s.dec.Decode(ctx, au, emit); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		s.stats.Dropped[DropDecodeError].Add(1)
		s.p.debugf("stream %s: %v", s.cfg.ID, err)
	}
	return nil
}

// gatedDecode decodes an access unit as the stream's activity gate decides: as usual, not at
// all (idle), alone with the decoder drained (an idle key frame), or after the held units of a
// wake's burst.
func (s *stream) gatedDecode(ctx context.Context, au *media.AccessUnit, emit func(*frame.Frame) error) error {
	g := s.gate
	switch g.Admit(au) {
	case activity.Hold:
		return nil
	case activity.Probe:
		if s.dpool != nil {
			return s.poolProbe(ctx, au, emit)
		}
		if err := s.decode(ctx, au, emit); err != nil {
			return err
		}
		s.decStart = time.Now()
		if err := s.dec.Flush(ctx, emit); err != nil && ctx.Err() != nil {
			return ctx.Err()
		}
		burst, woke := g.Probed(au)
		if !woke {
			return nil
		}
		s.woke()
		if err := s.burst(ctx, burst, emit); err != nil {
			return err
		}
	case activity.Wake:
		s.woke()
		if err := s.unpark(ctx); err != nil {
			return err
		}
		if err := s.burst(ctx, g.Burst(), emit); err != nil {
			return err
		}
		if !g.DecodeWaking(au) {
			return nil
		}
	}
	if err := s.unpark(ctx); err != nil { // parked, and the gate restarted (a looped file)
		return err
	}
	return s.decode(ctx, au, emit)
}

// burst decodes a wake's held access units, in order.
func (s *stream) burst(ctx context.Context, units []media.AccessUnit, emit func(*frame.Frame) error) error {
	defer s.gate.BurstDone()
	for i := range units {
		if err := s.decode(ctx, &units[i], emit); err != nil {
			return err
		}
	}
	return nil
}

func (s *stream) openDecoder(ctx context.Context, c media.Codec) error {
	s.closeDecoder()
	s.parked = false
	s.holdsNone.Store(false)
	d, err := s.takeDecoder(ctx, c)
	if err != nil {
		return fmt.Errorf("decoder: %w", err)
	}
	s.dec, s.codec = d, c
	s.poolOf, _ = d.(interface{ Pool() *frame.Pool })
	return nil
}

// onFrame returns the decoder's emit callback: filter, preprocess, queue. Built once so the hot
// path does not allocate a closure per frame.
func (s *stream) onFrame(ctx context.Context) func(*frame.Frame) error {
	return func(f *frame.Frame) error {
		decodeDur := time.Since(s.decStart)
		defer func() { s.decStart = time.Now() }() // the decoder resumes its work for the next frame
		s.stats.Decoded.Add(1)
		if !s.shared {
			s.dkey.Width, s.dkey.Height = f.Width, f.Height
		}
		if s.dpool != nil { // decoders change hands: number the stream's frames itself
			f.Index = s.frames
			s.frames++
		}
		if s.poolOf != nil { // the decoder makes its pool at the first picture, anew on size changes
			if p := s.poolOf.Pool(); p != s.pool.Load() {
				s.pool.Store(p)
			}
		}
		if !s.shared { // a shared decoder's frame is not held past its inference
			s.keepLatest(f)
		}
		defer f.Release()
		if s.cfg.Interval > 1 && f.Index%int64(s.cfg.Interval) != 0 {
			s.stats.Dropped[DropInterval].Add(1)
			return nil
		}
		if s.gate != nil && s.gate.Frame(f) != activity.Infer {
			return nil
		}
		if s.cfg.MaxFPS > 0 {
			if ok, err := s.capFPS(ctx); !ok {
				return err
			}
		}
		it := item{st: s, index: f.Index, pts: f.PTS, wallclock: f.Wallclock,
			width: f.Width, height: f.Height, decoded: time.Now(), decodeDur: decodeDur}
		if s.gate != nil {
			if x, y, w, h, ok := s.gate.Crop(f); ok {
				it.crop = [4]int{x, y, w, h}
			}
		}
		return s.queueFrame(ctx, it, f)
	}
}

// queueFrame queues a decoded frame for its model's worker: the queue holds a reference to the
// frame (released after inference or when the item is dropped).
func (s *stream) queueFrame(ctx context.Context, it item, f *frame.Frame) error {
	f.Retain()
	it.frame = f
	it.queued = it.decoded
	it.wake, s.wakeAt = s.wakeAt, time.Time{} // the first frame inferred after a wake carries it
	return s.enqueue(ctx, it)
}

// prepare writes it's frame into dst (one [3,H,W] slot of the model's input) with the
// stream's preprocessor.
func (s *stream) prepare(it *item, dst []float32) error {
	s.prepMu.Lock()
	defer s.prepMu.Unlock()
	t0 := time.Now()
	src := it.frame
	if c := it.crop; c[2] > 0 {
		if x, y, ok := it.frame.CropInto(&s.cropView, c[0], c[1], c[2], c[3]); ok {
			src, it.cropX, it.cropY = &s.cropView, float32(x), float32(y)
			s.gate.CropUsed()
		}
	}
	tr, err := s.cfg.Preprocessor.Run(src, dst)
	it.prepDur = time.Since(t0)
	if err != nil {
		return fmt.Errorf("stream %s: preprocess frame %d: %w", s.cfg.ID, it.index, err)
	}
	it.tr = tr
	return nil
}

// capFPS applies max_fps on the wall clock: a frame before the stream's next turn is dropped
// (counted as fps_cap) by a stream that drops, and waited for by one that blocks. Turns are a
// grid of 1/max_fps steps, re-anchored after a gap, so jitter does not lower the rate.
// It reports whether the frame goes on; false with ctx's error when ctx ended while waiting.
func (s *stream) capFPS(ctx context.Context) (bool, error) {
	step := time.Duration(float64(time.Second) / s.cfg.MaxFPS)
	now := time.Now()
	if d := s.nextAt.Sub(now); d > 0 {
		if s.policy != Block {
			s.stats.Dropped[DropFPSCap].Add(1)
			return false, nil
		}
		if s.capTimer == nil {
			s.capTimer = time.NewTimer(d)
		} else {
			s.capTimer.Reset(d)
		}
		select {
		case <-s.capTimer.C:
		case <-ctx.Done():
			s.capTimer.Stop()
			s.stats.Dropped[DropShutdown].Add(1)
			return false, ctx.Err()
		}
		now = s.nextAt
	}
	s.nextAt = s.nextAt.Add(step)
	if !s.nextAt.After(now) {
		s.nextAt = now.Add(step)
	}
	return true, nil
}

// enqueue puts it, now in flight, on the stream's queue. A frame it displaces (live streams) is
// recycled and counted as queue_full; at shutdown it is recycled itself and counted.
func (s *stream) enqueue(ctx context.Context, it item) error {
	s.inflight.Add(1)
	dropped, wasDropped, ok := s.q.push(ctx, it, s.policy)
	if !ok {
		s.recycle(it)
		s.stats.Dropped[DropShutdown].Add(1)
		return ctx.Err()
	}
	if wasDropped {
		if !dropped.wake.IsZero() && s.wakeAt.IsZero() { // the wake's first result is the next one's
			s.wakeAt = dropped.wake
		}
		s.recycle(dropped)
		s.stats.Dropped[DropQueueFull].Add(1)
	}
	return nil
}

// recycle releases a dropped item's frame; the item is no longer in flight.
func (s *stream) recycle(it item) {
	if it.frame != nil {
		it.frame.Release()
	}
	s.done1()
}

// done1 marks one item no longer in flight and wakes finish when none is left.
func (s *stream) done1() {
	if s.inflight.Add(-1) == 0 {
		signal(s.idle)
	}
}

func (s *stream) keepLatest(f *frame.Frame) {
	if !s.p.keepLatest {
		return
	}
	f.Retain()
	s.latestMu.Lock()
	old := s.latest
	s.latest = f
	s.latestMu.Unlock()
	if old != nil {
		old.Release()
	}
}

// Latest returns the most recent decoded frame with a reference the caller must Release, or nil.
func (s *stream) Latest() *frame.Frame {
	s.latestMu.Lock()
	defer s.latestMu.Unlock()
	if s.latest != nil {
		s.latest.Retain()
	}
	return s.latest
}

func (s *stream) releaseLatest() {
	s.latestMu.Lock()
	old := s.latest
	s.latest = nil
	s.latestMu.Unlock()
	if old != nil {
		old.Release()
	}
}
