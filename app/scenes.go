package app

import (
	"github.com/vinfer/vinfer/analytics"
	"github.com/vinfer/vinfer/sink"
)

// tellScene gives the configuration's sinks that describe streams (sink.SceneWatcher: MQTT's
// Home Assistant discovery) stream id's zones and lines.
func (a *App) tellScene(id string, c *analytics.Config) {
	var s sink.Scene
	for _, z := range c.Zones {
		s.Zones = append(s.Zones, sink.Place{Name: z.Name, Classes: z.Classes})
	}
	for _, l := range c.Lines {
		s.Lines = append(s.Lines, sink.Place{Name: l.Name, Classes: l.Classes})
	}
	for _, w := range a.sceneWatchers() {
		w.Scene(id, s)
	}
}

// tellRemoved tells those sinks that stream id was removed.
func (a *App) tellRemoved(id string) {
	for _, w := range a.sceneWatchers() {
		w.Removed(id)
	}
}

func (a *App) sceneWatchers() []sink.SceneWatcher {
	a.sinksMu.Lock()
	defer a.sinksMu.Unlock()
	var out []sink.SceneWatcher
	for _, s := range a.sinks {
		if w, ok := s.(sink.SceneWatcher); ok {
			out = append(out, w)
		}
	}
	return out
}
