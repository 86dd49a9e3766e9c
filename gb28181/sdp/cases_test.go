package sdp

import (
	"net/netip"
	"strings"
)

type answerCase struct {
	name string
	body string
	err  error
	want Answer // compared without PayloadTypes
}

// cases are the answer parser's table, reused as the fuzzer's seeds. The first answers are
// GB/T 28181-2016 §9.2.2's example and what common cameras send.
var cases = []answerCase{
	{"standard udp", "v=0\r\no=34020000001320000001 0 0 IN IP4 192.168.1.64\r\ns=Play\r\nc=IN IP4 192.168.1.64\r\nt=0 0\r\nm=video 15060 RTP/AVP 96\r\na=sendonly\r\na=rtpmap:96 PS/90000\r\ny=0200000001\r\nf=\r\n", nil,
		Answer{IP: netip.MustParseAddr("192.168.1.64"), Port: 15060, SSRC: 200000001, HasSSRC: true}},
	{"tcp passive answer", "v=0\no=x 0 0 IN IP4 10.0.0.5\ns=Play\nc=IN IP4 10.0.0.5\nt=0 0\nm=video 9 TCP/RTP/AVP 96\na=setup:active\na=connection:new\na=rtpmap:96 PS/90000\ny=0200000002\n", nil,
		Answer{IP: netip.MustParseAddr("10.0.0.5"), Port: 9, TCP: true, Setup: "active", SSRC: 200000002, HasSSRC: true}},
	{"tcp active answer", "v=0\r\nc=IN IP4 10.0.0.6\r\nm=video 40000 TCP/RTP/AVP 96\r\na=setup:passive\r\n", nil,
		Answer{IP: netip.MustParseAddr("10.0.0.6"), Port: 40000, TCP: true, Setup: "passive"}},
	{"media c= wins", "v=0\r\nc=IN IP4 1.1.1.1\r\nm=audio 8000 RTP/AVP 8\r\nc=IN IP4 3.3.3.3\r\nm=video 5000 RTP/AVP 96\r\nc=IN IP4 2.2.2.2\r\n", nil,
		Answer{IP: netip.MustParseAddr("2.2.2.2"), Port: 5000}},
	{"ipv6", "v=0\r\nc=IN IP6 ::1\r\nm=video 5000 RTP/AVP 96\r\n", nil, Answer{IP: netip.MustParseAddr("::1"), Port: 5000}},
	{"no video", "v=0\r\nc=IN IP4 1.1.1.1\r\nm=audio 8000 RTP/AVP 8\r\n", ErrNoVideo, Answer{}},
	{"no v", "c=IN IP4 1.1.1.1\r\nm=video 8000 RTP/AVP 96\r\n", ErrSyntax, Answer{}},
	{"bad line", "v=0\r\nthis is not sdp\r\n", ErrSyntax, Answer{}},
	{"bad port", "v=0\r\nc=IN IP4 1.1.1.1\r\nm=video 99999 RTP/AVP 96\r\n", ErrSyntax, Answer{}},
	{"bad ssrc", "v=0\r\nc=IN IP4 1.1.1.1\r\nm=video 5000 RTP/AVP 96\r\ny=99999999999\r\n", ErrSyntax, Answer{}},
	{"no address", "v=0\r\nm=video 5000 RTP/AVP 96\r\n", ErrAddress, Answer{}},
	{"hostname", "v=0\r\nc=IN IP4 camera.local\r\nm=video 5000 RTP/AVP 96\r\n", ErrAddress, Answer{}},
	{"too large", "v=0\r\n" + strings.Repeat("a=x\r\n", MaxAnswerSize/5+1), ErrAnswerSize, Answer{}},
}
