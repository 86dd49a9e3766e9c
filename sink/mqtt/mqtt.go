// Package mqtt is the mqtt sink: events and detections published to an MQTT broker (3.1.1
// through eclipse/paho.mqtt.golang, 5 through eclipse/paho.golang's autopaho), behind the
// sink's durable outbox (package brokered).
//
// Topics: <prefix>/<stream>/events (every event), <prefix>/<stream>/detections (sampled
// detections), <prefix>/<stream>/<zone or line>/count (retained: the zone's or line's counts,
// published when an event changes them; see brokered's count records), and
// <prefix>/available: "online" (retained) once connected, "offline" (retained) on Close or,
// through the last will, when the connection is lost. QoS 1 by
// default: a message counts as delivered on the broker's PUBACK. Up to MaxInflight messages
// are in flight at once (MQTT 5: concurrently, so their order within one delivery attempt may
// vary; order by the event id or time). With discovery: homeassistant, Home Assistant's MQTT
// discovery configs and per-stream topics besides (hass.go, docs/homeassistant.md).
package mqtt

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/deliver"
	"github.com/vinfer/vinfer/outbox"
	"github.com/vinfer/vinfer/sink"
	"github.com/vinfer/vinfer/sink/brokered"
)

// Settings are the mqtt sink's settings.
type Settings struct {
	brokered.Settings `yaml:",inline"`
	// URL is the broker: mqtt://host:1883, or mqtts://host:8883 for TLS.
	URL string `yaml:"url"`
	// Protocol is "3.1.1" (the default: every broker has it) or "5".
	Protocol string `yaml:"protocol"`
	// Prefix is the topics' first level(s) (default vinfer).
	Prefix string `yaml:"prefix"`
	// QoS is 0, 1 (the default) or 2.
	QoS *int `yaml:"qos"`
	// ClientID is the MQTT client id (default vinfer-<name>).
	ClientID string `yaml:"client_id"`
	// Username and Password authenticate.
	Username string `yaml:"username"`
	Password string `yaml:"password"`
	// Counts publishes the retained count topics (default true).
	Counts *bool `yaml:"counts"`
	// MaxInflight bounds the messages awaiting their acknowledgement (default 32).
	MaxInflight int `yaml:"max_inflight"`
	// TLS configures the connection's TLS (CA, client certificate), with mqtts://.
	TLS *brokered.TLS `yaml:"tls"`
	// Discovery is "homeassistant" for Home Assistant's MQTT discovery (hass.go,
	// docs/homeassistant.md), or empty.
	Discovery string `yaml:"discovery"`
	// DiscoveryPrefix is Home Assistant's discovery prefix (default homeassistant).
	DiscoveryPrefix string `yaml:"discovery_prefix"`
}

// Errors.
var (
	ErrURL          = errors.New("mqtt: url must be mqtt://host:port or mqtts://host:port")
	ErrProtocol     = errors.New("mqtt: protocol must be 3.1.1 or 5")
	ErrQoS          = errors.New("mqtt: qos must be 0, 1 or 2")
	ErrPrefix       = errors.New("mqtt: prefix must not be empty or hold '+', '#' or a leading '$'")
	ErrNotConnected = errors.New("mqtt: not connected")
)

// Kind is the mqtt sink: {type: mqtt, url: mqtt://…, protocol, prefix, qos, username, tls, …}.
var Kind = sink.Kind{Type: "mqtt", Open: Open}

// client is one protocol version's connection.
type client interface {
	// publish sends msgs and returns how many, from the first, the broker acknowledged.
	publish(ctx context.Context, msgs []message) (int, error)
	close() error
}

type message struct {
	topic   string
	payload []byte
	retain  bool
}

// Open decodes decl and opens the sink. It does not wait for the broker: an unreachable broker
// is retried in the background (the sink's stats show it down).
func Open(decl config.Sink, env sink.Env) (sink.Sink, error) {
	var s Settings
	if err := decl.Decode(&s); err != nil {
		return nil, err
	}
	u, err := url.Parse(s.URL)
	if err != nil || (u.Scheme != "mqtt" && u.Scheme != "mqtts" && u.Scheme != "tcp" && u.Scheme != "ssl") || u.Host == "" {
		return nil, ErrURL
	}
	if u.User != nil {
		return nil, fmt.Errorf("%w (credentials go in username and password, not in the url)", ErrURL)
	}
	if s.Protocol == "" {
		s.Protocol = "3.1.1"
	}
	if s.Protocol != "3.1.1" && s.Protocol != "5" {
		return nil, fmt.Errorf("%w (have %q)", ErrProtocol, s.Protocol)
	}
	if s.Prefix == "" {
		s.Prefix = "vinfer"
	}
	if strings.ContainsAny(s.Prefix, "+#") || strings.HasPrefix(s.Prefix, "$") {
		return nil, fmt.Errorf("%w (have %q)", ErrPrefix, s.Prefix)
	}
	qos := 1
	if s.QoS != nil {
		qos = *s.QoS
	}
	if qos < 0 || qos > 2 {
		return nil, ErrQoS
	}
	if s.MaxInflight <= 0 {
		s.MaxInflight = 32
	}
	s.Settings.Counts = s.Counts == nil || *s.Counts
	if err := s.checkDiscovery(); err != nil {
		return nil, err
	}
	tlsConf, err := s.TLS.Config(env.Dir)
	if err != nil {
		return nil, fmt.Errorf("mqtt: %w", err)
	}
	k, err := brokered.Open("mqtt", &s.Settings, env, func() (deliver.Publisher, error) {
		if s.ClientID == "" {
			s.ClientID = "vinfer-" + s.Name
		}
		o := options{url: u, qos: byte(qos), clientID: s.ClientID, username: s.Username, password: s.Password,
			tls: tlsConf, available: s.Prefix + "/available", inflight: s.MaxInflight, log: env.Log}
		var c client
		if s.Protocol == "5" {
			c, err = newV5(o)
		} else {
			c, err = newV3(o)
		}
		if err != nil {
			return nil, err
		}
		return &publisher{c: c, prefix: s.Prefix}, nil
	})
	if err != nil || s.Discovery == "" {
		return k, err
	}
	log := env.Log
	h := newHass(k, s.DiscoveryPrefix, s.Prefix, qos, func(err error) {
		if log != nil {
			log.Warn("mqtt: home assistant discovery not queued", "sink", k.Name(), "error", err)
		}
	})
	return &hassSink{Sink: k, h: h}, nil
}

