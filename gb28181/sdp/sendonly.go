package sdp

import (
	"fmt"
	"net/netip"
)

// SendAnswer is a lower platform's answer to an upper platform's live-view INVITE (GB/T
// 28181-2016 §9.2.2, Annex F): it sends PS (payload type 96) from IP:Port with SSRC.
type SendAnswer struct {
	// Origin is the o= user: the channel's ID.
	Origin string
	// IP and Port: where media leaves from (UDP, TCP active) or where vinfer listens (TCP
	// passive; Port 9 for TCP active, RFC 4145 §4).
	IP   netip.Addr
	Port int
	// Transport is one of the Transport constants, from vinfer's side: TransportTCPActive
	// when vinfer connects (the offer said a=setup:passive).
	Transport string
	// SSRC is the offer's y= value, echoed as 10 decimal digits.
	SSRC uint32
}

// Marshal writes the answer: sendonly, PS over RTP/AVP or TCP/RTP/AVP with a=setup.
func (a *SendAnswer) Marshal() []byte {
	proto, setup := "RTP/AVP", ""
	switch a.Transport {
	case TransportTCPPassive:
		proto, setup = "TCP/RTP/AVP", "a=setup:passive\r\na=connection:new\r\n"
	case TransportTCPActive:
		proto, setup = "TCP/RTP/AVP", "a=setup:active\r\na=connection:new\r\n"
	}
	ipv := "IP4"
	if a.IP.Is6() && !a.IP.Is4In6() {
		ipv = "IP6"
	}
	ip := a.IP.Unmap().String()
	return fmt.Appendf(nil, "v=0\r\n"+
		"o=%s 0 0 IN %s %s\r\n"+
		"s=Play\r\n"+
		"c=IN %s %s\r\n"+
		"t=0 0\r\n"+
		"m=video %d %s 96\r\n"+
		"a=sendonly\r\n"+
		"a=rtpmap:96 PS/90000\r\n"+
		"%s"+
		"y=%010d\r\n"+
		"f=\r\n",
		a.Origin, ipv, ip, ipv, ip, a.Port, proto, setup, a.SSRC)
}
