package deliver

import (
	"context"
	"errors"
	"fmt"
	"github.com/vinfer/vinfer/internal/testutil"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vinfer/vinfer/outbox"
)

// fakePub records every event id it acknowledges; fail, when set, decides each call's result
// (records delivered, error) before anything is recorded.
type fakePub struct {
	mu    sync.Mutex
	seen  map[string]int
	calls int
	fail  func(call int, recs []outbox.Record) (int, error)
	gate  chan struct{} // when set, Publish waits for it to close
	in    chan struct{} // when set, signalled when Publish waits on gate
}

func (p *fakePub) Publish(ctx context.Context, recs []outbox.Record) (int, error) {
	if p.gate != nil {
		select {
		case p.in <- struct{}{}:
		default:
		}
		select {
		case <-p.gate:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls++
	n, err := len(recs), error(nil)
	if p.fail != nil {
		n, err = p.fail(p.calls, recs)
	}
	for _, r := range recs[:n] {
		p.seen[eventID(r)]++
	}
	return n, err
}

func (p *fakePub) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.seen)
}

// checkOnce checks that ids ev-1..ev-n were each seen exactly once.
func (p *fakePub) checkOnce(t *testing.T, name string, n int) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := 1; i <= n; i++ {
		if c := p.seen[fmt.Sprintf("ev-%d", i)]; c != 1 {
			t.Fatalf("%s: event ev-%d delivered %d times", name, i, c)
		}
	}
	if len(p.seen) != n {
		t.Fatalf("%s: %d distinct events, want %d", name, len(p.seen), n)
	}
}

func event(i int) []byte { return fmt.Appendf(nil, `{"id":"ev-%d","stream":"cam"}`, i) }

func eventID(r outbox.Record) string {
	var id string
	fmt.Sscanf(string(r.Data), `{"id":"%s`, &id)
	return strings.TrimSuffix(strings.Split(id, `"`)[0], `"`)
}

func newOutbox(t testing.TB, set func(o *outbox.Outbox)) *outbox.Outbox {
	t.Helper()
	o := &outbox.Outbox{Dir: t.TempDir(), Fsync: outbox.FsyncNever, CursorEvery: time.Millisecond,
		Logger: slog.New(slog.DiscardHandler)}
	if set != nil {
		set(o)
	}
	if err := o.Init(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { o.Close() })
	return o
}

func newWorker(t testing.TB, o *outbox.Outbox, name string, p Publisher, logs *testutil.LogBuffer) *Worker {
	t.Helper()
	w := &Worker{Name: name, Outbox: o, Publisher: p, MaxBatch: 64, MinBackoff: time.Millisecond,
		MaxBackoff: 10 * time.Millisecond}
	if logs != nil {
		w.Logger = slog.New(slog.NewTextHandler(logs, nil))
	} else {
		w.Logger = slog.New(slog.DiscardHandler)
	}
	if err := w.Init(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w
}

// eventually waits for cond, checked every millisecond, failing after a minute.
func eventually(t testing.TB, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within a minute")
		}
		time.Sleep(time.Millisecond)
	}
}

// TestFlakySink: one sink fails for its first 30 calls, another delivers half of each batch
// then fails every other call, a third is healthy. Every event reaches each sink exactly once
// (no crash), with one down line and one up line for the flaky sink.
func TestFlakySink(t *testing.T) {
	const n = 3000
	o := newOutbox(t, nil)
	logs := &testutil.LogBuffer{}
	flaky := &fakePub{seen: map[string]int{}, fail: func(call int, recs []outbox.Record) (int, error) {
		if call <= 30 {
			return 0, errors.New("connection refused")
		}
		return len(recs), nil
	}}
	partial := &fakePub{seen: map[string]int{}, fail: func(call int, recs []outbox.Record) (int, error) {
		if call%2 == 0 && len(recs) > 1 {
			return len(recs) / 2, errors.New("broker: partition leader moved")
		}
		return len(recs), nil
	}}
	healthy := &fakePub{seen: map[string]int{}}
	wf := newWorker(t, o, "flaky", flaky, logs)
	wp := newWorker(t, o, "partial", partial, nil)
	wh := newWorker(t, o, "healthy", healthy, nil)
	for i := 1; i <= n; i++ {
		if _, err := o.Append(event(i)); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, func() bool { return flaky.count() == n && partial.count() == n && healthy.count() == n })
	flaky.checkOnce(t, "flaky", n)
	partial.checkOnce(t, "partial", n)
	healthy.checkOnce(t, "healthy", n)

	eventually(t, func() bool { return wf.Stats().Depth == 0 && wp.Stats().Depth == 0 && wh.Stats().Depth == 0 })
	sf, sp, sh := wf.Stats(), wp.Stats(), wh.Stats()
	if sf.Delivered != n || sf.Failed != 30 || sf.Retried == 0 || !sf.Up || sf.Dropped != [outbox.NumReasons]uint64{} {
		t.Fatalf("flaky: %+v", sf)
	}
	if sp.Delivered != n || sp.Failed == 0 || sp.Retried == 0 {
		t.Fatalf("partial: %+v", sp)
	}
	if sh.Delivered != n || sh.Failed != 0 || sh.Retried != 0 {
		t.Fatalf("healthy: %+v", sh)
	}
	if d, u := logs.Count("sink down"), logs.Count("sink up again"); d != 1 || u != 1 {
		t.Fatalf("%d down and %d up lines, want 1 and 1:\n%s", d, u, logs.String())
	}
}

