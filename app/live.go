package app

import (
	"cmp"
	"context"
	"fmt"

	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/internal/defs"
	"github.com/vinfer/vinfer/liveview"
	"github.com/vinfer/vinfer/pipeline"
)

// liveView is the live view (config.Live): every stream's feed of access units and the WebRTC
// sessions of its viewers.
type liveView struct {
	hub *liveview.Hub
	srv *liveview.Server
}

// openLive makes the live view of the configuration's live: section (validated).
func (a *App) openLive() error {
	c := a.Config.Live
	hub := liveview.NewHub(cmp.Or(c.MaxViewers, config.DefaultMaxViewers), cmp.Or(c.Queue, config.DefaultLiveQueue))
	srv, err := liveview.NewServer(hub, a, c.ICE, a.Log.With("module", "live"))
	if err != nil {
		return fmt.Errorf("live: %w", err)
	}
	a.live = &liveView{hub: hub, srv: srv}
	return nil
}

// liveObserver returns what a stream's access units go to: its live feed, after next (nil: none; a.auObserver).
func (a *App) liveObserver(id string, next pipeline.AUObserver) pipeline.AUObserver {
	f := a.live.hub.Feed(id)
	if next == nil {
		return f
	}
	return observers{next, f}
}

// Live returns the live view (defs.Live) for the API.
func (a *App) Live() defs.Live { return a }

// LiveOffer implements defs.Live: a stream that is not running (unknown, failed, ended) is
// defs.ErrLiveNotRunning.
func (a *App) LiveOffer(ctx context.Context, stream, offer string, reorder bool) (string, string, error) {
	st, ok := a.Stream(stream)
	if !ok || st.Ended || st.Err != nil || st.Retry != nil {
		return "", "", fmt.Errorf("stream %q: %w", stream, defs.ErrLiveNotRunning)
	}
	return a.live.srv.LiveOffer(ctx, stream, offer, reorder)
}

// LiveFMP4 implements defs.Live.
func (a *App) LiveFMP4(stream string) (defs.LiveRun, error) {
	st, ok := a.Stream(stream)
	if !ok || st.Ended || st.Err != nil || st.Retry != nil {
		return nil, fmt.Errorf("stream %q: %w", stream, defs.ErrLiveNotRunning)
	}
	return a.live.srv.LiveFMP4(stream)
}

// LiveClose implements defs.Live.
func (a *App) LiveClose(stream, session string) error {
	return a.live.srv.LiveClose(stream, session)
}

// LiveStats returns the live view's viewers and counters (metrics).
func (a *App) LiveStats() defs.LiveStats { return a.live.srv.Stats() }
