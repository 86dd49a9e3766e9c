package testutil

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// fakeT records a failure instead of failing the real test; Fatalf ends the calling goroutine
// as testing's does.
type fakeT struct {
	testing.TB
	failure string
}

func (f *fakeT) Helper() {}

func (f *fakeT) Fatalf(format string, args ...any) {
	f.failure = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// run calls fn with a fakeT on its own goroutine and returns the failure message ("" if none).
func run(t *testing.T, fn func(testing.TB)) string {
	f := &fakeT{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(f)
	}()
	Within(t, 30*time.Second, "the checked function to end", done)
	return f.failure
}

func TestEventually(t *testing.T) {
	cases := []struct {
		name    string
		timeout time.Duration
		trueOn  int64 // cond reports true from this call on (0: never)
		fails   bool
	}{
		{"true at once", time.Nanosecond, 1, false},
		{"true on the fifth check", 30 * time.Second, 5, false},
		{"never true", 20 * time.Millisecond, 0, true},
		{"zero timeout checks once", 0, 0, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var calls atomic.Int64
			cond := func() bool { n := calls.Add(1); return c.trueOn > 0 && n >= c.trueOn }
			msg := run(t, func(tb testing.TB) { Eventually(tb, c.timeout, "the thing", cond) })
			if (msg != "") != c.fails {
				t.Fatalf("failure %q after %d checks, want failing %v", msg, calls.Load(), c.fails)
			}
			if c.fails && (!strings.HasPrefix(msg, "the thing: still not true after ") || calls.Load() < 1) {
				t.Fatalf("failure %q after %d checks", msg, calls.Load())
			}
			if !c.fails && calls.Load() != c.trueOn {
				t.Fatalf("%d checks, want %d", calls.Load(), c.trueOn)
			}
		})
	}
}

// TestEventuallyWaits: a condition made true by another goroutine is seen.
func TestEventuallyWaits(t *testing.T) {
	var flag atomic.Bool
	go func() {
		runtime.Gosched()
		flag.Store(true)
	}()
	Eventually(t, 30*time.Second, "the flag", flag.Load)
}

func TestWithin(t *testing.T) {
	ready := make(chan int, 1)
	ready <- 7
	closed := make(chan int)
	close(closed)
	cases := []struct {
		name  string
		ch    chan int
		want  int
		fails bool
	}{
		{"value", ready, 7, false},
		{"closed", closed, 0, false},
		{"nothing", make(chan int), 0, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var got int
			msg := run(t, func(tb testing.TB) { got = Within(tb, 10*time.Millisecond, "a number", c.ch) })
			if (msg != "") != c.fails || got != c.want {
				t.Fatalf("got %d, failure %q", got, msg)
			}
			if c.fails && msg != "a number: nothing after 10ms" {
				t.Fatalf("failure %q", msg)
			}
		})
	}
}

func TestBlocking(t *testing.T) {
	parent, cancel := context.WithCancel(context.Background())
	ctx, blocked := Blocking(parent)
	result := make(chan error, 1)
	go func() {
		<-ctx.Done() // a blocking wait, as code under test does
		result <- ctx.Err()
	}()
	Within(t, 30*time.Second, "the goroutine to wait on ctx", blocked)
	select {
	case err := <-result:
		t.Fatalf("the wait ended before cancel: %v", err)
	default:
	}
	cancel()
	if err := Within(t, 30*time.Second, "the wait to end", result); err != context.Canceled {
		t.Fatalf("err %v", err)
	}
	ctx.Done() // again: no second close
}
