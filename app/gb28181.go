package app

import (
	"fmt"
	"net/url"
	"strconv"

	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/source"
	"github.com/vinfer/vinfer/source/gb28181"
)

// gbSource parses gb28181://[host]:port?transport=udp|tcp-passive|tcp-active&remote=host:port&ssrc=N.
func gbSource(s config.Stream, raw string) (interface {
	source.Source
	Init() error
}, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("stream %s: bad gb28181 URL: %v", s.ID, err)
	}
	q := u.Query()
	g := &gb28181.Source{Transport: q.Get("transport"), ListenAddr: u.Host, RemoteAddr: q.Get("remote")}
	if g.Transport == "" {
		g.Transport = gb28181.TransportUDP
	}
	if v := q.Get("ssrc"); v != "" {
		n, err := strconv.ParseUint(v, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("stream %s: ssrc=%q is not a 32-bit number", s.ID, v)
		}
		g.SSRC = uint32(n)
	}
	return g, nil
}
