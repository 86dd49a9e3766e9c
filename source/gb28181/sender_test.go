package gb28181

import (
	"net"
	"sync"
	"testing"
	"time"

	pionrtp "github.com/pion/rtp"

	"github.com/vinfer/vinfer/internal/sourcetest"
	"github.com/vinfer/vinfer/source/gb28181/ps"
	"github.com/vinfer/vinfer/source/rtp"
)

// sender is a GB28181-style camera in the test: each frame of a clip is muxed into an MPEG-2
// program stream (ps.Muxer, GB/T 28181-2016 Annex C) and cut into RTP packets of at most 1400
// bytes of payload type 96, one timestamp per frame and the marker on its last packet.
type sender struct {
	clip  *sourcetest.Clip
	mux   ps.Muxer
	ssrc  uint32
	seq   uint16
	ts0   uint32
	rate  float64 // times real time
	shift int64   // added to the clip's timestamps (90 kHz)
	// skew, when set, gives what is added to sample i's PS timestamps (SCR, PTS, DTS) and to
	// its RTP timestamp, on top of shift (90 kHz): a device clock's outliers
	skew  func(i int) (ps, rtp int64)
	frame []byte
	pkt   pionrtp.Packet
}

func newSender(c *sourcetest.Clip, ssrc uint32, q ps.Quirks) *sender {
	return &sender{clip: c, mux: ps.Muxer{Codec: c.Codec, Quirks: q}, ssrc: ssrc, seq: uint16(ssrc), ts0: ssrc * 7, rate: 8}
}

// packets returns the RTP packets of sample i.
func (s *sender) packets(i int) [][]byte {
	smp := s.clip.Samples[i]
	var psSkew, rtpSkew int64
	if s.skew != nil {
		psSkew, rtpSkew = s.skew(i)
	}
	s.frame = s.mux.Frame(s.frame[:0], s.clip.AnnexB(i), smp.PTS+90000+s.shift+psSkew, smp.DTS+90000+s.shift+psSkew, smp.Key)
	var out [][]byte
	for b := s.frame; len(b) > 0; {
		n := min(len(b), 1400)
		s.pkt = pionrtp.Packet{Header: pionrtp.Header{
			Version: 2, PayloadType: 96, SequenceNumber: s.seq, Timestamp: s.ts0 + uint32(smp.DTS+s.shift+rtpSkew),
			SSRC: s.ssrc, Marker: n == len(b),
		}, Payload: b[:n]}
		raw, err := s.pkt.Marshal()
		if err != nil {
			panic(err)
		}
		out = append(out, raw)
		s.seq++
		b = b[n:]
	}
	return out
}

// run sends samples from..to-1 at the sender's rate through write, in the background. write
// returns false to stop. The returned function waits for the end.
func (s *sender) run(from, to int, write func([]byte) bool) (wait func()) {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		start := time.Now()
		base := s.clip.Samples[from].DTS
		for i := from; i < to; i++ {
			at := start.Add(time.Duration(float64(s.clip.Samples[i].DTS-base) / 90000 / s.rate * float64(time.Second)))
			time.Sleep(time.Until(at))
			for _, p := range s.packets(i) {
				if !write(p) {
					return
				}
			}
		}
	}()
	return wg.Wait
}

// udpWriter sends datagrams to addr from its own socket.
func udpWriter(t *testing.T, addr string) func([]byte) bool {
	t.Helper()
	conn, err := net.Dial("udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return func(b []byte) bool {
		_, err := conn.Write(b)
		return err == nil || !isClosed(err)
	}
}

// tcpWriter sends RFC 4571 frames on conn.
func tcpWriter(conn net.Conn) func([]byte) bool {
	var buf []byte
	return func(b []byte) bool {
		buf, _ = rtp.AppendFrame(buf[:0], b)
		_, err := conn.Write(buf)
		return err == nil
	}
}

func isClosed(err error) bool {
	ne, ok := err.(*net.OpError)
	return ok && ne.Err != nil && ne.Err.Error() == "use of closed network connection"
}
