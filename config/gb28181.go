package config

import (
	"errors"
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// GB28181 configures vinfer as a GB/T 28181-2016 platform (SIP server): cameras and NVRs
// register with it, and streams declared as gb28181://<device id>/<channel id> are invited
// through it. The section is optional; without it those streams are refused.
type GB28181 struct {
	// ID is vinfer's 20-digit SIP server ID (GB/T 28181-2016 Annex D), e.g.
	// 34020000002000000001: what a camera's web page calls "SIP server ID".
	ID string `yaml:"id" json:"id"`
	// Domain is the 10-digit SIP domain ("SIP server domain"); default: ID's first 10 digits.
	Domain string `yaml:"domain,omitempty" json:"domain,omitempty"`
	// Listen is the SIP address, served over UDP and TCP; default 0.0.0.0:5060.
	Listen string `yaml:"listen,omitempty" json:"listen,omitempty"`
	// Password is the digest password of every device without its own (Devices). Empty with
	// no per-device password: registration without authentication.
	Password string `yaml:"password,omitempty" json:"-"`
	// Devices sets per-device passwords (and names which devices may register when
	// AllowUnknown is false).
	Devices []GB28181Device `yaml:"devices,omitempty" json:"devices,omitempty"`
	// AllowUnknown lets devices not listed in Devices register (with Password); default true
	// when Devices is empty.
	AllowUnknown *bool `yaml:"allow_unknown,omitempty" json:"allow_unknown,omitempty"`
	// MediaIP is the address announced in the INVITE's SDP (c= line): where cameras send
	// media. Set it to the address cameras reach vinfer on (behind NAT: the public one).
	// Default: the local address the device's SIP messages arrived on.
	MediaIP string `yaml:"media_ip,omitempty" json:"media_ip,omitempty"`
	// MediaPorts is the range media is received on, "first-last"; default 30000-30999. One
	// port per stream.
	MediaPorts string `yaml:"media_ports,omitempty" json:"media_ports,omitempty"`
	// KeepaliveTimeout marks a device offline when no keepalive (or other message) arrived
	// for that long; default 180s (3 keepalives of the standard's 60 s).
	KeepaliveTimeout Duration `yaml:"keepalive_timeout,omitempty" json:"keepalive_timeout,omitempty"`
	// InviteTimeout bounds the wait for an INVITE's answer; default 10s.
	InviteTimeout Duration `yaml:"invite_timeout,omitempty" json:"invite_timeout,omitempty"`
	// MediaTimeout is how long an established session may deliver no RTP packet before it
	// is ended (BYE) and invited again; default 15s.
	MediaTimeout Duration `yaml:"media_timeout,omitempty" json:"media_timeout,omitempty"`
	// MaxDevices bounds the registered devices; default 1000.
	MaxDevices int `yaml:"max_devices,omitempty" json:"max_devices,omitempty"`
	// MessageAuth makes devices with a password answer a digest challenge on every MESSAGE
	// too (GB/T 28181-2016 §9.3 allows it; not every device firmware does it); default false:
	// MESSAGEs are accepted from the registered device's address only.
	MessageAuth bool `yaml:"message_auth,omitempty" json:"message_auth,omitempty"`
	// NonceTTL is how long a digest nonce may be answered; each nonce is answered once, from
	// the address it was issued to; default 30s.
	NonceTTL Duration `yaml:"nonce_ttl,omitempty" json:"nonce_ttl,omitempty"`
	// TCPIdleTimeout closes a SIP TCP connection that received nothing for that long;
	// default 200s (above keepalive_timeout's default: a live device is never cut).
	TCPIdleTimeout Duration `yaml:"tcp_idle_timeout,omitempty" json:"tcp_idle_timeout,omitempty"`
	// TCPMessageTimeout closes a SIP TCP connection whose message, once begun, is not
	// complete within it (a half-sent header or body); default 10s.
	TCPMessageTimeout Duration `yaml:"tcp_message_timeout,omitempty" json:"tcp_message_timeout,omitempty"`
	// MaxTCPConns bounds the SIP TCP connections accepted at once; default 2048.
	MaxTCPConns int `yaml:"max_tcp_conns,omitempty" json:"max_tcp_conns,omitempty"`
	// MaxTCPConnsPerHost bounds them per source IP address; default 64 (an NVR, or devices
	// behind one NAT address).
	MaxTCPConnsPerHost int `yaml:"max_tcp_conns_per_host,omitempty" json:"max_tcp_conns_per_host,omitempty"`
	// Upstream are the upper platforms vinfer cascades to (config/gb28181_upstream.go).
	Upstream []GB28181Upstream `yaml:"upstream,omitempty" json:"upstream,omitempty"`
}

// GB28181Device is one device's credentials.
type GB28181Device struct {
	// ID is the device's 20-digit SIP ID (its "SIP user ID").
	ID string `yaml:"id" json:"id"`
	// Password is its digest password; empty: the section's Password.
	Password string `yaml:"password,omitempty" json:"-"`
}

// GB28181 defaults.
const (
	DefaultGBListen           = "0.0.0.0:5060"
	DefaultGBMediaPorts       = "30000-30999"
	DefaultGBKeepaliveTimeout = 180 * time.Second
	DefaultGBInviteTimeout    = 10 * time.Second
	DefaultGBMediaTimeout     = 15 * time.Second
	DefaultGBMaxDevices       = 1000
	DefaultGBNonceTTL         = 30 * time.Second
	DefaultGBTCPIdleTimeout   = 200 * time.Second
	DefaultGBTCPMsgTimeout    = 10 * time.Second
	DefaultGBMaxTCPConns      = 2048
	DefaultGBMaxTCPPerHost    = 64
)

// ErrGB28181 is wrapped by errors of the gb28181 section.
var ErrGB28181 = errors.New("gb28181")

var (
	gbID     = regexp.MustCompile(`^[0-9]{20}$`)
	gbDomain = regexp.MustCompile(`^[0-9]{10}$`)
)

// IsGBID reports whether s is a 20-digit GB/T 28181 ID.
func IsGBID(s string) bool { return gbID.MatchString(s) }

// Init fills the defaults and validates; each error names the field to fix.
func (g *GB28181) Init() error {
	var errs []error
	bad := func(f string, a ...any) {
		errs = append(errs, fmt.Errorf("%w: "+f, append([]any{ErrGB28181}, a...)...))
	}
	if !IsGBID(g.ID) {
		bad("id %q must be 20 digits (e.g. 34020000002000000001)", g.ID)
	}
	if g.Domain == "" && len(g.ID) >= 10 {
		g.Domain = g.ID[:10]
	}
	if !gbDomain.MatchString(g.Domain) {
		bad("domain %q must be 10 digits (e.g. 3402000000)", g.Domain)
	}
	if g.Listen == "" {
		g.Listen = DefaultGBListen
	}
	if _, _, err := net.SplitHostPort(g.Listen); err != nil {
		bad("listen %q: %v", g.Listen, err)
	}
	if g.MediaIP != "" && net.ParseIP(g.MediaIP) == nil {
		bad("media_ip %q must be an IP address", g.MediaIP)
	}
	if g.MediaPorts == "" {
		g.MediaPorts = DefaultGBMediaPorts
	}
	if _, _, err := g.PortRange(); err != nil {
		bad("media_ports %q: %v", g.MediaPorts, err)
	}
	seen := map[string]bool{}
	for i, d := range g.Devices {
		if !IsGBID(d.ID) {
			bad("devices[%d]: id %q must be 20 digits", i, d.ID)
		}
		if seen[d.ID] {
			bad("devices[%d]: duplicate id %s", i, d.ID)
		}
		seen[d.ID] = true
	}
	if g.AllowUnknown == nil {
		v := len(g.Devices) == 0
		g.AllowUnknown = &v
	}
	for _, d := range []struct {
		name string
		v    *Duration
		def  time.Duration
	}{{"keepalive_timeout", &g.KeepaliveTimeout, DefaultGBKeepaliveTimeout},
		{"invite_timeout", &g.InviteTimeout, DefaultGBInviteTimeout},
		{"media_timeout", &g.MediaTimeout, DefaultGBMediaTimeout},
		{"nonce_ttl", &g.NonceTTL, DefaultGBNonceTTL},
		{"tcp_idle_timeout", &g.TCPIdleTimeout, DefaultGBTCPIdleTimeout},
		{"tcp_message_timeout", &g.TCPMessageTimeout, DefaultGBTCPMsgTimeout}} {
		if *d.v < 0 {
			bad("%s must be > 0", d.name)
		}
		if *d.v == 0 {
			*d.v = Duration(d.def)
		}
	}
	if g.MaxDevices < 0 {
		bad("max_devices must be ≥ 1")
	}
	if g.MaxDevices == 0 {
		g.MaxDevices = DefaultGBMaxDevices
	}
	for _, n := range []struct {
		name string
		v    *int
		def  int
	}{{"max_tcp_conns", &g.MaxTCPConns, DefaultGBMaxTCPConns}, {"max_tcp_conns_per_host", &g.MaxTCPConnsPerHost, DefaultGBMaxTCPPerHost}} {
		if *n.v < 0 {
			bad("%s must be ≥ 1", n.name)
		}
		if *n.v == 0 {
			*n.v = n.def
		}
	}
	for i := range g.Upstream {
		if err := g.Upstream[i].Init(i, g.ID); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// PortRange returns MediaPorts' first and last port.
func (g *GB28181) PortRange() (first, last int, err error) {
	a, b, ok := strings.Cut(g.MediaPorts, "-")
	if !ok {
		b = a
	}
	first, err1 := strconv.Atoi(strings.TrimSpace(a))
	last, err2 := strconv.Atoi(strings.TrimSpace(b))
	if err1 != nil || err2 != nil || first < 1 || last > 65535 || first > last {
		return 0, 0, errors.New(`write "first-last" with 1 ≤ first ≤ last ≤ 65535`)
	}
	return first, last, nil
}

// DevicePassword returns the digest password for device id and whether it may register.
func (g *GB28181) DevicePassword(id string) (string, bool) {
	for _, d := range g.Devices {
		if d.ID == id {
			if d.Password != "" {
				return d.Password, true
			}
			return g.Password, true
		}
	}
	return g.Password, g.AllowUnknown == nil || *g.AllowUnknown
}
