package file

import (
	"context"
	"time"
)

// Pacer releases timestamps at the wall-clock rate, as a camera would send them: Wait for the
// timestamp ts returns once ts−ts₀ has passed since the first Wait (ts₀ its timestamp). A
// reader that fell behind by more than MaxLag (the consumer stalled) or a timestamp more than
// MaxLead ahead (a jump in the file) re-anchors instead of bursting or stalling. The zero value
// is ready to use; not for concurrent use.
type Pacer struct {
	// MaxLag and MaxLead bound the catch-up and the wait (0: 1 s and 10 s).
	MaxLag, MaxLead time.Duration

	started bool
	t0      time.Time
	ts0     time.Duration
	timer   *time.Timer
}

// Wait blocks until ts is due; it returns ctx.Err() when ctx ends first.
func (p *Pacer) Wait(ctx context.Context, ts time.Duration) error {
	now := time.Now()
	if !p.started {
		p.started, p.t0, p.ts0 = true, now, ts
		return nil
	}
	maxLag, maxLead := p.MaxLag, p.MaxLead
	if maxLag <= 0 {
		maxLag = time.Second
	}
	if maxLead <= 0 {
		maxLead = 10 * time.Second
	}
	d := p.t0.Add(ts - p.ts0).Sub(now)
	if d <= 0 || d > maxLead {
		if d < -maxLag || d > maxLead {
			p.t0, p.ts0 = now, ts
		}
		return ctx.Err()
	}
	if p.timer == nil {
		p.timer = time.NewTimer(d)
	} else {
		p.timer.Reset(d)
	}
	select {
	case <-p.timer.C:
		return nil
	case <-ctx.Done():
		p.timer.Stop()
		return ctx.Err()
	}
}
