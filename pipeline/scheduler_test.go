package pipeline

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vinfer/vinfer/internal/testutil"
)

// schedFixture is a scheduler with one queue per entry of counts, each holding counts[q] items
// (queue 0 is "a"). The queues are deep enough to hold them all.
func schedFixture(t *testing.T, maxBatch int, delay time.Duration, counts ...int) (*scheduler, []*queue) {
	t.Helper()
	s := newScheduler(maxBatch, delay)
	qs := make([]*queue, len(counts))
	for q, n := range counts {
		qs[q] = newQueue(max(n, 1)+8, s.ready)
		s.add(qs[q])
		for i := range n {
			if _, _, ok := qs[q].push(context.Background(), mk(q, i), Block); !ok {
				t.Fatal("not queued")
			}
		}
	}
	return s, qs
}

// collectAsync runs collect on its own goroutine, as the inference worker does; the result
// arrives on the returned channel.
func collectAsync(s *scheduler, ctx context.Context) <-chan []item {
	out := make(chan []item, 1)
	go func() {
		timer := time.NewTimer(time.Hour)
		timer.Stop()
		out <- s.collect(ctx, nil, timer)
	}()
	return out
}

func collectNow(t *testing.T, s *scheduler) string {
	t.Helper()
	return labels(testutil.Within(t, wait, "a batch", collectAsync(s, context.Background())))
}

// TestSchedulerBatches: batches of up to maxBatch items, taken round-robin (one item per
// queue per round) starting one queue further each batch, so a flooded queue neither
// starves the others within a batch nor across batches. Every case has its items queued
// before collecting, and either a delay of 0 (whatever is there goes at once) or only full
// batches, so the batches are exact.
func TestSchedulerBatches(t *testing.T) {
	cases := []struct {
		name     string
		maxBatch int
		delay    time.Duration
		counts   []int // items per queue
		want     []string
	}{
		{"one queue, batches of maxBatch", 3, 0, []int{7}, []string{"a0 a1 a2", "a3 a4 a5", "a6"}},
		{"delay 0 releases a single item at once", 8, 0, []int{1}, []string{"a0"}},
		{"maxBatch 1 alternates", 1, 0, []int{2, 2}, []string{"a0", "b0", "a1", "b1"}},
		{"maxBatch below 1 is 1", 0, 0, []int{2}, []string{"a0", "a1"}},
		{"round-robin within a batch", 4, 0, []int{10, 2, 1},
			[]string{"a0 b0 c0 a1", "b1 a2 a3 a4", "a5 a6 a7 a8", "a9"}},
		{"a flooded queue does not starve the others across batches", 2, 0, []int{6, 2, 2},
			[]string{"a0 b0", "b1 c0", "c1 a1", "a2 a3", "a4 a5"}},
		{"full batches go at once despite a long delay", 3, time.Hour, []int{2, 4},
			[]string{"a0 b0 a1", "b1 b2 b3"}},
		{"an empty queue is skipped", 3, time.Hour, []int{0, 3, 0}, []string{"b0 b1 b2"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, qs := schedFixture(t, c.maxBatch, c.delay, c.counts...)
			for i, want := range c.want {
				if got := collectNow(t, s); got != want {
					t.Fatalf("batch %d: %q, want %q", i, got, want)
				}
			}
			for q, x := range qs {
				if x.len() != 0 {
					t.Fatalf("queue %d still holds %d items", q, x.len())
				}
			}
		})
	}
}

// TestSchedulerMaxDelay: a partial batch waits up to maxDelay for more items, and those that
// come meanwhile join it. The test waits on collect's result, never on a clock: with a long
// delay, a batch that is released can only have been completed by the items the test added.
func TestSchedulerMaxDelay(t *testing.T) {
	t.Run("a partial batch is released after the delay", func(t *testing.T) {
		s, _ := schedFixture(t, 4, 5*time.Millisecond, 1, 1)
		got := labels(testutil.Within(t, wait, "the partial batch", collectAsync(s, context.Background())))
		if got != "a0 b0" {
			t.Fatalf("batch %q", got)
		}
	})
	t.Run("items arriving within the delay join the batch", func(t *testing.T) {
		s, qs := schedFixture(t, 3, time.Hour, 1, 0)
		ctx, blocked := testutil.Blocking(context.Background())
		out := collectAsync(s, ctx)
		testutil.Within(t, wait, "collect to wait for more items", blocked)
		select {
		case b := <-out:
			t.Fatalf("a partial batch %q was released long before its delay", labels(b))
		default:
		}
		qs[0].push(context.Background(), mk(0, 1), Block)
		qs[1].push(context.Background(), mk(1, 0), Block)
		b := testutil.Within(t, wait, "the completed batch", out)
		slices.SortFunc(b, func(x, y item) int { return int(x.index - y.index) })
		if got := labels(b); got != "a0 a1 b0" {
			t.Fatalf("batch %q", got)
		}
	})
	t.Run("collect waits for a first item", func(t *testing.T) {
		s, qs := schedFixture(t, 2, 0, 0)
		ctx, blocked := testutil.Blocking(context.Background())
		out := collectAsync(s, ctx)
		testutil.Within(t, wait, "collect to wait for an item", blocked)
		select {
		case b := <-out:
			t.Fatalf("collect returned %q from empty queues", labels(b))
		default:
		}
		qs[0].push(context.Background(), mk(0, 0), Block)
		if got := labels(testutil.Within(t, wait, "the batch", out)); got != "a0" {
			t.Fatalf("batch %q", got)
		}
	})
}

