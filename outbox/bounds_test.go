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
