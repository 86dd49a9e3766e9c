package defs

import "time"

// ActivityState is what a gated stream analyses now (docs/activity.md).
type ActivityState uint8

// Activity states.
const (
	// ActivityFull: every frame decoded and inferred: the last frame checked moved, showed an
	// object that keeps the stream active, or belongs to a wake's burst.
	ActivityFull ActivityState = iota
	// ActivityGated: every frame decoded and checked for motion, none inferred but at the
	// refresh: the scene is still and empty.
	ActivityGated
	// ActivityIdle: only key frames decoded (motion and, at the refresh, the detector on them);
	// the access units since the last key frame are held for a wake.
	ActivityIdle
)

var activityStateNames = [...]string{"full", "gated", "idle"}

func (s ActivityState) String() string {
	if int(s) < len(activityStateNames) {
		return activityStateNames[s]
	}
	return "unknown"
}

// Waker wakes gated streams from outside: POST /api/streams/{id}/wake, a GB28181 alarm (and
// any other event source, e.g. ONVIF, through the same call).
type Waker interface {
	// WakeStream makes a gated stream analyse every frame from its next access unit; an idle
	// one decodes the access units held since its last key frame first. It fails for a stream
	// that does not exist or is not gated.
	WakeStream(id string) error
}

// MotionBox is a moving region in frame pixels, [X0,X1)×[Y0,Y1).
type MotionBox struct{ X0, Y0, X1, Y1 int }

// Activity is a snapshot of a stream's gate.
type Activity struct {
	// Mode is the declared mode (gate, idle); State the current state.
	Mode  string
	State ActivityState
	// Fraction is the moving share of the last frame checked (0…1); Boxes its moving regions.
	Fraction float64
	Boxes    []MotionBox
	// Gated counts frames not inferred because nothing moved: decoded and skipped, or never
	// decoded (held while idle, then discarded at the next key frame).
	Gated int64
	// Probes counts key frames decoded while idle; Wakes the wakes; BurstUnits the access
	// units decoded in wake bursts; BurstNanos the time spent decoding them.
	Probes, Wakes, BurstUnits, BurstNanos int64
	// Cut counts access units a full GOP buffer refused (lost to a wake's burst).
	Cut int64
	// Requests counts the wakes asked from outside (WakeStream: the API, a GB28181 alarm).
	Requests int64
	// Cropped counts the frames inferred on the motion regions' crop (crop: motion).
	Cropped int64
	// GOP is the last measured key-frame interval (0: not yet known).
	GOP time.Duration
	// IdleOff says why idle decoding is off for this stream ("" when it is available).
	IdleOff string
	// Unsampled counts frames in device memory whose motion could not be checked (inferred).
	Unsampled int64
	// WokeResults counts wakes whose first result came out; WakeNanos sums, WakeMaxNanos
	// bounds the time from each wake's start (the access unit that woke the stream arriving)
	// to that result.
	WokeResults, WakeNanos, WakeMaxNanos int64
	// HeldBytes is the host memory the gate holds: its GOP buffer (grown to the largest GOP
	// held, up to gop_bytes) and a device stream's sampled luma rows.
	HeldBytes int
	// Parked reports an idle stream that holds no decoder (its key frames are decoded on a
	// shared decoder: docs/activity.md).
	Parked bool
}
