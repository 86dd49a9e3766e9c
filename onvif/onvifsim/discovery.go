package onvifsim

import (
	"encoding/xml"
	"fmt"
	"net"
	"strings"
	"testing"
)

// Responder answers WS-Discovery probes for NetworkVideoTransmitters with the device's
// ProbeMatch (WS-Discovery 2005/04 §5.3; ONVIF Core §7.3.2), sent to the prober's address.
type Responder struct {
	d     *Device
	conns []*net.UDPConn
}

// Discover answers probes sent to a loopback UDP port (the unicast probe: Addr) and, when
// multicast is true and the machine can join the group on an interface, to
// 239.255.255.250:3702; MulticastOK reports whether it joined.
func (d *Device) Discover(t testing.TB, multicast bool) *Responder {
	t.Helper()
	r := &Responder{d: d}
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	r.conns = append(r.conns, c)
	if multicast {
		group := &net.UDPAddr{IP: net.IPv4(239, 255, 255, 250), Port: 3702}
		if mc, err := net.ListenMulticastUDP("udp4", nil, group); err == nil {
			r.conns = append(r.conns, mc)
		} else {
			t.Logf("no multicast here: %v", err)
		}
	}
	for _, c := range r.conns {
		go r.serve(c)
	}
	t.Cleanup(func() {
		for _, c := range r.conns {
			c.Close()
		}
	})
	return r
}

// Addr is the unicast probe address.
func (r *Responder) Addr() string { return r.conns[0].LocalAddr().String() }

// MulticastOK reports whether the responder joined the multicast group.
func (r *Responder) MulticastOK() bool { return len(r.conns) > 1 }

func (r *Responder) serve(c *net.UDPConn) {
	buf := make([]byte, 64<<10)
	for {
		n, from, err := c.ReadFromUDP(buf)
		if err != nil {
			return
		}
		var probe struct {
			MessageID string `xml:"Header>MessageID"`
			Action    string `xml:"Header>Action"`
			Types     string `xml:"Body>Probe>Types"`
		}
		if xml.Unmarshal(buf[:n], &probe) != nil || !strings.HasSuffix(strings.TrimSpace(probe.Action), "/discovery/Probe") ||
			(probe.Types != "" && !strings.Contains(probe.Types, "NetworkVideoTransmitter")) {
			continue
		}
		reply := fmt.Sprintf(`<?xml version="1.0" encoding="UTF-8"?><SOAP-ENV:Envelope xmlns:SOAP-ENV="http://www.w3.org/2003/05/soap-envelope" `+
			`xmlns:wsa="http://schemas.xmlsoap.org/ws/2004/08/addressing" xmlns:d="http://schemas.xmlsoap.org/ws/2005/04/discovery" `+
			`xmlns:dn="http://www.onvif.org/ver10/network/wsdl"><SOAP-ENV:Header>`+
			`<wsa:MessageID>urn:uuid:0c9b2f3e-3e46-4d2c-a7c8-%012x</wsa:MessageID><wsa:RelatesTo>%s</wsa:RelatesTo>`+
			`<wsa:To>http://schemas.xmlsoap.org/ws/2004/08/addressing/role/anonymous</wsa:To>`+
			`<wsa:Action>http://schemas.xmlsoap.org/ws/2005/04/discovery/ProbeMatches</wsa:Action></SOAP-ENV:Header>`+
			`<SOAP-ENV:Body><d:ProbeMatches><d:ProbeMatch><wsa:EndpointReference><wsa:Address>%s</wsa:Address></wsa:EndpointReference>`+
			`<d:Types>dn:NetworkVideoTransmitter</d:Types><d:Scopes>onvif://www.onvif.org/type/video_encoder onvif://www.onvif.org/Profile/Streaming `+
			`onvif://www.onvif.org/name/%s onvif://www.onvif.org/hardware/SimCam-1 onvif://www.onvif.org/location/test</d:Scopes>`+
			`<d:XAddrs>%s</d:XAddrs><d:MetadataVersion>1</d:MetadataVersion></d:ProbeMatch></d:ProbeMatches></SOAP-ENV:Body></SOAP-ENV:Envelope>`,
			n, esc(strings.TrimSpace(probe.MessageID)), esc(r.d.Endpoint), esc(r.d.Name), esc(r.d.XAddr()))
		c.WriteToUDP([]byte(reply), from)
	}
}