// TestSchedulerDropOldest: a live stream's queue that inference falls behind keeps its newest
// items, and those are what the next batch gets.
func TestSchedulerDropOldest(t *testing.T) {
	s, qs := schedFixture(t, 4, 0, 0, 2)
	live := newQueue(2, s.ready)
	s.add(live)
	var dropped []string
	for n := range 5 {
		if d, wasDropped, ok := live.push(context.Background(), mk(2, n), DropOldest); !ok {
			t.Fatal("not queued")
		} else if wasDropped {
			dropped = append(dropped, label(d))
		}
	}
	if got := strings.Join(dropped, " "); got != "c0 c1 c2" {
		t.Fatalf("dropped %q", got)
	}
	if got := collectNow(t, s); got != "b0 c3 b1 c4" {
		t.Fatalf("batch %q", got)
	}
	if qs[1].len() != 0 || live.len() != 0 {
		t.Fatal("items left")
	}
}

// TestSchedulerShutdown: collect returns nil once its context ended and nothing is queued; a
// batch it was filling is still returned (the worker infers it, then stops).
func TestSchedulerShutdown(t *testing.T) {
	cases := []struct {
		name   string
		counts []int
		delay  time.Duration
		want   string // the batch returned when the context ends ("" for nil)
	}{
		{"no queues", nil, 0, ""},
		{"empty queues", []int{0, 0}, time.Hour, ""},
		{"a partial batch", []int{1, 0}, time.Hour, "a0"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Run("ended before", func(t *testing.T) {
				s, _ := schedFixture(t, 4, c.delay, c.counts...)
				ctx, cancel := context.WithCancel(context.Background())
				cancel()
				b := testutil.Within(t, wait, "collect to return", collectAsync(s, ctx))
				if got := labels(b); got != c.want || (c.want == "" && b != nil) {
					t.Fatalf("batch %q (nil %v), want %q", got, b == nil, c.want)
				}
			})
			t.Run("ended while waiting", func(t *testing.T) {
				s, _ := schedFixture(t, 4, c.delay, c.counts...)
				parent, cancel := context.WithCancel(context.Background())
				defer cancel()
				ctx, blocked := testutil.Blocking(parent)
				out := collectAsync(s, ctx)
				testutil.Within(t, wait, "collect to wait", blocked)
				cancel()
				b := testutil.Within(t, wait, "collect to return", out)
				if got := labels(b); got != c.want || (c.want == "" && b != nil) {
					t.Fatalf("batch %q (nil %v), want %q", got, b == nil, c.want)
				}
			})
		})
	}
}

// TestSchedulerRemove: a removed queue is no longer served, even when it gets new items, and
// keeps its items for the stream to recycle; round-robin goes on over the others.
func TestSchedulerRemove(t *testing.T) {
	s, qs := schedFixture(t, 2, 0, 2, 3, 2)
	if got := collectNow(t, s); got != "a0 b0" {
		t.Fatalf("batch %q", got)
	}
	s.remove(qs[1])
	s.remove(qs[1]) // twice: no effect
	s.remove(newQueue(1, s.ready))
	qs[1].push(context.Background(), mk(1, 3), Block)
	for _, want := range []string{"c0 a1", "c1"} {
		if got := collectNow(t, s); got != want {
			t.Fatalf("batch %q, want %q", got, want)
		}
	}
	if got := labels(qs[1].close()); got != "b1 b2 b3" {
		t.Fatalf("the removed queue holds %q", got)
	}
	s.remove(qs[0])
	s.remove(qs[2])
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if b := testutil.Within(t, wait, "collect over no queues", collectAsync(s, ctx)); b != nil {
		t.Fatalf("batch %q", labels(b))
	}
}

