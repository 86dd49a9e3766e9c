package config

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"time"
)

// GB28181Upstream is one upper platform vinfer registers with as a lower platform (GB/T
// 28181-2016 §9.1, cascading): it sees only Channels, may INVITE their video and receives
// their AI alarms.
type GB28181Upstream struct {
	// ServerID is the upper platform's 20-digit SIP ID; Domain its 10-digit domain (default:
	// ServerID's first 10 digits).
	ServerID string `yaml:"server_id" json:"server_id"`
	Domain   string `yaml:"domain,omitempty" json:"domain,omitempty"`
	// Address is the upper platform's SIP host:port.
	Address string `yaml:"address" json:"address"`
	// Transport is "udp" (default) or "tcp": how SIP reaches the upper platform.
	Transport string `yaml:"transport,omitempty" json:"transport,omitempty"`
	// DeviceID is the 20-digit ID vinfer registers as; default: the gb28181 section's id.
	DeviceID string `yaml:"device_id,omitempty" json:"device_id,omitempty"`
	// Password is the digest password the upper platform gave vinfer; never shown.
	Password string `yaml:"password,omitempty" json:"-"`
	// Local is the SIP address vinfer uses toward this platform (UDP: it listens there;
	// TCP: the connection's local address); default "0.0.0.0:0" (any port).
	Local string `yaml:"local,omitempty" json:"local,omitempty"`
	// LocalIP is announced in Contact and in media answers; default: the address the route
	// to the upper platform leaves from.
	LocalIP string `yaml:"local_ip,omitempty" json:"local_ip,omitempty"`
	// Expires is the registration's lifetime, renewed at half of it; default 3600s.
	Expires Duration `yaml:"expires,omitempty" json:"expires,omitempty"`
	// Keepalive is the interval of keepalives (§9.6); default 60s. Three unanswered in a
	// row re-register.
	Keepalive Duration `yaml:"keepalive,omitempty" json:"keepalive,omitempty"`
	// AlarmPriority is the alarms' AlarmPriority (1 highest … 4); default 3.
	AlarmPriority int `yaml:"alarm_priority,omitempty" json:"alarm_priority,omitempty"`
	// Channels are the channels the upper platform sees: nothing else is reachable.
	Channels []GB28181UpChannel `yaml:"channels" json:"channels"`
}

// GB28181UpChannel is one vinfer stream shown to an upper platform as a channel.
type GB28181UpChannel struct {
	// ID is the channel's 20-digit ID (type 131/132 camera by GB/T 28181-2016 Annex D).
	ID string `yaml:"id" json:"id"`
	// Stream is the vinfer stream id whose video and events the channel carries.
	Stream string `yaml:"stream" json:"stream"`
	// Name is shown in the catalog; default: Stream.
	Name string `yaml:"name,omitempty" json:"name,omitempty"`
}

// Upstream defaults.
const (
	DefaultGBUpExpires   = time.Hour
	DefaultGBUpKeepalive = 60 * time.Second
	DefaultGBUpPriority  = 3
	DefaultGBUpLocal     = "0.0.0.0:0"
)

// Init fills the defaults of upstream i (own: the section's id) and validates it.
func (u *GB28181Upstream) Init(i int, own string) error {
	var errs []error
	bad := func(f string, a ...any) {
		errs = append(errs, fmt.Errorf("%w: upstream[%d]: "+f, append([]any{ErrGB28181, i}, a...)...))
	}
	if !IsGBID(u.ServerID) {
		bad("server_id %q must be 20 digits", u.ServerID)
	}
	if u.Domain == "" && len(u.ServerID) >= 10 {
		u.Domain = u.ServerID[:10]
	}
	if !gbDomain.MatchString(u.Domain) {
		bad("domain %q must be 10 digits", u.Domain)
	}
	if _, _, err := net.SplitHostPort(u.Address); err != nil || u.Address == "" {
		bad("address %q must be host:port", u.Address)
	}
	u.Transport = strings.ToLower(u.Transport)
	if u.Transport == "" {
		u.Transport = "udp"
	}
	if u.Transport != "udp" && u.Transport != "tcp" {
		bad("transport %q: use udp or tcp", u.Transport)
	}
	if u.DeviceID == "" {
		u.DeviceID = own
	}
	if !IsGBID(u.DeviceID) {
		bad("device_id %q must be 20 digits", u.DeviceID)
	}
	if u.Local == "" {
		u.Local = DefaultGBUpLocal
	}
	if _, _, err := net.SplitHostPort(u.Local); err != nil {
		bad("local %q: %v", u.Local, err)
	}
	if u.LocalIP != "" && net.ParseIP(u.LocalIP) == nil {
		bad("local_ip %q must be an IP address", u.LocalIP)
	}
	if u.Expires < 0 || u.Keepalive < 0 {
		bad("expires and keepalive must be > 0")
	}
	if u.Expires == 0 {
		u.Expires = Duration(DefaultGBUpExpires)
	}
	if time.Duration(u.Expires) < 2*time.Second {
		bad("expires must be ≥ 2s")
	}
	if u.Keepalive == 0 {
		u.Keepalive = Duration(DefaultGBUpKeepalive)
	}
	if u.AlarmPriority == 0 {
		u.AlarmPriority = DefaultGBUpPriority
	}
	if u.AlarmPriority < 1 || u.AlarmPriority > 4 {
		bad("alarm_priority %d must be 1…4", u.AlarmPriority)
	}
	if len(u.Channels) == 0 {
		bad("channels: name at least one")
	}
	seen := map[string]bool{}
	for j := range u.Channels {
		c := &u.Channels[j]
		if !IsGBID(c.ID) {
			bad("channels[%d]: id %q must be 20 digits", j, c.ID)
		}
		if seen[c.ID] || c.ID == u.DeviceID {
			bad("channels[%d]: id %s repeats", j, c.ID)
		}
		seen[c.ID] = true
		if c.Stream == "" {
			bad("channels[%d]: stream is required", j)
		}
		if c.Name == "" {
			c.Name = c.Stream
		}
	}
	return errors.Join(errs...)
}
