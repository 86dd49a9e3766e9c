package app

import (
	"context"
	"sync"

	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/source"
	"github.com/vinfer/vinfer/source/onvif"
)

// cameraEvents are the ONVIF event watches of onvif:// streams with activity gating: a
// camera's motion or analytics event wakes its idle stream (docs/onvif.md).
type cameraEvents struct {
	mu    sync.Mutex
	stops map[string]func() // stream id → cancel and wait
}

// watchCamera starts s's event watch when s is an onvif:// stream with activity gating.
func (a *App) watchCamera(s *config.Stream) {
	if source.Scheme(s.Source) != "onvif" || !s.Activity.Enabled() {
		return
	}
	t, err := onvif.Parse(s.Source)
	if err != nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	id := s.ID
	go func() {
		defer close(done)
		onvif.WatchEvents(ctx, t, func() { a.WakeStream(id) }, a.Log.With("stream", id))
	}()
	a.cameras.mu.Lock()
	if a.cameras.stops == nil {
		a.cameras.stops = map[string]func(){}
	}
	a.cameras.stops[id] = func() { cancel(); <-done }
	a.cameras.mu.Unlock()
}

// unwatchCamera stops stream id's event watch, if any ("": every one).
func (a *App) unwatchCamera(id string) {
	a.cameras.mu.Lock()
	var stops []func()
	for k, stop := range a.cameras.stops {
		if id == "" || k == id {
			stops = append(stops, stop)
			delete(a.cameras.stops, k)
		}
	}
	a.cameras.mu.Unlock()
	for _, stop := range stops {
		stop()
	}
}
