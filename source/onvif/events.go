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
)

// WatchEvents subscribes to the camera's events (PullPoint) and calls wake for each motion or
// analytics event that reports activity (onvifc.Notification.Active), until ctx ends; a lost
// subscription is made again (backoff 1–30 s). It returns when ctx ends, after unsubscribing.
func WatchEvents(ctx context.Context, t Target, wake func(), log *slog.Logger) {
	if log == nil {
		log = slog.Default()
	}
	backoff := retryMin
	for ctx.Err() == nil {
		err := watch(ctx, t, wake)
		if ctx.Err() != nil {
			return
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
func watch(ctx context.Context, t Target, wake func()) error {
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
		ns, err := p.Pull(ctx, pullWait, 64)
		if err != nil {
			return err
		}
		for i := range ns {
			if ns[i].Active() {
				wake()
				break
			}
		}
		if time.Now().After(renewAt) {
			if err := p.Renew(ctx, subscriptionTTL); err != nil {
				return err
			}
			renewAt = time.Now().Add(subscriptionTTL / 2)
		}
	}
	return nil
}
