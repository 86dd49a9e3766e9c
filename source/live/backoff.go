package live

import (
	"context"
	"time"
)

// DefaultBackoff is the reconnection schedule used when none is configured.
var DefaultBackoff = []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 5 * time.Second}

// Backoff yields the waits before successive connection attempts: Steps in turn, then the last
// step for ever, until Reset (called once a session delivered media).
type Backoff struct {
	// Steps are the waits; nil means DefaultBackoff.
	Steps []time.Duration

	n int
}

// Next returns the wait before the next attempt.
func (b *Backoff) Next() time.Duration {
	steps := b.Steps
	if len(steps) == 0 {
		steps = DefaultBackoff
	}
	d := steps[min(b.n, len(steps)-1)]
	b.n++
	return d
}

// Reset starts the schedule over.
func (b *Backoff) Reset() { b.n = 0 }

// Sleep waits for d or until ctx is done, in which case it returns ctx.Err().
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
