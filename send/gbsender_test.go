package send

import (
	"context"
	"net"
	"testing"
	"time"

	pionrtp "github.com/pion/rtp"

	"github.com/vinfer/vinfer/media"
)

// TestGBSender: a UDP sender puts the SSRC and payload type it was given on its packets and
// tells the port it sends from; an unknown mode is refused.
func TestGBSender(t *testing.T) {
	rx, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer rx.Close()
	s, err := NewGBSender(context.Background(), "udp", rx.LocalAddr().String(), 100000042, 96, media.CodecH264, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	au := &media.AccessUnit{Codec: media.CodecH264, Key: true, Data: []byte{0, 0, 0, 1, 0x65, 0x88, 0x84, 0x00}}
	if err := s.Write(au); err != nil {
		t.Fatal(err)
	}
	rx.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 2048)
	n, from, err := rx.ReadFrom(buf)
	if err != nil {
		t.Fatal(err)
	}
	var p pionrtp.Packet
	if err := p.Unmarshal(buf[:n]); err != nil {
		t.Fatal(err)
	}
	if p.SSRC != 100000042 || p.PayloadType != 96 || !p.Marker || from.(*net.UDPAddr).Port != s.LocalPort() {
		t.Fatalf("ssrc %d pt %d marker %v from %v (LocalPort %d)", p.SSRC, p.PayloadType, p.Marker, from, s.LocalPort())
	}
	if _, err := NewGBSender(context.Background(), "sctp", "127.0.0.1:9", 1, 96, media.CodecH264, nil); err == nil {
		t.Fatal("mode sctp accepted")
	}
}
