package ffmpeg

import (
	"bytes"
	"testing"

	"github.com/asticode/go-astiav"
)

func TestCheckLayout(t *testing.T) {
	if err := CheckLayout(); err != nil {
		t.Fatal(err)
	}
}

func TestPacketData(t *testing.T) {
	p := astiav.AllocPacket()
	defer p.Free()
	if PacketData(p) != nil {
		t.Fatal("empty packet has data")
	}
	want := []byte{0, 0, 0, 1, 0x65, 0x88, 0x84}
	if err := p.FromData(want); err != nil {
		t.Fatal(err)
	}
	got := PacketData(p)
	if !bytes.Equal(got, want) {
		t.Fatalf("% x, want % x", got, want)
	}
	// a view, not a copy: it sees writes through astiav's own copy
	if &got[0] == &want[0] {
		t.Fatal("PacketData returned the Go slice")
	}
	if allocs := testing.AllocsPerRun(100, func() { _ = PacketData(p) }); allocs != 0 {
		t.Fatalf("%v allocations", allocs)
	}
}

func TestReceiveWithoutInput(t *testing.T) {
	cc := astiav.AllocCodecContext(astiav.FindDecoder(astiav.CodecIDH264))
	defer cc.Free()
	if err := cc.Open(astiav.FindDecoder(astiav.CodecIDH264), nil); err != nil {
		t.Fatal(err)
	}
	f := astiav.AllocFrame()
	defer f.Free()
	st, err := ReceiveFrame(cc, f)
	if st != Again || err != nil {
		t.Fatalf("ReceiveFrame on an empty decoder: %v, %v", st, err)
	}
	if allocs := testing.AllocsPerRun(100, func() { _, _ = ReceiveFrame(cc, f) }); allocs != 0 {
		t.Fatalf("%v allocations per EAGAIN", allocs)
	}
	pkt := astiav.AllocPacket()
	defer pkt.Free()
	if st, err := SendPacket(cc, pkt, nil, 0, 0, 0); st != OK || err != nil {
		t.Fatalf("end of stream: %v, %v", st, err)
	}
	if st, err := ReceiveFrame(cc, f); st != EOF || err != nil {
		t.Fatalf("ReceiveFrame after end of stream: %v, %v", st, err)
	}
	FlushDecoder(cc)
	if st, err := ReceiveFrame(cc, f); st != Again || err != nil {
		t.Fatalf("ReceiveFrame after flush: %v, %v", st, err)
	}
}
