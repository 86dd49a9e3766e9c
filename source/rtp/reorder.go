package rtp

import (
	"time"

	"github.com/vinfer/vinfer/source/live"
)

// Defaults of Reorderer.
const (
	DefaultReorderWindow = 64
	DefaultReorderDelay  = 50 * time.Millisecond
)

// Sequence-number limits of RFC 3550 §A.1.
const (
	maxDropout  = 3000
	maxMisorder = 100
)

// Reorderer puts the RTP packets of one stream back in sequence-number order (RFC 3550 §A.1
// serial arithmetic, wrapping at 2^16). A packet that arrives ahead of a missing one waits in a
// window of Window packets for at most MaxDelay; then the missing ones are given up and counted
// as lost. A jump larger than RFC 3550's MAX_DROPOUT (or back by more than MAX_MISORDER) is
// taken as a sender restart once two consecutive packets confirm it, and counted as a resync.
//
// T is what the caller stores per packet (a buffer, a parsed packet). Items the Reorderer drops
// (late, duplicate) are reported by Push returning false so the caller can recycle them; Drain
// hands back buffered ones. The zero value is not ready: call Init. Not safe for concurrent use.
type Reorderer[T any] struct {
	// Window is the number of packets held while waiting for a missing one; 0 means
	// DefaultReorderWindow, 1 disables reordering (for TCP, where only loss is counted).
	Window int
	// MaxDelay is the longest a missing packet is waited for; 0 means DefaultReorderDelay.
	MaxDelay time.Duration
	// Stats receives Lost, Reordered, Duplicates, Late and Resyncs; nil for private counters.
	Stats *live.Counters

	ring     []slot[T]
	mask     uint16
	started  bool
	next     uint16 // next sequence number to hand out
	highest  uint16 // highest sequence number received
	count    int    // packets in ring
	gapSince time.Time
	badSeq   uint16 // RFC 3550 §A.1: expected sequence number after a suspected restart
	badValid bool
	out      []outItem[T] // packets released by a window overflow, in order
	outHead  int
	lost     int // lost before the next packet handed out
}

type slot[T any] struct {
	v    T
	seq  uint16
	used bool
}

type outItem[T any] struct {
	v    T
	lost int
}

// Init allocates the window.
func (r *Reorderer[T]) Init() error {
	if r.Window <= 0 {
		r.Window = DefaultReorderWindow
	}
	r.Window = min(r.Window, 1<<14)
	if r.MaxDelay <= 0 {
		r.MaxDelay = DefaultReorderDelay
	}
	if r.Stats == nil {
		r.Stats = new(live.Counters)
	}
	n := 1
	for n < r.Window {
		n <<= 1
	}
	r.ring = make([]slot[T], n)
	r.mask = uint16(n - 1)
	return nil
}

// Push offers the packet with sequence number seq, received at now. It returns false when the
// packet is dropped (late, duplicate, or the first of a suspected restart): v is not kept.
func (r *Reorderer[T]) Push(seq uint16, v T, now time.Time) bool {
	if !r.started {
		r.started = true
		r.next, r.highest = seq, seq
	}
	d := int(int16(seq - r.next))
	switch {
	case d >= maxDropout || d < -maxMisorder:
		if !r.badValid || seq != r.badSeq {
			r.badSeq, r.badValid = seq+1, true
			r.Stats.Late.Add(1)
			return false
		}
		// two in a row: the sender restarted its sequence
		r.badValid = false
		r.flush()
		r.next, r.highest = seq, seq
		r.lost++ // not counted as lost: tells the caller to resynchronise
		r.Stats.Resyncs.Add(1)
		d = 0
	case d < 0:
		r.Stats.Late.Add(1)
		return false
	case d >= r.Window:
		// no room: give up on everything missing before the window that ends at seq
		r.flush()
		r.addLost(int(int16(seq - r.next)))
		r.next = seq
		d = 0
	}
	r.badValid = false
	s := &r.ring[seq&r.mask]
	if s.used {
		r.Stats.Duplicates.Add(1)
		return false
	}
	*s = slot[T]{v: v, seq: seq, used: true}
	r.count++
	if int16(seq-r.highest) > 0 {
		r.highest = seq
	} else if seq != r.highest {
		r.Stats.Reordered.Add(1)
	}
	if d > 0 && r.gapSince.IsZero() {
		r.gapSince = now
	}
	return true
}

// Pop returns the next packet in order, if one is ready at now. lost is the number of packets
// given up just before it (the caller resynchronises its depacketizer when it is not zero).
func (r *Reorderer[T]) Pop(now time.Time) (v T, lost int, ok bool) {
	if r.outHead < len(r.out) {
		it := r.out[r.outHead]
		r.out[r.outHead] = outItem[T]{}
		r.outHead++
		if r.outHead == len(r.out) {
			r.out, r.outHead = r.out[:0], 0
		}
		return it.v, it.lost, true
	}
	if r.count == 0 {
		return v, 0, false
	}
	s := &r.ring[r.next&r.mask]
	if !s.used || s.seq != r.next {
		if r.gapSince.IsZero() || now.Sub(r.gapSince) < r.MaxDelay {
			return v, 0, false
		}
		// waited long enough: skip to the first packet held
		for i := 1; i < len(r.ring); i++ {
			if t := &r.ring[(r.next+uint16(i))&r.mask]; t.used {
				r.addLost(int(t.seq - r.next))
				r.next = t.seq
				s = t
				break
			}
		}
	}
	v, lost = s.v, r.lost
	*s = slot[T]{}
	r.count--
	r.lost = 0
	r.next++
	r.gapSince = time.Time{}
	if r.count > 0 && !r.ring[r.next&r.mask].used {
		r.gapSince = now
	}
	return v, lost, true
}

// Deadline returns when the packet waited for will be given up, ok false when none is waited for.
func (r *Reorderer[T]) Deadline() (t time.Time, ok bool) {
	if r.outHead < len(r.out) || r.count == 0 || r.gapSince.IsZero() {
		return time.Time{}, false
	}
	return r.gapSince.Add(r.MaxDelay), true
}

// Drain empties the reorderer, handing each held packet to recycle, and forgets the sequence
// state: the next Push starts a new run.
func (r *Reorderer[T]) Drain(recycle func(T)) {
	for i := r.outHead; i < len(r.out); i++ {
		if recycle != nil {
			recycle(r.out[i].v)
		}
		r.out[i] = outItem[T]{}
	}
	r.out, r.outHead = r.out[:0], 0
	for i := range r.ring {
		if r.ring[i].used && recycle != nil {
			recycle(r.ring[i].v)
		}
		r.ring[i] = slot[T]{}
	}
	r.count, r.lost, r.started, r.badValid = 0, 0, false, false
	r.gapSince = time.Time{}
}

// flush moves every held packet to the output list in order, counting the gaps as lost.
func (r *Reorderer[T]) flush() {
	for r.count > 0 {
		s := &r.ring[r.next&r.mask]
		if s.used && s.seq == r.next {
			r.out = append(r.out, outItem[T]{v: s.v, lost: r.lost})
			*s = slot[T]{}
			r.count--
			r.lost = 0
		} else {
			r.addLost(1)
		}
		r.next++
	}
	r.gapSince = time.Time{}
}

func (r *Reorderer[T]) addLost(n int) {
	if n <= 0 {
		return
	}
	r.lost += n
	r.Stats.Lost.Add(uint64(n))
}
