package app

import (
	"github.com/vinfer/vinfer/internal/defs"
	"github.com/vinfer/vinfer/onvifmeta"
)

var _ defs.RTSPAuth = (*App)(nil)

// RTSPAuthFailures returns output.rtsp's refused requests by reason (defs.RTSPAuth); false
// without output.rtsp or without credentials to check.
func (a *App) RTSPAuthFailures() (map[string]uint64, bool) {
	if a.rtspMeta == nil || a.Config.Output.RTSPPassword() == "" && len(a.Config.Output.Tokens) == 0 {
		return nil, false
	}
	c := a.rtspMeta.Counters()
	m := make(map[string]uint64, len(c.Auth))
	for r, n := range c.Auth {
		m[onvifmeta.AuthReason(r).String()] = n
	}
	return m, true
}
