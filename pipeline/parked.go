package pipeline

import (
	"context"
	"fmt"
	"time"

	"github.com/vinfer/vinfer/activity"
	"github.com/vinfer/vinfer/decpool"
	"github.com/vinfer/vinfer/frame"
	"github.com/vinfer/vinfer/media"
)

// A stream with idle decoding and StreamConfig.Decoders holds no decoder while idle
// (docs/activity.md, "Decoders of idle streams"): when it goes idle it drains its decoder and
// gives it back to the pool (kept warm for a wake), its idle key frames are decoded on the
// pool's shared decoders, and a wake takes a warm decoder for the burst and what follows.

// poolProbe handles the gate's Probe with the pool: it parks the stream's decoder, decodes
// the key frame on a shared decoder and, when the key frame woke the stream, takes a decoder
// and decodes the held burst and the key frame again.
func (s *stream) poolProbe(ctx context.Context, au *media.AccessUnit, emit func(*frame.Frame) error) error {
	if err := s.park(ctx, emit); err != nil {
		return err
	}
	s.shared = true
	s.decStart = time.Now()
	err := s.dpool.Probe(ctx, s.dkey, au, emit)
	s.shared = false
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		s.stats.Dropped[DropDecodeError].Add(1)
		s.p.debugf("stream %s: idle key frame: %v", s.cfg.ID, err)
	}
	burst, woke := s.gate.Probed(au)
	if !woke {
		return nil
	}
	s.woke()
	if err := s.unpark(ctx); err != nil {
		return err
	}
	if err := s.burst(ctx, burst, emit); err != nil {
		return err
	}
	return s.decode(ctx, au, emit)
}

// park drains the stream's own decoder (its frames are emitted; with decpool.Parker it stays
// set up) and gives it back to the pool; the stream keeps no frame of it for snapshots.
func (s *stream) park(ctx context.Context, emit func(*frame.Frame) error) error {
	if s.parked || s.dec == nil {
		return nil
	}
	s.decStart = time.Now()
	var err error
	if pk, ok := s.dec.(decpool.Parker); ok { // keeps the decoder set up for the next wake
		err = pk.Park(ctx, emit)
	} else {
		err = s.dec.Flush(ctx, emit)
	}
	if err != nil && ctx.Err() != nil {
		return ctx.Err()
	}
	s.releaseLatest()
	s.dpool.Put(s.dkey, s.dec, s.taken)
	s.dec, s.taken, s.parked, s.poolOf = nil, false, true, nil
	s.holdsNone.Store(true)
	return nil
}

// unpark gives a parked stream a decoder again: a warm one of its key when the pool has one.
func (s *stream) unpark(ctx context.Context) error {
	if !s.parked {
		return nil
	}
	d, err := s.dpool.Take(ctx, s.dkey)
	if err != nil {
		return fmt.Errorf("decoder: %w", err)
	}
	s.dec, s.taken, s.parked = d, true, false
	s.holdsNone.Store(false)
	s.poolOf, _ = d.(interface{ Pool() *frame.Pool })
	return nil
}

// woke notes when the wake began (the arrival of the access unit that woke the stream), for
// the latency from there to the first result after it (activity.Gate.WokeResult).
func (s *stream) woke() {
	if s.wakeAt.IsZero() {
		s.wakeAt = s.readAt
	}
}

// takeDecoder makes the stream's decoder for codec c: from the pool when it has one.
func (s *stream) takeDecoder(ctx context.Context, c media.Codec) (VideoDecoder, error) {
	if s.dpool == nil {
		return s.cfg.NewDecoder(c)
	}
	if s.dkey.Codec != c {
		s.dkey = decpool.Key{Codec: c}
	}
	d, err := s.dpool.Take(ctx, s.dkey)
	if err != nil {
		return nil, err
	}
	s.taken = true
	return d, nil
}

// closeDecoder closes the stream's decoder (given back to the pool's count when it came
// from there).
func (s *stream) closeDecoder() error {
	d := s.dec
	s.dec, s.poolOf = nil, nil
	if d == nil {
		return nil
	}
	if s.taken {
		s.taken = false
		s.dpool.Drop(d)
		return nil
	}
	return d.Close()
}

// usesPool reports whether a stream decodes through the pool: idle decoding with a pool, of a
// source whose timestamps need no re-stamping by the stream's own decoder (raw Annex-B files:
// media.StreamInfo.PTSInDecodeOrder).
func usesPool(cfg *StreamConfig, g *activity.Gate) bool {
	return cfg.Decoders != nil && g != nil && g.Idle() && !cfg.Source.Info().PTSInDecodeOrder
}
