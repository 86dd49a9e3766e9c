// Package activity makes a stream's cost follow its scene (docs/activity.md). A Gate sits
// between a stream's source and its decoder and between the decoder and inference, whatever
// the decoder (FFmpeg or NVDEC): it decides which access units are decoded (all of them, or
// only key frames while the stream is idle, the others held in a bounded GOP buffer for a wake's
// burst) and which decoded frames are inferred (those with motion, while an object lives, or at
// the refresh). Its clock is the access units' PTS, so its decisions are the same at any speed.
package activity

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vinfer/vinfer/frame"
	"github.com/vinfer/vinfer/internal/defs"
	"github.com/vinfer/vinfer/media"
	"github.com/vinfer/vinfer/motion"
)

// Settings configure a Gate (config.Activity resolved).
type Settings struct {
	// Idle enables key-frame-only decoding (mode: idle); false: gating only.
	Idle bool
	// Refresh is the longest PTS gap between inferred frames of a still scene.
	Refresh time.Duration
	// IdleAfter is how long without motion or objects makes the stream idle.
	IdleAfter time.Duration
	// MaxGOP is the longest key-frame interval idle decoding accepts.
	MaxGOP time.Duration
	// Hold is how long after a frame with objects the stream counts as active (the tracker's
	// buffer plus the scene's retention: a track is not left to age without updates).
	Hold time.Duration
	// GOPBytes bounds the GOP buffer.
	GOPBytes int
	// MinFraction is the least moving share of a frame that is motion.
	MinFraction float64
	// Motion configures the detector.
	Motion motion.Config
	// Crop makes Crop return the motion regions' and live objects' crop (crop: motion).
	Crop bool
}

// ErrSettings wraps invalid Settings.
var ErrSettings = errors.New("activity")

// Action is what the stream does with an access unit (Gate.Admit).
type Action uint8

// Actions.
const (
	// Decode: decode it as usual.
	Decode Action = iota
	// Hold: do not decode it (idle; it is held for a wake, or dropped after a cut).
	Hold
	// Probe: decode it alone and drain the decoder (Flush), then call Probed.
	Probe
	// Wake: decode Burst's units first, call BurstDone, then decode this one.
	Wake
)

// Verdict is what happens to a decoded frame (Gate.Frame).
type Verdict uint8

// Verdicts.
const (
	// Infer the frame.
	Infer Verdict = iota
	// Gated: nothing to analyse; counted.
	Gated
	// Again: the frame is or will be analysed in another pass (a probe that woke the stream,
	// a burst's frame inferred before); not counted.
	Again
)

// Gate is one stream's activity gate. Admit, Probed, Burst, BurstDone and Frame are called by
// the stream's goroutine; Seen, WakeUp and Snapshot from any goroutine.
type Gate struct {
	s   Settings
	det *motion.Detector
	gop gop

	state       atomic.Uint32 // defs.ActivityState
	started     bool
	lastDTS     time.Duration // decoding time of the last access unit admitted
	lastActive  time.Duration // last frame with motion or objects
	lastInfer   time.Duration // last inferred frame
	inferred    bool          // a frame was inferred since the start (or a time reset)
	forceUntil  time.Duration // frames up to this PTS are inferred (a wake's burst and its unit)
	replayed    time.Duration // frames up to this PTS were inferred before the last wake
	probing     bool
	wakePending bool
	idlePending bool
	skipToKey   bool // a cut burst: the units until the next key frame cannot be decoded
	haveKey     bool
	lastKey     time.Duration
	firstPTS    time.Duration
	seenAtIdle  int64

	seen    atomic.Int64 // frames with objects (Seen calls)
	live    atomic.Int64 // PTS (ns) until which the stream has objects
	wakeReq atomic.Bool

	gated, probes, wakes, burstUnits, burstNanos, cut atomic.Int64
	requests                                          atomic.Int64 // WakeUp calls
	cropped                                           atomic.Int64 // frames inferred on a crop
	burstStart                                        time.Time

	rows, plane []byte // a device frame's sampled luma rows and their plane (LumaSampler)
	unsampled   atomic.Int64

	wokeN, wokeNanos, wokeMax atomic.Int64 // WokeResult
	held                      atomic.Int64 // host bytes of the GOP buffer and the sampled rows (Snapshot)

	mu       sync.Mutex // guards the fields below (Snapshot)
	fraction float64
	boxes    []defs.MotionBox
	gopLen   time.Duration
	idleOff  string
	// area is the live objects' area (SeenArea), kept until areaUntil.
	area               [4]int
	areaPTS, areaUntil time.Duration
}

