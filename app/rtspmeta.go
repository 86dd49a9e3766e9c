package app

import (
	"fmt"

	"github.com/vinfer/vinfer/internal/defs"
	"github.com/vinfer/vinfer/onvifmeta"
)

// openRTSPMeta starts the RTSP server of output.rtsp (package onvifmeta): each stream's video
// with its ONVIF metadata track. It joins the app's own sinks (closed with them).
func (a *App) openRTSPMeta() error {
	r := a.Config.Output.RTSP
	if r == nil {
		return nil
	}
	// Scoped API tokens read too: user name the token's label, password the token, limited to
	// its streams.
	var creds []onvifmeta.Credential
	for _, t := range a.Config.Output.Tokens {
		creds = append(creds, onvifmeta.Credential{User: t.Label, Password: t.Token, Streams: t.Streams})
	}
	srv, err := onvifmeta.New(onvifmeta.Config{Listen: r.Listen, MaxClients: r.MaxClients, User: r.User,
		Password: a.Config.Output.RTSPPassword(), Credentials: creds, UDPPort: r.UDPPort, WriteQueue: r.WriteQueue, Logger: a.Log})
	if err != nil {
		return fmt.Errorf("output.rtsp: %w", err)
	}
	a.rtspMeta = srv
	a.sinks = append(a.sinks, srv)
	return nil
}

// RTSPMetaAddr is the address output.rtsp listens on, "" without it.
func (a *App) RTSPMetaAddr() string {
	if a.rtspMeta == nil {
		return ""
	}
	return a.rtspMeta.Addr()
}

var _ defs.RTSPMeta = (*App)(nil)

// RTSPMeta returns output.rtsp's state (defs.RTSPMeta); false without it.
func (a *App) RTSPMeta() (defs.RTSPMetaInfo, bool) {
	if a.rtspMeta == nil {
		return defs.RTSPMetaInfo{}, false
	}
	c := a.rtspMeta.Counters()
	return defs.RTSPMetaInfo{Clients: c.Clients, Dropped: c.Dropped, Refused: c.Refused + c.ConnsRefused, Documents: c.Docs}, true
}