// TestSlowSink: a sink stuck in Publish neither slows Append nor another sink; its depth grows
// and drains once it recovers.
func TestSlowSink(t *testing.T) {
	const n = 2000
	o := newOutbox(t, nil)
	slow := &fakePub{seen: map[string]int{}, gate: make(chan struct{}), in: make(chan struct{}, 1)}
	fast := &fakePub{seen: map[string]int{}}
	ws := newWorker(t, o, "slow", slow, nil)
	newWorker(t, o, "fast", fast, nil)
	o.Append(event(1))
	<-slow.in // slow is blocked in Publish with event 1
	start := time.Now()
	for i := 2; i <= n; i++ {
		if _, err := o.Append(event(i)); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d appends in %v with a sink blocked", n-1, time.Since(start))
	eventually(t, func() bool { return fast.count() == n })
	if st := ws.Stats(); st.Depth != n || st.Delivered != 0 || st.DepthBytes == 0 {
		t.Fatalf("slow sink while blocked: %+v", st)
	}
	eventually(t, func() bool { return ws.Stats().OldestAge > 0 })
	close(slow.gate)
	eventually(t, func() bool { return slow.count() == n })
	slow.checkOnce(t, "slow", n)
	eventually(t, func() bool { return ws.Stats().Depth == 0 })
}

// TestSinkDownOutboxFull: while a sink is down the bounded outbox drops its oldest records,
// among them the segment of the batch the Worker holds; the accounting is exact throughout
// (delivered + dropped + depth = appended: the held batch is pending, not dropped) and after
// recovery nothing is delivered twice.
func TestSinkDownOutboxFull(t *testing.T) {
	const n = 2000
	o := newOutbox(t, func(o *outbox.Outbox) { o.SegmentSize = 4096; o.MaxBytes = 16384 })
	var mu sync.Mutex
	up := false
	p := &fakePub{seen: map[string]int{}, fail: func(_ int, recs []outbox.Record) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		if !up {
			return 0, errors.New("down")
		}
		return len(recs), nil
	}}
	w := newWorker(t, o, "sink", p, nil)
	o.Append(event(1))
	eventually(t, func() bool { return w.Stats().Failed > 0 }) // event 1 is in the Worker's hands
	for i := 2; i <= n; i++ {
		o.Append(event(i))
	}
	check := func(when string, st Stats) {
		t.Helper()
		if st.Dropped[outbox.ReasonFull] == 0 || st.Delivered+st.Dropped[outbox.ReasonFull]+st.Depth != n {
			t.Fatalf("%s: delivered + dropped + depth != %d: %+v", when, n, st)
		}
	}
	check("down", w.Stats())
	mu.Lock()
	up = true
	mu.Unlock()
	eventually(t, func() bool { st := w.Stats(); return st.Depth == 0 && st.Delivered == uint64(p.count()) })
	st := w.Stats()
	check("up", st)
	p.mu.Lock()
	defer p.mu.Unlock()
	for id, c := range p.seen {
		if c != 1 {
			t.Fatalf("%s delivered %d times", id, c)
		}
	}
	// The held batch (from event 1) and the newest event were delivered.
	if p.seen["ev-1"] != 1 || p.seen[fmt.Sprintf("ev-%d", n)] != 1 {
		t.Fatal("held batch or newest event not delivered")
	}
}

func TestUndeliverable(t *testing.T) {
	o := newOutbox(t, nil)
	p := &fakePub{seen: map[string]int{}, fail: func(_ int, recs []outbox.Record) (int, error) {
		for i, r := range recs {
			if eventID(r) == "ev-5" {
				return i, fmt.Errorf("%w: payload too large", ErrUndeliverable)
			}
		}
		return len(recs), nil
	}}
	logs := &testutil.LogBuffer{}
	w := newWorker(t, o, "sink", p, logs)
	for i := 1; i <= 10; i++ {
		o.Append(event(i))
	}
	eventually(t, func() bool { return w.Stats().Depth == 0 })
	st := w.Stats()
	if st.Delivered != 9 || st.Undeliverable != 1 || st.Failed != 0 || p.count() != 9 || logs.Count("record skipped") != 1 {
		t.Fatalf("%+v, %d delivered", st, p.count())
	}
}

// TestRestart: a Worker closed mid-stream resumes from its cursor in a new outbox instance.
func TestRestart(t *testing.T) {
	dir := t.TempDir()
	open := func() *outbox.Outbox {
		o := &outbox.Outbox{Dir: dir, Fsync: outbox.FsyncNever, Logger: slog.New(slog.DiscardHandler)}
		if err := o.Init(); err != nil {
			t.Fatal(err)
		}
		return o
	}
	o := open()
	p := &fakePub{seen: map[string]int{}}
	w := newWorker(t, o, "sink", p, nil)
	for i := 1; i <= 500; i++ {
		o.Append(event(i))
	}
	eventually(t, func() bool { return p.count() == 500 })
	w.Close()
	for i := 501; i <= 1000; i++ {
		o.Append(event(i))
	}
	o.Close()
	o = open()
	defer o.Close()
	newWorker(t, o, "sink", p, nil)
	eventually(t, func() bool { return p.count() == 1000 })
	p.checkOnce(t, "sink", 1000)
}