// New returns a gate; errors wrap ErrSettings or motion.ErrConfig.
func New(s Settings) (*Gate, error) {
	if s.Refresh <= 0 || s.IdleAfter <= 0 || s.MaxGOP <= 0 || s.GOPBytes <= 0 || s.Hold < 0 {
		return nil, fmt.Errorf("%w: refresh, idle_after, max_gop and gop_bytes must be > 0", ErrSettings)
	}
	det, err := motion.New(s.Motion)
	if err != nil {
		return nil, err
	}
	g := &Gate{s: s, det: det, gop: gop{limit: s.GOPBytes}, boxes: make([]defs.MotionBox, 0, 16)}
	g.live.Store(math.MinInt64)
	g.areaPTS, g.areaUntil = math.MinInt64, math.MinInt64
	g.state.Store(uint32(defs.ActivityGated))
	return g, nil
}

// State is the gate's current state.
func (g *Gate) State() defs.ActivityState { return defs.ActivityState(g.state.Load()) }

func (g *Gate) setState(s defs.ActivityState) { g.state.Store(uint32(s)) }

// Seen tells the gate that the inferred frame at pts had objects (tracked ones, or detections
// without a tracker): the stream stays active until pts + Hold.
func (g *Gate) Seen(pts time.Duration) {
	g.seen.Add(1)
	until := int64(pts + g.s.Hold)
	for {
		old := g.live.Load()
		if until <= old || g.live.CompareAndSwap(old, until) {
			return
		}
	}
}

// WakeUp asks an idle stream to wake at its next access unit; for a stream not idle it counts
// as activity then (idle_after starts again). An API call, a GB28181 alarm, an ONVIF event;
// counted in Requests.
func (g *Gate) WakeUp() {
	g.requests.Add(1)
	g.wakeReq.Store(true)
}

// Admit decides what to do with the stream's next access unit (before decoding it).
func (g *Gate) Admit(au *media.AccessUnit) Action {
	if !g.started || au.DTS < g.lastDTS {
		g.restart(au.PTS)
	}
	g.lastDTS = au.DTS
	g.keys(au)
	if g.State() != defs.ActivityIdle {
		if g.wakeReq.Swap(false) {
			g.lastActive = au.PTS
			g.idlePending = false
		}
		if g.skipToKey {
			if !au.Key {
				g.gated.Add(1)
				g.cut.Add(1)
				return Hold
			}
			g.skipToKey = false
		}
		if g.idlePending && au.Key && g.idleAllowed() {
			g.idlePending = false
			g.setState(defs.ActivityIdle)
			g.seenAtIdle = g.seen.Load()
			g.gop.reset()
			g.probing = true
			g.probes.Add(1)
			return Probe
		}
		return Decode
	}
	if !g.idleAllowed() || g.wakeReq.Swap(false) || g.seen.Load() != g.seenAtIdle {
		g.wake(au.PTS)
		return Wake
	}
	if au.Key {
		g.probing = true
		g.probes.Add(1)
		return Probe
	}
	if !g.gop.add(au) {
		g.cut.Add(1)
	}
	g.noteHeld()
	return Hold
}

// Probed follows a Probe's decode: it reports whether the key frame woke the stream, and then
// the units to decode first (as after Wake: call BurstDone after them, then decode the key
// frame again, as usual).
func (g *Gate) Probed(au *media.AccessUnit) (burst []media.AccessUnit, woke bool) {
	g.probing = false
	if g.wakePending {
		g.wakePending = false
		g.wake(au.PTS)
		g.skipToKey = false // the key frame that woke the stream is decoded next
		return g.Burst(), true
	}
	held, cut := g.gop.reset()
	if held > 0 {
		g.gated.Add(int64(held - 1 + cut)) // the held units after the probed key were never decoded
	}
	g.gop.add(au)
	g.noteHeld()
	return nil, false
}

func (g *Gate) wake(pts time.Duration) {
	g.setState(defs.ActivityFull)
	g.wakes.Add(1)
	g.lastActive = pts
	g.forceUntil = pts
	if g.inferred {
		g.replayed = g.lastInfer
	}
	g.wakePending, g.idlePending = false, false
	if g.gop.cut > 0 {
		g.skipToKey = true
	}
	g.burstStart = time.Now()
}

