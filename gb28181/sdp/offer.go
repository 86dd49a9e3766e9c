// Package sdp writes the SDP offer of a GB28181 live-view INVITE and reads the device's answer
// (RFC 4566, with GB/T 28181-2016 §9.2 and Annex F: the y= line carrying the SSRC, the f= line
// describing the media, and RFC 4145/4571 for media over TCP). It also allocates SSRCs by the
// standard's rules (ssrc.go).
package sdp

import (
	"fmt"
	"net/netip"
)

// Transports of the media (the stream's transport= parameter).
const (
	TransportUDP        = "udp"         // m=video PORT RTP/AVP 96
	TransportTCPPassive = "tcp-passive" // TCP/RTP/AVP, a=setup:passive: vinfer listens, the camera connects
	TransportTCPActive  = "tcp-active"  // TCP/RTP/AVP, a=setup:active: vinfer connects to the camera
)

// Offer is a platform's offer to receive live video (GB/T 28181-2016 §9.2.2, Annex F).
type Offer struct {
	// Origin is the o= user: the platform's SIP ID.
	Origin string
	// IP is where the camera sends media (c=): vinfer's media IP.
	IP netip.Addr
	// Port is the media port (m=); 9 (discard) for TransportTCPActive, where vinfer connects.
	Port int
	// Transport is one of the Transport constants.
	Transport string
	// SSRC is the 10-digit decimal y= value (SSRC.String).
	SSRC string
}

// Marshal writes the offer: PS (96), with H.264 (98) and MPEG-4 (97) listed as the standard's
// example does, recvonly.
func (o *Offer) Marshal() []byte {
	proto, setup := "RTP/AVP", ""
	switch o.Transport {
	case TransportTCPPassive:
		proto, setup = "TCP/RTP/AVP", "a=setup:passive\r\na=connection:new\r\n"
	case TransportTCPActive:
		proto, setup = "TCP/RTP/AVP", "a=setup:active\r\na=connection:new\r\n"
	}
	ipv := "IP4"
	if o.IP.Is6() && !o.IP.Is4In6() {
		ipv = "IP6"
	}
	ip := o.IP.Unmap().String()
	return fmt.Appendf(nil, "v=0\r\n"+
		"o=%s 0 0 IN %s %s\r\n"+
		"s=Play\r\n"+
		"c=IN %s %s\r\n"+
		"t=0 0\r\n"+
		"m=video %d %s 96 98 97\r\n"+
		"a=recvonly\r\n"+
		"a=rtpmap:96 PS/90000\r\n"+
		"a=rtpmap:98 H264/90000\r\n"+
		"a=rtpmap:97 MPEG4/90000\r\n"+
		"%s"+
		"y=%s\r\n",
		o.Origin, ipv, ip, ipv, ip, o.Port, proto, setup, o.SSRC)
}
