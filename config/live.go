package config

import (
	"cmp"
	"errors"
	"fmt"
	"net"
	"strings"
)

// Live holds the settings of live view (docs/live-view.md): the streams' own coded video sent
// to browsers over WebRTC, with the results beside it.
type Live struct {
	// MaxViewers bounds the viewers of one stream (default 8); one more is refused (503).
	MaxViewers int `yaml:"max_viewers,omitempty" json:"max_viewers,omitempty"`
	// Queue is each viewer's queue of access units (default 90, 3 s at 30 fps); a viewer whose
	// queue is full is dropped, counted, never the stream.
	Queue int `yaml:"queue,omitempty" json:"queue,omitempty"`
	// ICE says how browsers reach the media; the default offers host candidates only.
	ICE ICE `yaml:"ice,omitempty" json:"ice,omitempty"`
}

// ICE are the WebRTC connectivity settings (RFC 8445).
type ICE struct {
	// PublicIPs replace the host candidates' addresses (NAT 1:1: the server behind a NAT that
	// maps these public addresses to it, port for port).
	PublicIPs []string `yaml:"public_ips,omitempty" json:"public_ips,omitempty"`
	// Servers are STUN or TURN servers (stun:host:port, turn:host:port?transport=udp|tcp,
	// turns:host:port); none: host candidates only.
	Servers []ICEServer `yaml:"servers,omitempty" json:"servers,omitempty"`
	// PortMin and PortMax bound the UDP ports media uses (both or neither; 0: any).
	PortMin uint16 `yaml:"port_min,omitempty" json:"port_min,omitempty"`
	PortMax uint16 `yaml:"port_max,omitempty" json:"port_max,omitempty"`
	// Loopback also offers 127.0.0.1 and ::1 (a browser on the server's own machine).
	Loopback bool `yaml:"loopback,omitempty" json:"loopback,omitempty"`
}

// ICEServer is one STUN or TURN server.
type ICEServer struct {
	URLs       []string `yaml:"urls" json:"urls"`
	Username   string   `yaml:"username,omitempty" json:"username,omitempty"`
	Credential string   `yaml:"credential,omitempty" json:"-"`
}

// Defaults of the live: section.
const (
	DefaultMaxViewers = 8
	DefaultLiveQueue  = 90
)

// ErrLive is wrapped by every error of the live: section.
var ErrLive = errors.New("live")

// Validate checks the settings and fills the defaults.
func (l *Live) Validate() error {
	if l.MaxViewers < 0 || l.Queue < 0 {
		return fmt.Errorf("%w: max_viewers and queue must not be negative", ErrLive)
	}
	l.MaxViewers = cmp.Or(l.MaxViewers, DefaultMaxViewers)
	l.Queue = cmp.Or(l.Queue, DefaultLiveQueue)
	if (l.ICE.PortMin == 0) != (l.ICE.PortMax == 0) || l.ICE.PortMin > l.ICE.PortMax {
		return fmt.Errorf("%w: ice.port_min and ice.port_max go together, min ≤ max (got %d, %d)", ErrLive, l.ICE.PortMin, l.ICE.PortMax)
	}
	for _, ip := range l.ICE.PublicIPs {
		if net.ParseIP(ip) == nil {
			return fmt.Errorf("%w: ice.public_ips: %q is not an IP address", ErrLive, ip)
		}
	}
	for i, s := range l.ICE.Servers {
		if len(s.URLs) == 0 {
			return fmt.Errorf("%w: ice.servers[%d]: no urls", ErrLive, i)
		}
		for _, u := range s.URLs {
			scheme, _, _ := strings.Cut(u, ":")
			switch scheme {
			case "stun", "stuns":
			case "turn", "turns":
				if s.Username == "" || s.Credential == "" {
					return fmt.Errorf("%w: ice.servers[%d]: %s needs username and credential", ErrLive, i, u)
				}
			default:
				return fmt.Errorf("%w: ice.servers[%d]: %q is not a stun:, stuns:, turn: or turns: URL", ErrLive, i, u)
			}
		}
	}
	return nil
}
