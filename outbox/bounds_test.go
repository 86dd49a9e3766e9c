package outbox

import (
	"errors"
	"sync"
	"testing"
	"time"
)

func TestDropOldest(t *testing.T) {
	dir := t.TempDir()
	o, logs := open(t, dir, func(o *Outbox) { o.SegmentSize = 4096; o.MaxBytes = 16384 })
	slow, _ := o.Consumer("slow")
	fast, _ := o.Consumer("fast")
	const n = 1000
	for range n {
		seq, err := o.Append(payload(o.Stats().NextSeq))
		if err != nil {
			t.Fatal(err)
		}
		// fast keeps up: it loses nothing.
		readAll(t, fast, 1)
		fast.Ack(seq)
		if b := o.Stats().Bytes; b > o.MaxBytes {
			t.Fatalf("%d bytes over the bound", b)
		}
	}
	st, ss, fs := o.Stats(), slow.Stats(), fast.Stats()
	if st.Dropped[ReasonFull] == 0 || ss.Dropped[ReasonFull] != st.Dropped[ReasonFull] || fs.Dropped[ReasonFull] != 0 {
		t.Fatalf("dropped: outbox %v, slow %v, fast %v", st.Dropped, ss.Dropped, fs.Dropped)
	}
	if got := logs.Count("dropping records"); got != 1 {
		t.Fatalf("%d drop log lines, want 1 per episode", got)
	}
	// slow reads what is left, contiguous up to the last record: read + dropped = appended.
	recs := readAll(t, slow, int(ss.Records))
	if recs[0].Seq != st.FirstSeq || recs[len(recs)-1].Seq != n ||
		uint64(len(recs))+ss.Dropped[ReasonFull] != n {
		t.Fatalf("slow read %d..%d (%d), dropped %d", recs[0].Seq, recs[len(recs)-1].Seq, len(recs), ss.Dropped[ReasonFull])
	}
	// Segment files on disk match the accounting.
	if got := len(segFiles(t, dir)); got != st.Segments {
		t.Fatalf("%d files, %d segments", got, st.Segments)
	}
}

func TestReject(t *testing.T) {
	o, logs := open(t, t.TempDir(), func(o *Outbox) {
		o.SegmentSize = 4096
		o.MaxBytes = 16384
		o.Full = Reject
		o.CursorEvery = -1
	})
	c, _ := o.Consumer("c")
	var appended uint64
	for {
		_, err := o.Append(payload(appended + 1))
		if errors.Is(err, ErrFull) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		appended++
	}
	for range 10 {
		if _, err := o.Append(payload(appended + 1)); !errors.Is(err, ErrFull) {
			t.Fatalf("append when full: %v", err)
		}
	}
	st := o.Stats()
	if st.Dropped[ReasonRejected] != 11 || c.Stats().Dropped[ReasonRejected] != 11 || st.Dropped[ReasonFull] != 0 {
		t.Fatalf("dropped %v", st.Dropped)
	}
	if logs.Count("dropping records") != 1 {
		t.Fatal("want one drop log line")
	}
	// Nothing undelivered was lost; acknowledging makes room again.
	recs := readAll(t, c, int(appended))
	if recs[len(recs)-1].Seq != appended {
		t.Fatal("records lost")
	}
	c.Ack(appended)
	if _, err := o.Append(payload(appended + 1)); err != nil {
		t.Fatalf("after ack: %v", err)
	}
}

// clock is a settable fake clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func TestMaxAge(t *testing.T) {
	clk := &clock{t: time.Unix(1e9, 0)}
	o, logs := open(t, t.TempDir(), func(o *Outbox) {
		o.SegmentSize = 4096
		o.MaxBytes = 1 << 20
		o.MaxAge = time.Minute
		o.now = clk.now
	})
	c, _ := o.Consumer("c")
	appendN(t, o, 200) // at t0, several segments
	clk.add(50 * time.Second)
	appendN(t, o, 200) // at t0+50s
	clk.add(20 * time.Second)
	appendN(t, o, 1) // at t0+70s: the t0 segments expire
	st, cs := o.Stats(), c.Stats()
	if st.Dropped[ReasonAge] == 0 || st.Dropped[ReasonAge] > 200 || cs.Dropped[ReasonAge] != st.Dropped[ReasonAge] {
		t.Fatalf("after 70 s: dropped %v, consumer %v", st.Dropped, cs.Dropped)
	}
	if age := clk.now().Sub(cs.Oldest); age > 70*time.Second {
		t.Fatalf("oldest undelivered is %v old", age)
	}
	recs := readAll(t, c, int(cs.Records))
	if uint64(len(recs))+cs.Dropped[ReasonAge] != 401 {
		t.Fatalf("read %d + dropped %d != 401", len(recs), cs.Dropped[ReasonAge])
	}
	// Everything older than MaxAge goes, the active segment included; the records c has read
	// are not counted as dropped.
	clk.add(2 * time.Minute)
	appendN(t, o, 1)
	if st := o.Stats(); st.Records != 1 || st.Dropped[ReasonAge] != cs.Dropped[ReasonAge] {
		t.Fatalf("after 3 min: %+v", st)
	}
	// One line: the second expiry lost nothing unread.
	if logs.Count("dropping records") != 1 {
		t.Fatalf("drop log lines: %d", logs.Count("dropping records"))
	}
}

