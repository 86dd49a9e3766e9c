package onvif

import (
	"context"
	"crypto/rand"
	"encoding/xml"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"
)

// Multicast is WS-Discovery's IPv4 group and port (WS-Discovery 2005/04 §2.4; ONVIF Core §7.3).
const Multicast = "239.255.255.250:3702"

// MaxDevices bounds the devices one probe collects.
const MaxDevices = 256

// Discovered is a device that answered a probe.
type Discovered struct {
	// Endpoint is its endpoint reference (urn:uuid:…), unique per device.
	Endpoint string `json:"endpoint"`
	// XAddrs are its device service addresses (http only, at most 8).
	XAddrs []string `json:"xaddrs"`
	// Name and Hardware are from its onvif://www.onvif.org/name/… and /hardware/… scopes.
	Name     string `json:"name,omitempty"`
	Hardware string `json:"hardware,omitempty"`
	// From is the address the answer came from.
	From string `json:"from"`
}

// ErrProbe is returned when the probe could not be sent.
var ErrProbe = errors.New("onvif: WS-Discovery probe")

// Probe sends a WS-Discovery Probe for NetworkVideoTransmitters to target (host:port; ""
// is Multicast, the local segment) and collects the ProbeMatches answering it (by RelatesTo)
// for window, then returns them, one per endpoint (at most MaxDevices). Answers that do not
// parse or answer another probe are ignored.
func Probe(ctx context.Context, target string, window time.Duration) ([]Discovered, error) {
	if target == "" {
		target = Multicast
	}
	to, err := net.ResolveUDPAddr("udp4", target)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrProbe, err)
	}
	conn, err := net.ListenUDP("udp4", &net.UDPAddr{})
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrProbe, err)
	}
	defer conn.Close()
	id := uuid()
	if _, err := conn.WriteToUDP(probeMessage(id), to); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrProbe, err)
	}
	deadline := time.Now().Add(window)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	conn.SetReadDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { conn.SetReadDeadline(time.Now()) })
	defer stop()
	var out []Discovered
	seen := map[string]bool{}
	buf := make([]byte, 64<<10)
	for len(out) < MaxDevices {
		n, from, err := conn.ReadFromUDP(buf)
		if err != nil {
			break // the window ended (or ctx)
		}
		for _, d := range parseMatches(buf[:n], id) {
			if !seen[d.Endpoint] && len(out) < MaxDevices {
				seen[d.Endpoint] = true
				d.From = from.String()
				out = append(out, d)
			}
		}
	}
	return out, nil
}

// probeMessage is a Probe for dn:NetworkVideoTransmitter with message id.
func probeMessage(id string) []byte {
	return []byte(`<?xml version="1.0" encoding="UTF-8"?><s:Envelope xmlns:s="` + nsSOAP +
		`" xmlns:a="http://schemas.xmlsoap.org/ws/2004/08/addressing" xmlns:d="http://schemas.xmlsoap.org/ws/2005/04/discovery"` +
		` xmlns:dn="http://www.onvif.org/ver10/network/wsdl"><s:Header>` +
		`<a:Action s:mustUnderstand="1">http://schemas.xmlsoap.org/ws/2005/04/discovery/Probe</a:Action>` +
		`<a:MessageID>` + id + `</a:MessageID><a:ReplyTo><a:Address>http://schemas.xmlsoap.org/ws/2004/08/addressing/role/anonymous</a:Address></a:ReplyTo>` +
		`<a:To s:mustUnderstand="1">urn:schemas-xmlsoap-org:ws:2005:04:discovery</a:To></s:Header>` +
		`<s:Body><d:Probe><d:Types>dn:NetworkVideoTransmitter</d:Types></d:Probe></s:Body></s:Envelope>`)
}

// parseMatches returns the devices of a ProbeMatches answering probe id.
func parseMatches(b []byte, id string) []Discovered {
	var env struct {
		RelatesTo string `xml:"Header>RelatesTo"`
		Matches   []struct {
			Address string `xml:"EndpointReference>Address"`
			Types   string `xml:"Types"`
			Scopes  string `xml:"Scopes"`
			XAddrs  string `xml:"XAddrs"`
		} `xml:"Body>ProbeMatches>ProbeMatch"`
	}
	if xml.Unmarshal(b, &env) != nil || strings.TrimSpace(env.RelatesTo) != id {
		return nil
	}
	var out []Discovered
	for _, m := range env.Matches {
		d := Discovered{Endpoint: strings.TrimSpace(m.Address)}
		for _, x := range strings.Fields(m.XAddrs) {
			if u, err := url.Parse(x); err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" && u.User == nil && len(d.XAddrs) < 8 {
				d.XAddrs = append(d.XAddrs, u.String())
			}
		}
		for _, s := range strings.Fields(m.Scopes) {
			if v, ok := strings.CutPrefix(s, "onvif://www.onvif.org/name/"); ok {
				d.Name, _ = url.PathUnescape(v)
			}
			if v, ok := strings.CutPrefix(s, "onvif://www.onvif.org/hardware/"); ok {
				d.Hardware, _ = url.PathUnescape(v)
			}
		}
		if d.Endpoint != "" && len(d.XAddrs) > 0 && len(d.Endpoint) <= 256 && len(d.Name) <= 256 && len(d.Hardware) <= 256 {
			out = append(out, d)
		}
	}
	return out
}

// uuid returns a random urn:uuid (RFC 4122 version 4).
func uuid() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("urn:uuid:%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