// TestSchedulerWithStreams runs the scheduler as the pipeline does: streams push concurrently
// (files block on a full queue, a live stream drops its oldest item) while a fake engine
// collects batches, until every stream is done; then the engine's context ends and collect
// returns nil. Every file item arrives exactly once, each stream's items arrive in order, no
// batch exceeds maxBatch, and the live stream's last item is never lost.
func TestSchedulerWithStreams(t *testing.T) {
	const (
		maxBatch = 4
		perFile  = 300
		perLive  = 300
		files    = 3
	)
	s := newScheduler(maxBatch, time.Millisecond)
	qs := make([]*queue, files+1)
	for i := range qs {
		qs[i] = newQueue(2, s.ready)
		s.add(qs[i])
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	var got [files + 1][]int
	var oversized []int
	engineDone := make(chan struct{})
	go func() { // the fake engine
		defer close(engineDone)
		timer := time.NewTimer(time.Hour)
		timer.Stop()
		var batch []item
		for {
			batch = s.collect(ctx, batch, timer)
			if batch == nil {
				return
			}
			if len(batch) == 0 || len(batch) > maxBatch {
				oversized = append(oversized, len(batch))
			}
			for _, it := range batch {
				got[it.index/1000] = append(got[it.index/1000], int(it.index%1000))
			}
		}
	}()

	var producers sync.WaitGroup
	var liveDropped int
	for q := range qs {
		producers.Go(func() {
			if q == files {
				for n := range perLive {
					if _, wasDropped, _ := qs[q].push(ctx, mk(q, n), DropOldest); wasDropped {
						liveDropped++
					}
				}
				return
			}
			for n := range perFile {
				if _, _, ok := qs[q].push(ctx, mk(q, n), Block); !ok {
					t.Errorf("stream %d: item %d not queued", q, n)
					return
				}
			}
		})
	}
	producers.Wait()
	testutil.Eventually(t, wait, "the engine to take every queued item", func() bool {
		for _, q := range qs {
			if q.len() > 0 {
				return false
			}
		}
		return true
	})
	cancel()
	testutil.Within(t, wait, "the engine to stop", engineDone)

	if len(oversized) > 0 {
		t.Fatalf("batches of sizes %v", oversized)
	}
	for q := range files {
		if len(got[q]) != perFile {
			t.Fatalf("stream %d: %d of %d items", q, len(got[q]), perFile)
		}
		for n, x := range got[q] {
			if x != n {
				t.Fatalf("stream %d: item %d at position %d", q, x, n)
			}
		}
	}
	l := got[files]
	if !slices.IsSorted(l) || len(l)+liveDropped != perLive || l[len(l)-1] != perLive-1 {
		t.Fatalf("live stream: %d items, %d dropped, last %v", len(l), liveDropped, l[len(l)-1:])
	}
}

// TestSchedulerLiveFirst: when inference is short, the queues of live streams are served
// before the background queues of unpaced files (which wait, losing nothing), round-robin
// within each class; files take what room is left in a batch.
func TestSchedulerLiveFirst(t *testing.T) {
	cases := []struct {
		name       string
		maxBatch   int
		counts     []int
		background []bool // per queue: an unpaced file
		want       []string
	}{
		{"one at a time: the live stream first", 1, []int{2, 3}, []bool{false, true},
			[]string{"a0", "a1", "b0", "b1", "b2"}},
		{"a file queued first still waits", 1, []int{3, 2}, []bool{true, false},
			[]string{"b0", "b1", "a0", "a1", "a2"}},
		{"files fill the rest of a batch", 4, []int{1, 5, 1}, []bool{false, true, false},
			[]string{"a0 c0 b0 b1", "b2 b3 b4"}},
		{"round-robin within each class", 2, []int{2, 2, 3}, []bool{true, true, false},
			[]string{"c0 c1", "c2 b0", "a0 b1", "a1"}},
		{"only files: round-robin as before", 3, []int{3, 1}, []bool{true, true},
			[]string{"a0 b0 a1", "a2"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, qs := schedFixture(t, c.maxBatch, 0, c.counts...)
			for q, bg := range c.background {
				qs[q].background = bg
			}
			for i, want := range c.want {
				if got := collectNow(t, s); got != want {
					t.Fatalf("batch %d: %q, want %q", i, got, want)
				}
			}
		})
	}
}