// checkDiscovery checks the discovery settings and fills their defaults.
func (s *Settings) checkDiscovery() error {
	if s.Discovery == "" {
		return nil
	}
	if s.Discovery != Discovery {
		return fmt.Errorf("%w (have %q)", ErrDiscovery, s.Discovery)
	}
	if !s.Settings.Counts {
		return ErrDiscoveryCounts
	}
	if s.DiscoveryPrefix == "" {
		s.DiscoveryPrefix = Discovery
	}
	if len(s.DiscoveryPrefix) > 64 || strings.ContainsAny(s.DiscoveryPrefix, "+#") || strings.HasPrefix(s.DiscoveryPrefix, "$") {
		return fmt.Errorf("%w (have %q)", ErrDiscoveryPrefix, s.DiscoveryPrefix)
	}
	return nil
}

// Topic returns the topic of a record of stream, kind and type under prefix.
func Topic(prefix string, stream []byte, k brokered.Kind) string {
	if k == brokered.KindDetections {
		return prefix + "/" + string(stream) + "/detections"
	}
	return prefix + "/" + string(stream) + "/events"
}

// CountTopic returns the retained count topic of zone or line name in stream under prefix:
// <prefix>/<stream>/<level>/count, where level is name with '/', '+', '#', '%', control
// characters (U+0000–U+001F, U+007F) and the bytes of invalid UTF-8 percent-encoded as
// %XX (RFC 3986 style, uppercase hex), so that distinct names give distinct topics and
// url.PathUnescape(level) gives name back.
func CountTopic(prefix string, stream, name []byte) string {
	return prefix + "/" + string(stream) + "/" + countLevel(name) + "/count"
}

func countLevel(name []byte) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	b.Grow(len(name))
	for i := 0; i < len(name); {
		r, n := utf8.DecodeRune(name[i:])
		if (r == utf8.RuneError && n == 1) || r < 0x20 || r == 0x7f || r == '/' || r == '+' || r == '#' || r == '%' {
			c := name[i]
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
			i++
			continue
		}
		b.Write(name[i : i+n])
		i += n
	}
	return b.String()
}

// publisher turns records into messages for its client.
type publisher struct {
	c      client
	prefix string
	msgs   []message
	first  []int          // index in recs of the record that made each message
	counts map[string]int // retained topic (counts, discovery) → its message in msgs
}

// Publish implements deliver.Publisher. Of several count or retained records for one topic in
// recs, one message goes out, at the first one's place with the last one's payload: the
// retained value never goes back, also with MQTT 5's concurrent publishes.
func (p *publisher) Publish(ctx context.Context, recs []outbox.Record) (int, error) {
	p.msgs, p.first = p.msgs[:0], p.first[:0]
	clear(p.counts)
	var bad error
	read := len(recs)
	for i, r := range recs {
		d, err := brokered.Decode(r.Data)
		if err != nil {
			bad, read = fmt.Errorf("%w: %v", deliver.ErrUndeliverable, err), i
			break
		}
		if d.Kind == brokered.KindCount || d.Kind == brokered.KindRetained {
			topic := string(d.Type)
			if d.Kind == brokered.KindCount {
				topic = CountTopic(p.prefix, d.Stream, d.Type)
			}
			if j, ok := p.counts[topic]; ok {
				p.msgs[j].payload = d.Body
				continue
			}
			if p.counts == nil {
				p.counts = map[string]int{}
			}
			p.counts[topic] = len(p.msgs)
			p.msgs = append(p.msgs, message{topic: topic, payload: d.Body, retain: true})
		} else {
			p.msgs = append(p.msgs, message{topic: Topic(p.prefix, d.Stream, d.Kind), payload: d.Body})
		}
		p.first = append(p.first, i)
	}
	n, err := p.c.publish(ctx, p.msgs)
	if n < len(p.msgs) {
		// Records from the first unacknowledged message's on are retried; a count record merged
		// into an acknowledged message is sent again, which only repeats its value.
		read = p.first[n]
	}
	if err != nil {
		return read, err
	}
	if bad != nil {
		return read, bad
	}
	return len(recs), nil
}

// Close publishes "offline" and disconnects.
func (p *publisher) Close() error { return p.c.close() }

// lastError keeps a connection's latest connection error.
type lastError struct {
	mu  sync.Mutex
	err error
}

func (l *lastError) set(err error) {
	l.mu.Lock()
	l.err = err
	l.mu.Unlock()
}

// notConnected returns ErrNotConnected with the latest connection error.
func (l *lastError) notConnected() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return fmt.Errorf("%w: %v", ErrNotConnected, l.err)
	}
	return ErrNotConnected
}
