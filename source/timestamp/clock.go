package timestamp

import (
	"fmt"
	"time"
)

// DefaultMaxJump is the Clock.MaxJump used when none is set.
const DefaultMaxJump = 10 * time.Second

// DefaultSustain is the Clock.Sustain used when none is set.
const DefaultSustain = 3

// Event tells what Convert made of a timestamp.
type Event int

// Events of Convert.
const (
	// EventNone: the timestamp follows the timeline.
	EventNone Event = iota
	// EventOutlier: the timestamp broke the timeline and was not (yet) confirmed by the ones
	// after it. Its presentation time is interpolated from the arrival time, and the timeline
	// stays where it was: when the next timestamps follow the old timeline, nothing moved.
	EventOutlier
	// EventJump: Sustain timestamps in a row agreed on a new timeline (a DVR that jumped by
	// hours, a camera that restarted its counter): the clock re-anchored on it. Reported once
	// per jump.
	EventJump
)

// Clock converts the 32-bit media timestamps of one stream into a presentation time that starts at
// zero and never jumps: wraparound (every 2^32 ticks, 13.25 h at 90 kHz) is unwrapped with serial
// number arithmetic (RFC 1982, as RFC 3550 §5.1 asks), and a step larger than MaxJump that the
// local arrival times do not explain is either an outlier or a jump:
//
//   - an isolated timestamp far off (one packet of a camera's encoder gone wrong) is an
//     outlier: it gets a presentation time interpolated from its arrival, and the timestamps
//     after it continue the original timeline untouched;
//   - Sustain timestamps in a row that agree among themselves but not with the timeline are a
//     jump: the clock re-anchors, placing the first of them after the last good one by the
//     arrival time that passed, so the repaired timeline never goes back; with B-frames
//     (Reordered) late enough that the new timeline's B-frames come after every time given
//     before. A restart is placed the same way.
//
// Steps smaller than MaxJump, backwards included, are kept as they are: B-frames make the
// presentation time of consecutive access units go back and forth.
//
// The zero value is not ready: set Rate and call Init. A Clock is not safe for concurrent use.
type Clock struct {
	// Rate is the clock rate in ticks per second (90000 for video, RFC 6184 §8.2.1).
	Rate int
	// MaxJump bounds the step between two consecutive timestamps; 0 means DefaultMaxJump.
	MaxJump time.Duration
	// Sustain is the number of timestamps in a row off the timeline that make a jump rather
	// than outliers; 0 means DefaultSustain.
	Sustain int

	maxJumpTicks int64
	started      bool
	rebase       bool
	last         uint32 // the last timestamp on the timeline
	lastExt      int64  // its ticks since the first timestamp, on the repaired timeline
	lastArrival  time.Time
	cur          int64 // ticks of the last timestamp converted (an outlier's interpolation too)
	maxExt       int64 // the largest ticks on the timeline
	lead         int64 // the most a timestamp fell behind maxExt: the B-frame reordering span

	cand        bool // timestamps off the timeline are being watched
	candFirst   uint32
	candLast    uint32
	candMax     uint32    // the largest of them (serial arithmetic)
	candArrival time.Time // arrival of candFirst
	candN       int

	jumps, outliers uint64
}

// Init checks the configuration. It returns an error when Rate is not positive.
func (c *Clock) Init() error {
	if c.Rate <= 0 {
		return fmt.Errorf("timestamp: clock rate %d is invalid, want ticks per second > 0 (90000 for video)", c.Rate)
	}
	if c.MaxJump <= 0 {
		c.MaxJump = DefaultMaxJump
	}
	if c.Sustain <= 0 {
		c.Sustain = DefaultSustain
	}
	c.maxJumpTicks = c.toTicks(c.MaxJump)
	return nil
}

