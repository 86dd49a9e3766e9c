package app

import (
	"sync/atomic"

	"github.com/vinfer/vinfer/gb28181/cascade"
	"github.com/vinfer/vinfer/gb28181/platform"
	"github.com/vinfer/vinfer/internal/defs"
	"github.com/vinfer/vinfer/pipeline"
	"github.com/vinfer/vinfer/source/gb28181"
)

var _ defs.GB28181 = (*App)(nil)

// gbPlatform is the GB28181 platform of a configuration with a gb28181: section.
type gbPlatform struct {
	srv     *platform.Server
	restore func()
	up      *cascade.Cascade                  // the upward cascade (app/cascade.go), nil without upstream entries
	pipe    atomic.Pointer[pipeline.Pipeline] // set once the pipeline runs
	fwd     atomic.Pointer[cascade.Cascade]   // where devices' alarms go (app/cascade.go), nil: nowhere
}

// startGB28181 starts the GB28181 platform (SIP server) when the configuration has a
// gb28181: section and makes it open the gb28181://<device id>/<channel id> streams.
func (a *App) startGB28181() error {
	if a.Config.GB28181 == nil {
		return nil
	}
	g := &gbPlatform{}
	srv := &platform.Server{Config: *a.Config.GB28181, Logger: a.Log, Waker: a, Forward: g.forwardAlarm}
	if err := srv.Init(); err != nil {
		return err
	}
	g.srv, g.restore = srv, gb28181.SetSignaller(srv)
	a.gb = g
	if err := a.startCascade(); err != nil {
		a.stopGB28181()
		return err
	}
	return nil
}

// stopGB28181 ends its sessions and stops it (after the streams were stopped).
func (a *App) stopGB28181() {
	if a.gb != nil {
		if a.gb.up != nil {
			a.gb.fwd.Store(nil)
			a.gb.up.Close()
		}
		a.gb.restore()
		a.gb.srv.Close()
		a.gb = nil
	}
}

// GB28181 returns the platform's devices, channels and sessions (defs.GB28181).
func (a *App) GB28181() (defs.GB28181Info, bool) {
	if a.gb == nil {
		return defs.GB28181Info{}, false
	}
	return a.gb.srv.Info(), true
}
