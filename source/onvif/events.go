package onvif

import (
	"context"
	"log/slog"
	"time"

	onvifc "github.com/vinfer/vinfer/onvif"
)

// Event watch timing: a subscription lasts subscriptionTTL and is renewed at half of it; a
// PullMessages waits up to pullWait; failures are retried after retryMin, doubling to retryMax.
const (
	subscriptionTTL = time.Minute
	pullWait        = 10 * time.Second
	retryMin        = time.Second
	retryMax        = 30 * time.Second
	// A pull starts at least pullGapEmpty after the last one began when that one brought
	// nothing, pullGapBusy when it brought messages: a camera that answers at once (ignoring
	// the pull's Timeout) is not pulled in a loop.
	pullGapEmpty = time.Second
	pullGapBusy  = 100 * time.Millisecond
)

// Watch is what WatchEvents calls: Wake for each message that reports activity
// (onvifc.Notification.Active), Received with the messages of each pull, Failed for each lost
// or refused subscription (then made again). Any may be nil.
type Watch struct {
	Wake     func()
	Received func(n int)
	Failed   func(err error)
	Log      *slog.Logger
}

// WatchEvents subscribes to the camera's events (PullPoint) until ctx ends, calling w's
// functions; a lost subscription is made again (backoff 1–30 s, logged). It returns when ctx
// ends, after unsubscribing.
func WatchEvents(ctx context.Context, t Target, w Watch) {
	log := w.Log
	if log == nil {
		log = slog.Default()
	}
	backoff := retryMin
	for ctx.Err() == nil {
		err := watch(ctx, t, &w)
		if ctx.Err() != nil {
			return
		}
		if w.Failed != nil {
			w.Failed(err)
		}
		log.Warn("onvif: camera events", "error", err, "retry_in", backoff)
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
			return
		}
		backoff = min(backoff*2, retryMax)
	}
}

// watch runs one subscription until it fails or ctx ends.
func watch(ctx context.Context, t Target, w *Watch) error {
	c := &onvifc.Client{XAddr: t.XAddr, User: t.User, Password: t.Password}
	p, err := c.Subscribe(ctx, subscriptionTTL)
	if err != nil {
		return err
	}
	defer func() {
		uctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		p.Unsubscribe(uctx)
	}()
	renewAt := time.Now().Add(subscriptionTTL / 2)
	for ctx.Err() == nil {
		began := time.Now()
		ns, err := p.Pull(ctx, pullWait, 64)
		if err != nil {
			return err
		}
		if w.Received != nil && len(ns) > 0 {
			w.Received(len(ns))
		}
		for i := range ns {
			if ns[i].Active() {
				if w.Wake != nil {
					w.Wake()
				}
				break
			}
		}
		if time.Now().After(renewAt) {
			if err := p.Renew(ctx, subscriptionTTL); err != nil {
				return err
			}
			renewAt = time.Now().Add(subscriptionTTL / 2)
		}
		gap := pullGapEmpty
		if len(ns) > 0 {
			gap = pullGapBusy
		}
		if d := gap - time.Since(began); d > 0 {
			select {
			case <-time.After(d):
			case <-ctx.Done():
			}
		}
	}
	return nil
}
