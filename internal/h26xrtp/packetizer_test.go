package h26xrtp

import (
	"testing"
	"time"

	"github.com/bluenviron/gortsplib/v5/pkg/format/rtph264"

	"github.com/vinfer/vinfer/media"
)

func TestPacketsTimestampAndMarker(t *testing.T) {
	p := &Packetizer{H264: &rtph264.Encoder{PayloadType: 96, PacketizationMode: 1}, TS0: 1000}
	if err := p.H264.Init(); err != nil {
		t.Fatal(err)
	}
	au := &media.AccessUnit{Data: []byte{0, 0, 0, 1, 0x67, 1, 2, 0, 0, 0, 1, 0x65, 3, 4}, PTS: time.Second}
	pkts, err := p.Packets(au)
	if err != nil || len(pkts) == 0 {
		t.Fatalf("packets %d, err %v", len(pkts), err)
	}
	for i, k := range pkts {
		if k.Timestamp != 1000+90000 {
			t.Errorf("packet %d timestamp %d, want %d", i, k.Timestamp, 1000+90000)
		}
		if k.Marker != (i == len(pkts)-1) {
			t.Errorf("packet %d marker %v", i, k.Marker)
		}
	}
	if pkts, err := p.Packets(&media.AccessUnit{}); pkts != nil || err != nil {
		t.Errorf("empty unit: %d packets, err %v", len(pkts), err)
	}
}