func TestMaxAgeTimer(t *testing.T) {
	// Without appends the age timer expires records by itself.
	o, _ := open(t, t.TempDir(), func(o *Outbox) { o.MaxAge = 20 * time.Millisecond })
	appendN(t, o, 10)
	eventually(t, func() bool { return o.Stats().Records == 0 })
	if d := o.Stats().Dropped[ReasonAge]; d != 10 {
		t.Fatalf("dropped %d", d)
	}
}

func TestDropEpisodes(t *testing.T) {
	clk := &clock{t: time.Unix(1e9, 0)}
	o, logs := open(t, t.TempDir(), func(o *Outbox) { o.SegmentSize = 4096; o.MaxBytes = 16384; o.now = clk.now })
	o.Consumer("never-reads")
	appendN(t, o, 1000) // one episode, many drops
	first := o.Stats().Dropped[ReasonFull]
	clk.add(30 * time.Second)
	appendN(t, o, 500) // within a minute of the last drop: same episode
	if n := logs.Count("dropping records"); n != 1 || first == 0 {
		t.Fatalf("%d lines after the first episode", n)
	}
	clk.add(2 * time.Minute)
	appendN(t, o, 500) // a new episode
	if n := logs.Count("dropping records"); n != 2 {
		t.Fatalf("%d lines after the second episode", n)
	}
}

// checkAccounts checks that a consumer's acknowledged, dropped and pending records add up to
// what was appended.
func checkAccounts(t *testing.T, c *Consumer, acked, appended uint64) ConsumerStats {
	t.Helper()
	st := c.Stats()
	var dropped uint64
	for _, n := range st.Dropped {
		dropped += n
	}
	if acked+dropped+st.Records != appended {
		t.Fatalf("acknowledged %d + dropped %d + pending %d != appended %d (%+v)", acked, dropped,
			st.Records, appended, st)
	}
	return st
}

// dropFirst appends records until the oldest segment is dropped (DropOldest) and returns the
// last sequence number it held.
func dropFirst(t *testing.T, o *Outbox) uint64 {
	t.Helper()
	first := o.FirstSeq()
	for o.FirstSeq() == first {
		appendN(t, o, 1)
	}
	return o.FirstSeq() - 1
}

// TestDropWhileReading: the segment a Read is reading is dropped between its file read and its
// return (driven by a hook at that point). The drop counted those records as not read, so Read
// must not hand them out: it goes on at the oldest retained record, and every record is either
// read or dropped, never both.
func TestDropWhileReading(t *testing.T) {
	o, _ := open(t, t.TempDir(), func(o *Outbox) { o.SegmentSize = 4096; o.MaxBytes = 16384 })
	c, _ := o.Consumer("c")
	appendN(t, o, 10)
	var last uint64
	o.readHook = func() {
		if last == 0 {
			last = dropFirst(t, o)
		}
	}
	recs := readN(t, c, 5)
	o.readHook = nil
	appended := o.Stats().NextSeq - 1
	if recs[0].Seq != last+1 {
		t.Fatalf("read %d..%d after segment ..%d was dropped under the read", recs[0].Seq,
			recs[len(recs)-1].Seq, last)
	}
	if st := checkAccounts(t, c, 0, appended); st.Dropped[ReasonFull] != last || st.Held != 0 {
		t.Fatalf("dropped %d, want %d (%+v)", st.Dropped[ReasonFull], last, st)
	}
	rest := readAll(t, c, int(appended-last-5))
	if err := c.Ack(rest[len(rest)-1].Seq); err != nil {
		t.Fatal(err)
	}
	if st := checkAccounts(t, c, appended-last, appended); st.Records != 0 {
		t.Fatalf("%+v", st)
	}
}

// TestDropHeld: records read and not acknowledged whose segment is dropped are pending (Held)
// until acknowledged (delivered, not dropped) or given up by Rewind or Close (then dropped).
func TestDropHeld(t *testing.T) {
	for _, end := range []string{"ack", "partial-ack", "rewind", "close"} {
		t.Run(end, func(t *testing.T) {
			o, _ := open(t, t.TempDir(), func(o *Outbox) { o.SegmentSize = 4096; o.MaxBytes = 16384 })
			c, _ := o.Consumer("c")
			appendN(t, o, 10)
			held := readAll(t, c, 5) // records 1..5, in the reader's hands
			last := dropFirst(t, o)
			appended := o.Stats().NextSeq - 1
			st := checkAccounts(t, c, 0, appended)
			if st.Held != 5 || st.Dropped[ReasonFull] != last-5 || !st.Oldest.Equal(held[0].Time) {
				t.Fatalf("segment ..%d dropped while 1..5 held: %+v", last, st)
			}
			var acked uint64
			switch end {
			case "ack":
				c.Ack(5)
				acked = 5
			case "partial-ack":
				c.Ack(3)
				acked = 3
				if st := checkAccounts(t, c, acked, appended); st.Held != 2 {
					t.Fatalf("after ack 3: %+v", st)
				}
				c.Ack(5)
				acked = 5
			case "rewind":
				c.Rewind()
			case "close":
				c.Close()
				var err error
				if c, err = o.Consumer("c"); err != nil {
					t.Fatal(err)
				}
			}
			st = checkAccounts(t, c, acked, appended)
			if want := last - acked; st.Held != 0 || st.Dropped[ReasonFull] != want {
				t.Fatalf("after %s: dropped %d, want %d (%+v)", end, st.Dropped[ReasonFull], want, st)
			}
			// The next read starts at the oldest retained record either way.
			if recs := readAll(t, c, 1); recs[0].Seq != last+1 {
				t.Fatalf("after %s: read %d, want %d", end, recs[0].Seq, last+1)
			}
		})
	}
}
