package udpmux

import (
	"encoding/binary"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/vinfer/vinfer/internal/testutil"
)

func rtpPacket(ssrc uint32, seq uint16) []byte {
	b := make([]byte, 16)
	b[0], b[1] = 0x80, 96
	binary.BigEndian.PutUint16(b[2:], seq)
	binary.BigEndian.PutUint32(b[8:], ssrc)
	return b
}

func senderReport(ssrc uint32) []byte {
	b := make([]byte, 28)
	b[0], b[1], b[3] = 0x80, 200, 6
	binary.BigEndian.PutUint32(b[4:], ssrc)
	return b
}

func receive(t *testing.T, s *Sub) *Datagram {
	t.Helper()
	return testutil.Within(t, 10*time.Second, "a datagram", s.C)
}

func TestRouting(t *testing.T) {
	a, err := Subscribe("127.0.0.1:0", 0xA)
	if err != nil {
		t.Fatal(err)
	}
	addr := a.Addr().String()
	b, err := Subscribe(addr, 0xB)
	if err != nil {
		t.Fatal(err)
	}
	anyS, err := Subscribe(addr, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Subscribe(addr, 0xB); !errors.Is(err, ErrTaken) {
		t.Fatalf("second subscriber of an SSRC: %v", err)
	}
	if _, err := Subscribe(addr, 0); !errors.Is(err, ErrTaken) {
		t.Fatalf("second catch-all: %v", err)
	}
	conn, err := net.Dial("udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	send := func(p []byte) {
		if _, err := conn.Write(p); err != nil {
			t.Fatal(err)
		}
	}
	send(rtpPacket(0xB, 1))
	send(rtpPacket(0xA, 2))
	send(rtpPacket(0xC, 3))
	send(senderReport(0xA))
	send([]byte{1, 2, 3}) // garbage

	if d := receive(t, b); d.RTCP || binary.BigEndian.Uint16(d.Bytes()[2:]) != 1 {
		t.Fatalf("SSRC B got %x", d.Bytes())
	} else {
		b.Release(d)
	}
	if d := receive(t, a); binary.BigEndian.Uint16(d.Bytes()[2:]) != 2 {
		t.Fatalf("SSRC A got %x", d.Bytes())
	}
	if d := receive(t, anyS); binary.BigEndian.Uint16(d.Bytes()[2:]) != 3 {
		t.Fatalf("catch-all got %x", d.Bytes())
	}
	if d := receive(t, a); !d.RTCP {
		t.Fatalf("SSRC A expected its sender report, got %x", d.Bytes())
	}
	testutil.Eventually(t, 10*time.Second, "the garbage datagram counted", func() bool { return anyS.Garbage() > 0 })
	if anyS.Garbage() != 1 || a.Garbage() != 0 {
		t.Fatalf("garbage: catch-all %d, A %d", anyS.Garbage(), a.Garbage())
	}

	// the port closes with its last subscriber and can be opened again
	a.Close()
	b.Close()
	anyS.Close()
	anyS.Close()
	again, err := Subscribe(addr, 0xA)
	if err != nil {
		t.Fatalf("reopening: %v", err)
	}
	again.Close()
}

func TestOverflow(t *testing.T) {
	s, err := Subscribe("127.0.0.1:0", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	conn, err := net.Dial("udp", s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for i := range QueueLen + 100 { // nobody reads
		conn.Write(rtpPacket(1, uint16(i))) //nolint:errcheck
		if i%64 == 0 {
			time.Sleep(time.Millisecond) // stay within the socket buffer
		}
	}
	testutil.Eventually(t, 10*time.Second, "an overflow counted", func() bool { return s.Overflow() > 0 })
}

func BenchmarkRoute(b *testing.B) {
	s, err := Subscribe("127.0.0.1:0", 7)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	p := rtpPacket(7, 1)
	p = append(p, make([]byte, 1384)...)
	b.ReportAllocs()
	for b.Loop() {
		s.port.route(p, s.Addr(), time.Time{})
		s.Release(<-s.C)
	}
}
