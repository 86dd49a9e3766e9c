package pipeline

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/vinfer/vinfer/internal/testutil"
)

// These tests drive queue and scheduler alone: items carry no stream (st is nil) and are told
// apart by index, which encodes the queue (thousands: 0 is "a", 1 is "b") and a sequence
// number within it.

// wait bounds every wait of these tests; only a broken queue or scheduler reaches it.
const wait = 30 * time.Second

func mk(q, n int) item { return item{index: int64(q*1000 + n)} }

func label(it item) string { return fmt.Sprintf("%c%d", 'a'+rune(it.index/1000), it.index%1000) }

func labels(items []item) string {
	s := make([]string, len(items))
	for i, it := range items {
		s[i] = label(it)
	}
	return strings.Join(s, " ")
}

// step is one operation on a queue with its expected outcome.
type step struct {
	name string
	do   func(q *queue) error // nil when the outcome is the expected one
}

// push queues a<n> with policy, expecting it queued and dropped ("" for none) displaced.
func push(n int, policy DropPolicy, dropped string) step {
	return step{fmt.Sprintf("push a%d %v", n, policy), func(q *queue) error {
		d, wasDropped, ok := q.push(context.Background(), mk(0, n), policy)
		if got := map[bool]string{true: label(d)}[wasDropped]; !ok || got != dropped {
			return fmt.Errorf("ok %v, dropped %q; want queued, dropped %q", ok, got, dropped)
		}
		return nil
	}}
}

// pushFails pushes a<n> with a context that has ended: a full Block queue or a closed queue
// refuses it.
func pushFails(n int, policy DropPolicy) step {
	return step{fmt.Sprintf("push a%d %v fails", n, policy), func(q *queue) error {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if d, wasDropped, ok := q.push(ctx, mk(0, n), policy); ok || wasDropped {
			return fmt.Errorf("ok %v, dropped %v %s", ok, wasDropped, label(d))
		}
		return nil
	}}
}

func pop(max int, want string) step {
	return step{fmt.Sprintf("pop %d", max), func(q *queue) error {
		if got := labels(q.pop(nil, max)); got != want {
			return fmt.Errorf("got %q, want %q", got, want)
		}
		return nil
	}}
}

func closeQueue(rest string) step {
	return step{"close", func(q *queue) error {
		if got := labels(q.close()); got != rest {
			return fmt.Errorf("close returned %q, want %q", got, rest)
		}
		return nil
	}}
}

func length(n int) step {
	return step{fmt.Sprintf("len %d", n), func(q *queue) error {
		if got := q.len(); got != n {
			return fmt.Errorf("len %d, want %d", got, n)
		}
		return nil
	}}
}

func TestQueue(t *testing.T) {
	cases := []struct {
		name  string
		depth int
		steps []step
	}{
		{"fifo", 3, []step{
			push(0, Block, ""), push(1, Block, ""), push(2, Block, ""), length(3),
			pop(10, "a0 a1 a2"), length(0), pop(10, ""),
		}},
		{"pop takes at most max", 4, []step{
			push(0, Block, ""), push(1, Block, ""), push(2, Block, ""),
			pop(2, "a0 a1"), pop(0, ""), pop(2, "a2"),
		}},
		{"ring wraps around", 3, []step{
			push(0, Block, ""), push(1, Block, ""), push(2, Block, ""), pop(2, "a0 a1"),
			push(3, Block, ""), push(4, Block, ""), length(3), pop(10, "a2 a3 a4"),
		}},
		{"bounded: Block refuses when full and its context ended", 2, []step{
			push(0, Block, ""), push(1, Block, ""), pushFails(2, Block), length(2), pop(10, "a0 a1"),
		}},
		{"DropOldest displaces the oldest", 2, []step{
			push(0, DropOldest, ""), push(1, DropOldest, ""), push(2, DropOldest, "a0"),
			push(3, DropOldest, "a1"), length(2), pop(10, "a2 a3"),
		}},
		{"DropOldest after wrapping", 3, []step{
			push(0, DropOldest, ""), push(1, DropOldest, ""), pop(1, "a0"), push(2, DropOldest, ""),
			push(3, DropOldest, ""), push(4, DropOldest, "a1"), push(5, DropOldest, "a2"), pop(10, "a3 a4 a5"),
		}},
		{"depth 1", 1, []step{
			push(0, DropOldest, ""), push(1, DropOldest, "a0"), pushFails(2, Block), pop(10, "a1"),
			push(3, Block, ""), pop(10, "a3"),
		}},
		{"close returns the rest in order, then refuses", 3, []step{
			push(0, Block, ""), push(1, Block, ""), pop(1, "a0"), push(2, Block, ""),
			closeQueue("a1 a2"), length(0), pushFails(3, Block), pushFails(4, DropOldest), closeQueue(""),
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			q := newQueue(c.depth, make(chan struct{}, 1))
			for i, s := range c.steps {
				if err := s.do(q); err != nil {
					t.Fatalf("step %d (%s): %v", i, s.name, err)
				}
			}
		})
	}
}

// TestQueueSignalsReady: every push that queues wakes the scheduler, one that displaces an
// item too.
func TestQueueSignalsReady(t *testing.T) {
	ready := make(chan struct{}, 1)
	q := newQueue(1, ready)
	for n, policy := range []DropPolicy{Block, DropOldest} {
		if _, _, ok := q.push(context.Background(), mk(0, n), policy); !ok {
			t.Fatal("not queued")
		}
		select {
		case <-ready:
		default:
			t.Fatalf("push %d (%v) did not signal ready", n, policy)
		}
	}
}

// TestQueueBlockedPush fills a queue, lets a Block push wait for room, and checks what ends
// the wait. The push's context reports when the push starts waiting on it (the queue is full),
// so each case acts on a push that is really blocked.
func TestQueueBlockedPush(t *testing.T) {
	cases := []struct {
		name     string
		wake     func(q *queue, cancel func()) string // returns the items it took out
		took     string
		queued   bool   // the push's result
		leftover string // the queue's items afterwards
	}{
		{"pop makes room", func(q *queue, _ func()) string { return labels(q.pop(nil, 1)) }, "a0", true, "a1 a2"},
		{"cancel", func(_ *queue, cancel func()) string { cancel(); return "" }, "", false, "a0 a1"},
		{"close", func(q *queue, _ func()) string { return labels(q.close()) }, "a0 a1", false, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			q := newQueue(2, make(chan struct{}, 1))
			for n := range 2 {
				q.push(context.Background(), mk(0, n), Block)
			}
			parent, cancel := context.WithCancel(context.Background())
			defer cancel()
			ctx, blocked := testutil.Blocking(parent)
			result := make(chan bool, 1)
			go func() {
				_, _, ok := q.push(ctx, mk(0, 2), Block)
				result <- ok
			}()
			testutil.Within(t, wait, "the push to wait for room", blocked)
			select {
			case ok := <-result:
				t.Fatalf("the push into a full queue returned (%v) before room was made", ok)
			default:
			}
			if took := c.wake(q, cancel); took != c.took {
				t.Fatalf("took %q, want %q", took, c.took)
			}
			if ok := testutil.Within(t, wait, "the blocked push to return", result); ok != c.queued {
				t.Fatalf("push returned %v, want %v", ok, c.queued)
			}
			if got := labels(q.pop(nil, 10)); got != c.leftover {
				t.Fatalf("queue holds %q, want %q", got, c.leftover)
			}
		})
	}
}