// DecodeWaking reports whether the access unit that woke the stream (Admit's Wake) is decoded
// after the burst: not when the burst was cut and it is not a key frame (the units it needs
// are lost; counted as cut), and then neither are the units up to the next key frame.
func (g *Gate) DecodeWaking(au *media.AccessUnit) bool {
	if !g.skipToKey || au.Key {
		g.skipToKey = false
		return true
	}
	g.gated.Add(1)
	g.cut.Add(1)
	return false
}

// Burst returns the held access units to decode after a wake, in decoding order, borrowed
// until BurstDone.
func (g *Gate) Burst() []media.AccessUnit { return g.gop.view() }

// BurstDone releases the burst's units.
func (g *Gate) BurstDone() {
	held, cut := g.gop.reset()
	g.burstUnits.Add(int64(held))
	g.gated.Add(int64(cut))
	g.burstNanos.Add(int64(time.Since(g.burstStart)))
}

// restart forgets the timing at the first unit and when DTS go backwards (a looped file, a
// source restart): the stream is gated and analyses its next frame.
func (g *Gate) restart(pts time.Duration) {
	g.started = true
	g.lastActive, g.firstPTS = pts, pts
	g.inferred, g.haveKey = false, false
	g.forceUntil, g.replayed = math.MinInt64, math.MinInt64
	g.probing, g.wakePending, g.idlePending, g.skipToKey = false, false, false, false
	g.live.Store(math.MinInt64)
	g.mu.Lock()
	g.areaPTS, g.areaUntil = math.MinInt64, math.MinInt64
	g.mu.Unlock()
	g.gop.reset()
	g.setState(defs.ActivityGated)
}

// keys measures the GOP and turns idle decoding off (with the reason) when key frames are
// further apart than MaxGOP or stop coming.
func (g *Gate) keys(au *media.AccessUnit) {
	if !g.s.Idle {
		return
	}
	var reason string
	switch {
	case au.Key && g.haveKey:
		gl := au.PTS - g.lastKey
		g.mu.Lock()
		g.gopLen = gl
		g.mu.Unlock()
		if gl > g.s.MaxGOP {
			reason = fmt.Sprintf("GOP of %v is longer than max_gop %v", gl, g.s.MaxGOP)
		}
	case au.Key:
	case g.haveKey && au.PTS-g.lastKey > g.s.MaxGOP:
		reason = fmt.Sprintf("no key frame for %v (longer than max_gop %v): decoding every frame", au.PTS-g.lastKey, g.s.MaxGOP)
	case !g.haveKey && au.PTS-g.firstPTS > g.s.MaxGOP:
		reason = fmt.Sprintf("no key frame in the first %v (max_gop %v): decoding every frame", au.PTS-g.firstPTS, g.s.MaxGOP)
	default:
		return // a unit within the GOP: nothing changes
	}
	if au.Key {
		g.haveKey, g.lastKey = true, au.PTS
	}
	g.mu.Lock()
	g.idleOff = reason
	g.mu.Unlock()
}

