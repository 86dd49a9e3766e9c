package testutil

import (
	"context"
	"sync"
	"testing"
	"time"
)

// Eventually fails the test unless cond reports true within timeout. It checks cond at once,
// then again after short pauses growing from 1 ms to 50 ms, and once more when timeout has
// passed, so a condition that holds early costs little and a slow machine gets the whole
// timeout: give a timeout that a loaded CI machine meets with room to spare (seconds, not
// milliseconds), since it only matters when the test fails. The failure names what was
// awaited and how long it waited. Call it from the test's goroutine (it calls t.Fatalf).
// It is the one place where tests poll.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	start := time.Now()
	pause := time.Millisecond
	for !cond() {
		waited := time.Since(start)
		if waited >= timeout {
			t.Fatalf("%s: still not true after %v", what, waited.Round(time.Millisecond))
			return
		}
		time.Sleep(min(pause, timeout-waited))
		pause = min(2*pause, 50*time.Millisecond)
	}
}

// Within returns the next value received from ch, failing the test when none comes within
// timeout (a closed ch yields the zero value at once). what names the awaited event. Call it
// from the test's goroutine.
func Within[T any](t testing.TB, timeout time.Duration, what string, ch <-chan T) T {
	t.Helper()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case v := <-ch:
		return v
	case <-timer.C:
		t.Fatalf("%s: nothing after %v", what, timeout)
		var zero T
		return zero
	}
}

// Blocking returns a context derived from parent and a channel that is closed the first time
// something calls the context's Done method. Code that selects on ctx.Done() only when it is
// about to wait (a full queue, an exhausted pool) thereby tells the test that it blocks, and the
// test can act then (free room, cancel, close) instead of sleeping and hoping it blocked.
// Deriving another context from it calls Done too, so pass it to the code under test as is.
func Blocking(parent context.Context) (context.Context, <-chan struct{}) {
	c := &blockingCtx{Context: parent, blocked: make(chan struct{})}
	return c, c.blocked
}

type blockingCtx struct {
	context.Context
	once    sync.Once
	blocked chan struct{}
}

func (c *blockingCtx) Done() <-chan struct{} {
	c.once.Do(func() { close(c.blocked) })
	return c.Context.Done()
}
