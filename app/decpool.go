package app

import (
	"fmt"
	"os"
	"strconv"
	"sync"

	"github.com/vinfer/vinfer/codec"
	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/cuda"
	"github.com/vinfer/vinfer/decpool"
	"github.com/vinfer/vinfer/internal/defs"
	"github.com/vinfer/vinfer/media"
	"github.com/vinfer/vinfer/pipeline"
)

// Decoder pools of streams with idle decoding (docs/activity.md, "Decoders of idle streams"):
// one per GPU for nvdec streams, one per FFmpeg decoder set-up for host streams.
const (
	// nvdecProbers and nvdecWarm size a GPU's pool: 8 shared decoders decode the idle key
	// frames (an NVDEC I-frame and drain take a few ms: ~2,000 key frames/s, 600 idle cameras
	// with 1 s GOPs need 600); up to 32 warm ones (~7 GB at 1080p) keep the decoders of
	// streams going idle for those waking, so that a rotation of 10-20 wakes/s reuses
	// decoders instead of making (~350 ms) and closing them.
	nvdecProbers, nvdecWarm = 8, 32
	// cpuProbers and cpuWarm size a host pool: FFmpeg decoders are cheap to make.
	cpuProbers, cpuWarm = 2, 1
)

// poolSize returns n, or the environment's override (VINFER_DECPOOL_PROBERS,
// VINFER_DECPOOL_WARM: tuning for benchmarks, 1…256 probers, 0…256 warm; other values are
// ignored).
func poolSize(env string, n, least int) int {
	v, err := strconv.Atoi(os.Getenv(env))
	if err != nil || v < least || v > 256 {
		return n
	}
	if v == 0 {
		return -1 // decpool.Config: none
	}
	return v
}

// decoderPools holds the app's decoder pools by set-up.
type decoderPools struct {
	mu    sync.Mutex
	pools map[string]*decpool.Pool
}

// decoderPool returns the pool for stream s (decoded on dev, nil: FFmpeg with frames frames).
func (a *App) decoderPool(s *config.Stream, dev *cuda.Device, frames int) (*decpool.Pool, error) {
	var key string
	var cfg decpool.Config
	if dev != nil {
		key = fmt.Sprintf("nvdec/%d", dev.Ordinal())
		cfg = decpool.Config{Probers: poolSize("VINFER_DECPOOL_PROBERS", nvdecProbers, 1),
			Warm: poolSize("VINFER_DECPOOL_WARM", nvdecWarm, 0), New: func(c media.Codec) (decpool.Decoder, error) {
				d := &codec.NVDECStream{Device: dev, Codec: c, Shared: true}
				if err := d.Init(); err != nil {
					return nil, err
				}
				return d, nil
			}}
	} else {
		concealed, skip := s.Concealed == config.ConcealedInfer, s.SkipNonRef
		key = fmt.Sprintf("ffmpeg/%d/%v/%v", frames, concealed, skip)
		cfg = decpool.Config{Probers: cpuProbers, Warm: cpuWarm, New: func(c media.Codec) (decpool.Decoder, error) {
			d := &codec.Decoder{Codec: c, Name: "shared", OutputCorrupt: concealed, Frames: frames, SkipNonRef: skip}
			if err := d.Init(); err != nil {
				return nil, err
			}
			return d, nil
		}}
	}
	p := &a.decPools
	p.mu.Lock()
	defer p.mu.Unlock()
	if pl := p.pools[key]; pl != nil {
		return pl, nil
	}
	pl, err := decpool.New(cfg)
	if err != nil {
		return nil, err
	}
	if p.pools == nil {
		p.pools = map[string]*decpool.Pool{}
	}
	p.pools[key] = pl
	return pl, nil
}

// poolDecoders gives sc's stream, when it decodes idle (activity mode idle), a shared pool
// of decoders (the pipeline uses it for a source whose timestamps need no re-stamping).
func (a *App) poolDecoders(sc *pipeline.StreamConfig) error {
	if sc.Activity == nil || sc.Activity.Mode != config.ActivityIdle {
		return nil
	}
	var dev *cuda.Device
	frames := 0
	if sc.OnGPU() {
		var err error
		if dev, err = a.Devices.Pick(sc.Device); err != nil {
			return fmt.Errorf("stream %s: %w", sc.ID, err)
		}
	} else {
		frames = a.decoderFrames(sc.Model)
	}
	p, err := a.decoderPool(&sc.Stream, dev, frames)
	if err != nil {
		return fmt.Errorf("stream %s: %w", sc.ID, err)
	}
	sc.Decoders = p
	return nil
}

var _ defs.DecoderPools = (*App)(nil)

// DecoderPools sums the app's decoder pools' counters (defs.DecoderPools: metrics, the run
// summary).
func (a *App) DecoderPools() defs.DecoderPoolStats {
	p := &a.decPools
	p.mu.Lock()
	defer p.mu.Unlock()
	var t defs.DecoderPoolStats
	for _, pl := range p.pools {
		s := pl.Stats()
		t.Probers += s.Probers
		t.Warm += s.Warm
		t.Taken += s.Taken
		t.Created += s.Created
		t.Closed += s.Closed
		t.Probes += s.Probes
		t.Busy += s.Busy
		t.ProbeNanos += s.ProbeNanos
		t.ProbeDrains += s.ProbeDrains
		t.ProbePushes += s.ProbePushes
		t.ProbeSetups += s.ProbeSetups
		t.Handouts += s.Handouts
		t.Cold += s.Cold
	}
	return t
}

// close closes the pools (after the pipeline stopped: the streams dropped theirs).
func (p *decoderPools) close() {
	p.mu.Lock()
	pools := p.pools
	p.pools = nil
	p.mu.Unlock()
	for _, pl := range pools {
		pl.Close()
	}
}