func (g *Gate) idleAllowed() bool {
	if !g.s.Idle {
		return false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.idleOff == ""
}

// Frame decides whether a decoded frame is inferred, checking it for motion.
func (g *Gate) Frame(f *frame.Frame) Verdict {
	if f.PTS <= g.replayed {
		return Again // a burst decodes frames analysed before it
	}
	r, ok := g.motion(f)
	moving := !ok || !r.Lighting && r.Fraction >= g.s.MinFraction && r.Moving()
	g.mu.Lock()
	g.fraction = r.Fraction
	g.boxes = g.boxes[:0]
	for _, b := range r.Boxes {
		if len(g.boxes) == cap(g.boxes) {
			break
		}
		g.boxes = append(g.boxes, defs.MotionBox{X0: b.X0, Y0: b.Y0, X1: b.X1, Y1: b.Y1})
	}
	g.mu.Unlock()
	live := int64(f.PTS) <= g.live.Load()
	if moving || live {
		g.lastActive = f.PTS
	}
	if g.probing {
		if moving {
			g.wakePending = true
			return Again
		}
		return g.infer(f, live || !g.inferred || f.PTS-g.lastInfer >= g.s.Refresh)
	}
	active := moving || live || f.PTS <= g.forceUntil
	v := g.infer(f, active || !g.inferred || f.PTS-g.lastInfer >= g.s.Refresh)
	if g.State() != defs.ActivityIdle {
		if active {
			g.setState(defs.ActivityFull)
		} else {
			g.setState(defs.ActivityGated)
		}
	}
	if g.s.Idle && f.PTS-g.lastActive >= g.s.IdleAfter {
		g.idlePending = true
	}
	return v
}

// LumaSampler is the backing of a frame whose pixels are in device memory (an NVDEC
// surface): it copies to the host the luma rows the motion check samples
// (motion.SampledRows: rows first, first+every, …, width bytes each) into dst, packed (pitch
// width), before returning.
type LumaSampler interface {
	SampleLuma(f *frame.Frame, dst []byte, first, every, width, rows int) error
}

// motion checks f: its host luma plane, or the rows a LumaSampler copied out of device memory
// (one row per 12×12 block of a 1080p frame: 173 KB, not the 2 MB luma plane). ok is false
// for a frame that could not be checked (no host plane, no sampler, a copy that failed):
// counted, and taken for motion so that nothing is missed.
func (g *Gate) motion(f *frame.Frame) (motion.Result, bool) {
	if f.Planes[0] != nil {
		return g.det.Process(f), true
	}
	ls, ok := f.Backing.(LumaSampler)
	if !ok || f.Width <= 0 || f.Height <= 0 {
		g.unsampled.Add(1)
		return motion.Result{}, false
	}
	w, h, step := g.det.PlaneSize(f.Width, f.Height)
	first, every, width, rows := motion.SampledRows(w, h, step)
	if first+(rows-1)*every >= f.Height {
		rows--
	}
	if n := width * rows; cap(g.rows) < n {
		g.rows = make([]byte, n)
	}
	if cap(g.plane) < w*h {
		g.plane = make([]byte, w*h)
	}
	g.rows, g.plane = g.rows[:width*rows], g.plane[:w*h]
	g.noteHeld()
	if err := ls.SampleLuma(f, g.rows, first, every, width, rows); err != nil {
		g.unsampled.Add(1)
		return motion.Result{}, false
	}
	clear(g.plane[rows*w:]) // a last block whose middle row is past the picture
	motion.AverageRows(g.plane, g.rows, width, w, rows, step)
	return g.det.ProcessPlane(g.plane, f.Width, f.Height), true
}

// Idle reports whether the gate may make its stream idle (mode idle).
func (g *Gate) Idle() bool { return g.s.Idle }

// WokeResult records the time from a wake's start (the arrival of the access unit that woke
// the stream) to the first result after it; any goroutine.
func (g *Gate) WokeResult(d time.Duration) {
	g.wokeN.Add(1)
	g.wokeNanos.Add(int64(d))
	for {
		old := g.wokeMax.Load()
		if int64(d) <= old || g.wokeMax.CompareAndSwap(old, int64(d)) {
			return
		}
	}
}

// noteHeld records the host memory the gate holds, for Snapshot (the stream's goroutine).
func (g *Gate) noteHeld() { g.held.Store(int64(cap(g.gop.data) + cap(g.rows) + cap(g.plane))) }

// Unsampled counts frames whose motion could not be checked (taken for motion).
func (g *Gate) Unsampled() int64 { return g.unsampled.Load() }

func (g *Gate) infer(f *frame.Frame, yes bool) Verdict {
	if !yes {
		g.gated.Add(1)
		return Gated
	}
	g.inferred, g.lastInfer = true, f.PTS
	return Infer
}

// Snapshot returns the gate's state and counters.
func (g *Gate) Snapshot(mode string) defs.Activity {
	a := defs.Activity{Mode: mode, State: g.State(), Gated: g.gated.Load(), Probes: g.probes.Load(),
		Wakes: g.wakes.Load(), BurstUnits: g.burstUnits.Load(), BurstNanos: g.burstNanos.Load(), Cut: g.cut.Load(), Requests: g.requests.Load(), Cropped: g.cropped.Load()}
	g.mu.Lock()
	a.Fraction, a.GOP, a.IdleOff = g.fraction, g.gopLen, g.idleOff
	a.HeldBytes = int(g.held.Load())
	a.Unsampled, a.WokeResults, a.WakeNanos, a.WakeMaxNanos = g.unsampled.Load(), g.wokeN.Load(), g.wokeNanos.Load(), g.wokeMax.Load()
	a.Boxes = append([]defs.MotionBox(nil), g.boxes...)
	g.mu.Unlock()
	return a
}
