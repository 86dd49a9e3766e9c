package outbox

import (
	"os"
	"time"
)

// expire drops the segments whose newest record is older than MaxAge, sealing the active
// segment if it is one, and schedules the next expiry.
func (o *Outbox) expire(now time.Time) {
	if o.MaxAge <= 0 {
		return
	}
	cutoff := now.Add(-o.MaxAge).UnixNano()
	for len(o.segs) > 0 {
		s := o.segs[0]
		if s.count() > 0 && s.lastTime >= cutoff {
			break
		}
		if s.count() == 0 && s == o.active {
			break
		}
		if s == o.active {
			o.seal(s) // a sync error is moot: the segment is dropped
		}
		o.drop(s, ReasonAge, now)
	}
	o.scheduleExpire(now)
}

// scheduleExpire sets the age timer to the oldest segment's expiry.
func (o *Outbox) scheduleExpire(now time.Time) {
	if len(o.segs) == 0 || o.segs[0].count() == 0 {
		o.ageDeadline = time.Time{}
		o.ageTimer.Stop()
		return
	}
	deadline := time.Unix(0, o.segs[0].lastTime).Add(o.MaxAge)
	if !deadline.Equal(o.ageDeadline) {
		o.ageDeadline = deadline
		o.ageTimer.Reset(max(deadline.Sub(now), 0) + time.Millisecond)
	}
}

func (o *Outbox) backgroundExpire() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.closed {
		o.ageDeadline = time.Time{}
		o.expire(o.now())
	}
}

// makeRoom drops the oldest sealed segments until size more bytes fit under MaxBytes.
func (o *Outbox) makeRoom(size int64, now time.Time) {
	for o.bytes+size > o.MaxBytes && len(o.segs) > 0 && o.segs[0] != o.active {
		o.drop(o.segs[0], ReasonFull, now)
	}
}

// drop removes a sealed segment for a reason. For each consumer, the records of s it had
// neither acknowledged nor read are counted as dropped (Read skips them); those it had read and
// not acknowledged stay the reader's, pending until acknowledged (see Consumer.hold). The
// outbox-wide count is the most records any one consumer lost (all of them with no consumer).
func (o *Outbox) drop(s *segment, r Reason, now time.Time) {
	var lost uint64
	if len(o.consumers) == 0 {
		lost = s.count()
	}
	for _, c := range o.consumers {
		if c.rseq > c.acked+1 {
			if first, last := max(c.acked+1, s.base), min(c.rseq-1, s.last); first <= last {
				c.hold(s, first, last, r)
			}
		}
		if seen := c.seen(); seen < s.last {
			n := s.last - max(seen, s.base-1)
			c.dropped[r] += n
			lost = max(lost, n)
		}
	}
	o.remove(s)
	o.countDrop(r, lost, now)
}

// reject counts a record refused by Append.
func (o *Outbox) reject(now time.Time) {
	for _, c := range o.consumers {
		c.dropped[ReasonRejected]++
	}
	o.countDrop(ReasonRejected, 1, now)
}

// countDrop counts n dropped records and logs the first drop of an episode.
func (o *Outbox) countDrop(r Reason, n uint64, now time.Time) {
	if n == 0 {
		return
	}
	o.stats.Dropped[r] += n
	if last := o.lastDrop[r]; last.IsZero() || now.Sub(last) > dropEpisodeGap {
		o.Logger.Warn("outbox: dropping records", "dir", o.Dir, "reason", r.String(),
			"records", n, "total", o.stats.Dropped[r])
	}
	o.lastDrop[r] = now
}

// collect deletes the sealed segments every known consumer has persisted a cursor past.
func (o *Outbox) collect() {
	if len(o.consumers) == 0 {
		return
	}
	var done uint64 = 1<<64 - 1
	for _, c := range o.consumers {
		done = min(done, c.persisted)
	}
	for len(o.segs) > 0 {
		s := o.segs[0]
		if s == o.active || s.last > done {
			return
		}
		o.remove(s)
	}
}

// remove deletes a segment (the active one included) from the log and the directory.
func (o *Outbox) remove(s *segment) {
	for i, t := range o.segs {
		if t == s {
			o.segs = append(o.segs[:i], o.segs[i+1:]...)
			break
		}
	}
	if o.active == s {
		o.active = nil
	}
	o.bytes -= s.size
	s.removed = true
	os.Remove(s.path)
	if s.refs == 0 {
		s.f.Close()
	}
}
