package app

import (
	"fmt"
	"github.com/vinfer/vinfer/analytics"
	"github.com/vinfer/vinfer/internal/defs"
	"github.com/vinfer/vinfer/pipeline"
	"github.com/vinfer/vinfer/source/live"
)

// liveSource is implemented by network sources (RTSP, RTP, GB28181) that count packets, loss
// and reconnects.
type liveSource interface {
	Stats() live.Stats
}

// Streams returns a snapshot of every stream, in the order they were added, then the
// configured streams that could not start (StartStream), in the order they failed.
func (a *App) Streams() []defs.StreamInfo {
	sts := a.Pipeline.Streams()
	out := make([]defs.StreamInfo, len(sts))
	ids := make(map[string]bool, len(sts))
	for i := range sts {
		out[i] = a.streamInfo(&sts[i])
		ids[sts[i].ID] = true
	}
	for _, f := range a.failed.info() {
		if !ids[f.Decl.ID] { // a retry that has just started it
			out = append(out, f)
		}
	}
	return out
}

// Stream returns one stream's snapshot.
func (a *App) Stream(id string) (defs.StreamInfo, bool) {
	st, ok := a.Pipeline.Stream(id)
	if !ok {
		return a.failed.get(id)
	}
	return a.streamInfo(&st), true
}

func (a *App) streamInfo(st *pipeline.StreamStatus) defs.StreamInfo {
	si := streamInfo(st)
	si.Overload = a.overload.get(st.Stats)
	return si
}

func streamInfo(st *pipeline.StreamStatus) defs.StreamInfo {
	si := defs.StreamInfo{Decl: st.Decl, Live: st.Live, Err: st.Err, Started: st.Started,
		Elapsed: st.Stats.Elapsed(), Ended: st.Ended, Stopped: st.Stopped, Queue: st.Queue, Counters: st.Stats.Counters(),
		Classes: st.Stats.PerClass(), Device: st.Device, Activity: st.Activity}
	if st.Pool != nil {
		ps := st.Pool.Stats()
		si.Pool = &ps
	}
	if st.Scene != nil {
		si.Scene = &analytics.Metrics{}
		st.Scene.Metrics(si.Scene)
	}
	if ls, ok := st.Source.(liveSource); ok {
		ss := ls.Stats()
		si.Source = &ss
	}
	return si
}

// SetScene replaces a running stream's zones and lines after checking them against its frame
// size (when known) and its model's labels.
func (a *App) SetScene(id string, c analytics.Config) error {
	if err := c.Validate(); err != nil {
		return err
	}
	st, ok := a.Pipeline.Stream(id)
	if !ok {
		return fmt.Errorf("no stream %q", id)
	}
	var labels []string
	if e := a.Registry.Loaded(st.Model); e != nil && e.Current() != nil {
		labels = e.Current().Labels()
	}
	w, h := 0, 0 // the frame size once the source knows it: points must lie in the frame
	if st.Source != nil {
		info := st.Source.Info()
		w, h = info.Width, info.Height
	}
	if err := c.Check(w, h, st.Decl.Rules.Names(labels)); err != nil {
		return err
	}
	if err := a.Pipeline.SetScene(id, c); err != nil {
		return err
	}
	a.tellScene(id, &c)
	return nil
}
