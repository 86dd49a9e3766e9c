package onvifmeta

import (
	"bytes"
	"testing"
	"time"
)

// TestMetaPackets: a document is cut into packets of at most payloadMax bytes in order, all
// with the frame's 90 kHz timestamp, consecutive sequence numbers, the marker on the last only.
func TestMetaPackets(t *testing.T) {
	p := &metaPayloader{ts0: 4294967000, seq: 65535}
	doc := bytes.Repeat([]byte("<tt:Object/>"), 300) // 3600 bytes
	pkts := p.packets(doc, 2*time.Second)
	if len(pkts) != 3 {
		t.Fatalf("%d packets, want 3", len(pkts))
	}
	var joined []byte
	for i, k := range pkts {
		if k.Timestamp != uint32(4294967000+180000-1<<32) || k.SequenceNumber != uint16(65535+i) || k.Marker != (i == 2) ||
			k.PayloadType != metaPT || len(k.Payload) > payloadMax {
			t.Fatalf("packet %d: %+v", i, k.Header)
		}
		joined = append(joined, k.Payload...)
	}
	if !bytes.Equal(joined, doc) {
		t.Fatal("payloads do not join into the document")
	}
	if next := p.packets([]byte("<x/>"), 0); len(next) != 1 || next[0].SequenceNumber != 2 || !next[0].Marker {
		t.Fatalf("next document: %+v", next[0].Header)
	}
}
