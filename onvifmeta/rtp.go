package onvifmeta

import (
	"crypto/rand"
	"encoding/binary"
	"time"

	"github.com/bluenviron/gortsplib/v5/pkg/format"
	pionrtp "github.com/pion/rtp"
)

// payloadMax is the most RTP payload bytes per packet: a packet with its IP, UDP and RTP
// headers stays under a 1500-byte MTU.
const payloadMax = 1400

// MetadataRTPMap is the metadata track's SDP rtpmap encoding name and clock rate (ONVIF
// Streaming Specification §5.2.1.1).
const MetadataRTPMap = "vnd.onvif.metadata/90000"

// metaPT is the metadata track's dynamic RTP payload type.
const metaPT = 107

// newMetadataFormat is the metadata track's SDP format.
func newMetadataFormat() (*format.Generic, error) {
	f := &format.Generic{PayloadTyp: metaPT, RTPMa: MetadataRTPMap}
	return f, f.Init()
}

// metaPayloader cuts metadata documents into RTP packets: the document's bytes in order, at
// most payloadMax a packet, the marker on the last; all with the frame's 90 kHz timestamp.
type metaPayloader struct {
	ts0 uint32
	seq uint16
}

func newMetaPayloader() *metaPayloader {
	return &metaPayloader{ts0: random32(), seq: uint16(random32())}
}

// packets returns doc's packets at presentation time pts; they alias doc.
func (p *metaPayloader) packets(doc []byte, pts time.Duration) []*pionrtp.Packet {
	n := (len(doc) + payloadMax - 1) / payloadMax
	pkts := make([]*pionrtp.Packet, 0, n)
	ts := p.ts0 + ticks90k(pts)
	for len(doc) > 0 {
		k := min(len(doc), payloadMax)
		pkts = append(pkts, &pionrtp.Packet{
			Header:  pionrtp.Header{Version: 2, PayloadType: metaPT, SequenceNumber: p.seq, Timestamp: ts, Marker: k == len(doc)},
			Payload: doc[:k],
		})
		p.seq++
		doc = doc[k:]
	}
	return pkts
}

// ticks90k is d in 90 kHz RTP clock ticks, wrapping.
func ticks90k(d time.Duration) uint32 { return uint32(int64(d) * 9 / 100000) }

// random32 is a random 32-bit value (RFC 3550 §5.1 initial timestamp and sequence).
func random32() uint32 {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return binary.BigEndian.Uint32(b[:])
}