// Convert returns the presentation time of timestamp ts (in Rate ticks) received at arrival
// (local time; monotonic readings preferred), and what it made of it.
func (c *Clock) Convert(ts uint32, arrival time.Time) (pts time.Duration, ev Event) {
	switch {
	case !c.started:
		c.started = true
		c.accept(ts, 0, arrival)
	case c.rebase:
		c.accept(ts, c.after(c.lastExt+c.arrivalTicks(arrival.Sub(c.lastArrival)), 0), arrival)
	default:
		step := int64(int32(ts - c.last))
		if c.near(step, arrival.Sub(c.lastArrival)) {
			c.accept(ts, c.lastExt+step, arrival)
			break
		}
		if c.cand && c.near(int64(int32(ts-c.candLast)), 0) {
			c.candN++
			c.candLast = ts
			if int32(ts-c.candMax) > 0 {
				c.candMax = ts
			}
		} else {
			c.cand, c.candFirst, c.candLast, c.candMax, c.candArrival, c.candN = true, ts, ts, ts, arrival, 1
		}
		if c.candN >= c.Sustain {
			// a new timeline: its first timestamp comes after the last good one by the
			// arrival time that passed, and late enough that the B-frames still to come
			// on it come after every presentation time given so far (after)
			first := c.after(c.lastExt+c.arrivalTicks(c.candArrival.Sub(c.lastArrival)), int64(int32(c.candMax-c.candFirst)))
			c.accept(ts, first+int64(int32(ts-c.candFirst)), arrival)
			c.jumps++
			ev = EventJump
			break
		}
		c.cur = c.lastExt + c.arrivalTicks(arrival.Sub(c.lastArrival))
		c.outliers++
		ev = EventOutlier
	}
	c.rebase = false
	return Duration(c.cur, c.Rate), ev
}

// near reports that a step of the given ticks is on the timeline: within MaxJump, or explained
// by the arrival time elapsed within MaxJump (a long silence).
func (c *Clock) near(step int64, elapsed time.Duration) bool {
	if step <= c.maxJumpTicks && step >= -c.maxJumpTicks {
		return true
	}
	d := step - c.toTicks(elapsed)
	return d <= c.maxJumpTicks && d >= -c.maxJumpTicks
}

// accept puts ts on the timeline at ext ticks.
func (c *Clock) accept(ts uint32, ext int64, arrival time.Time) {
	c.last, c.lastExt, c.cur, c.lastArrival = ts, ext, ext, arrival
	c.cand = false
	if ext >= c.maxExt {
		c.maxExt = ext
	} else {
		c.lead = max(c.lead, c.maxExt-ext)
	}
}

// after places the first timestamp of a new timeline (a jump, a restart): at ext, the
// arrival-time placement, or later when the timestamps still to come, which may fall behind
// the largest of the new timeline so far (ahead ticks past the first) by up to lead (B-frames),
// would otherwise come before the largest presentation time given (maxExt). Without B-frames
// (lead 0) it is ext.
func (c *Clock) after(ext, ahead int64) int64 {
	return max(ext, c.maxExt+1+c.lead-ahead)
}

// Reordered reports that timestamps went back on the timeline (B-frames): pictures come out
// of a decoder in another order than their access units go in.
func (c *Clock) Reordered() bool { return c.lead > 0 }

// Ticks returns the position of the last converted timestamp on the repaired timeline, in Rate
// ticks since the first one.
func (c *Clock) Ticks() int64 { return c.cur }

// Restart tells the clock that the next timestamp starts a new, unrelated timeline (a reconnect,
// a new SSRC): it is placed after the last one by the arrival time that passed, and not counted
// as a jump.
func (c *Clock) Restart() {
	if c.started {
		c.rebase = true
	}
}

// Outliers returns how many timestamps were taken for outliers.
func (c *Clock) Outliers() uint64 { return c.outliers }

// Jumps returns how many timestamps were re-stamped.
func (c *Clock) Jumps() uint64 { return c.jumps }

// arrivalTicks is an arrival time elapsed, in ticks, at least one tick so that the repaired
// timeline keeps moving forward.
func (c *Clock) arrivalTicks(d time.Duration) int64 {
	if d > c.MaxJump {
		// a long silence: keep it, it is what happened
		return c.toTicks(d)
	}
	return max(c.toTicks(d), 1)
}

func (c *Clock) toTicks(d time.Duration) int64 {
	return int64(d/time.Second)*int64(c.Rate) + int64(d%time.Second)*int64(c.Rate)/int64(time.Second)
}

// Duration converts a tick count of the given rate into a duration without overflow for any
// count a 64-bit integer holds at video rates.
func Duration(ticks int64, rate int) time.Duration {
	r := int64(rate)
	return time.Duration(ticks/r)*time.Second + time.Duration(ticks%r)*time.Second/time.Duration(r)
}
