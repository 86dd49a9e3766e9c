package timestamp

import (
	"fmt"
	"time"
)

// DefaultMaxJump is the Clock.MaxJump used when none is set.
const DefaultMaxJump = 10 * time.Second

// Clock converts the 32-bit media timestamps of one stream into a presentation time that starts at
// zero and never jumps: wraparound (every 2^32 ticks, 13.25 h at 90 kHz) is unwrapped with serial
// number arithmetic (RFC 1982), and a step larger than MaxJump that the local arrival times do not
// explain (a DVR that jumps by hours, a camera that restarts its counter) is re-stamped from the
// arrival times and counted.
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

	maxJumpTicks int64
	started      bool
	rebase       bool
	last         uint32
	lastExt      int64 // ticks since the first timestamp, on the repaired timeline
	lastArrival  time.Time
	jumps        uint64
}

// Init checks the configuration. It returns an error when Rate is not positive.
func (c *Clock) Init() error {
	if c.Rate <= 0 {
		return fmt.Errorf("timestamp: clock rate %d is invalid, want ticks per second > 0 (90000 for video)", c.Rate)
	}
	if c.MaxJump <= 0 {
		c.MaxJump = DefaultMaxJump
	}
	c.maxJumpTicks = c.toTicks(c.MaxJump)
	return nil
}

// Convert returns the presentation time of timestamp ts (in Rate ticks) received at arrival
// (local time; monotonic readings preferred). jumped reports that ts broke the timeline and was
// re-stamped.
func (c *Clock) Convert(ts uint32, arrival time.Time) (pts time.Duration, jumped bool) {
	switch {
	case !c.started:
		c.started = true
		c.lastExt = 0
	case c.rebase:
		c.lastExt += c.arrivalTicks(arrival)
	default:
		step := int64(int32(ts - c.last))
		if step > c.maxJumpTicks || step < -c.maxJumpTicks {
			elapsed := c.arrivalTicks(arrival)
			if d := step - elapsed; d > c.maxJumpTicks || d < -c.maxJumpTicks {
				step = elapsed
				jumped = true
				c.jumps++
			}
		}
		c.lastExt += step
	}
	c.rebase = false
	c.last = ts
	c.lastArrival = arrival
	return Duration(c.lastExt, c.Rate), jumped
}

// Ticks returns the position of the last converted timestamp on the repaired timeline, in Rate
// ticks since the first one.
func (c *Clock) Ticks() int64 { return c.lastExt }

// Restart tells the clock that the next timestamp starts a new, unrelated timeline (a reconnect,
// a new SSRC): it is placed after the last one by the arrival time that passed, and not counted
// as a jump.
func (c *Clock) Restart() {
	if c.started {
		c.rebase = true
	}
}

// Jumps returns how many timestamps were re-stamped.
func (c *Clock) Jumps() uint64 { return c.jumps }

// arrivalTicks is the arrival time elapsed since the last timestamp, in ticks, at least one tick
// so that the repaired timeline keeps moving forward.
func (c *Clock) arrivalTicks(arrival time.Time) int64 {
	d := arrival.Sub(c.lastArrival)
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
