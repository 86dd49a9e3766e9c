package sources_test

import (
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bluenviron/gortsplib/v5"
	"github.com/bluenviron/gortsplib/v5/pkg/base"
	"github.com/bluenviron/gortsplib/v5/pkg/description"
	"github.com/bluenviron/gortsplib/v5/pkg/format"
	pionrtp "github.com/pion/rtp"

	"github.com/vinfer/vinfer/internal/sourcetest"
	"github.com/vinfer/vinfer/source/gb28181/ps"
)

// rtspServer is a gortsplib RTSP server on loopback (TCP only) serving one H.264 clip, the
// parameter sets both in the SDP and in-band. From the first PLAY of each start it writes the
// clip from key frame from on, paced in real time. close and start may alternate: the address
// stays the same.
type rtspServer struct {
	t     *testing.T
	addr  string
	forma *format.H264
	aus   [][]*pionrtp.Packet // per access unit, in decoding order
	from  int

	mu     sync.Mutex // held while starting: requests wait for the stream
	srv    *gortsplib.Server
	stream *gortsplib.ServerStream
	medi   *description.Media
	played chan struct{}
	once   *sync.Once
	stop   chan struct{}
	done   chan struct{}
	last   atomic.Int64 // index of the last access unit written, -1 before the first
}

func newRTSPServer(t *testing.T, c *sourcetest.Clip, from int) *rtspServer {
	pkts := c.Packetize(t, 0, len(c.Samples), 96, 0x0A0B0C0D, 4000, 123456, true)
	var aus [][]*pionrtp.Packet
	for i, p := range pkts {
		if i == 0 || p.Timestamp != pkts[i-1].Timestamp {
			aus = append(aus, nil)
		}
		aus[len(aus)-1] = append(aus[len(aus)-1], p)
	}
	if len(aus) != len(c.Samples) {
		t.Fatalf("%d access units packetized from %d samples", len(aus), len(c.Samples))
	}
	return &rtspServer{
		t: t, addr: fmt.Sprintf("127.0.0.1:%d", sourcetest.TCPPort(t)), aus: aus, from: from,
		forma: &format.H264{PayloadTyp: 96, PacketizationMode: 1, SPS: c.ParamSets[0], PPS: c.ParamSets[1]},
	}
}

func (s *rtspServer) url() string { return "rtsp://" + s.addr + "/cam" }

func (s *rtspServer) start() {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	// a writer held back by a loaded machine catches up at once: room for a whole clip
	s.srv = &gortsplib.Server{Handler: s, RTSPAddress: s.addr, WriteQueueSize: 4096}
	if err := s.srv.Start(); err != nil {
		s.t.Fatalf("RTSP server: %v", err)
	}
	s.medi = &description.Media{Type: description.MediaTypeVideo, Formats: []format.Format{s.forma}}
	s.stream = &gortsplib.ServerStream{Server: s.srv, Desc: &description.Session{Medias: []*description.Media{s.medi}}}
	if err := s.stream.Initialize(); err != nil {
		s.t.Fatal(err)
	}
	s.played, s.once = make(chan struct{}), &sync.Once{}
	s.stop, s.done = make(chan struct{}), make(chan struct{})
	s.last.Store(-1)
	go s.write(s.stream, s.medi, s.played, s.stop, s.done)
	s.t.Cleanup(func() { s.close() })
}

// close stops the server (its clients see their connection end) and returns the PTS on the
// clip's timeline (0 at its first frame) of the last access unit it wrote, or -1. Safe to call
// twice.
func (s *rtspServer) close() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-s.stop:
		return -1
	default:
	}
	close(s.stop)
	<-s.done
	s.stream.Close()
	s.srv.Close()
	last := s.last.Load()
	if last < 0 {
		return -1
	}
	return time.Duration(s.aus[last][0].Timestamp-s.aus[0][0].Timestamp) * time.Second / 90000
}

func (s *rtspServer) write(stream *gortsplib.ServerStream, medi *description.Media, played, stop, done chan struct{}) {
	defer close(done)
	select {
	case <-played:
	case <-stop:
		return
	}
	start := time.Now()
	ts0 := s.aus[s.from][0].Timestamp
	for i := s.from; i < len(s.aus); i++ {
		au := s.aus[i]
		at := start.Add(time.Duration(au[0].Timestamp-ts0) * time.Second / 90000)
		select {
		case <-time.After(time.Until(at)):
		case <-stop:
			return
		}
		for _, p := range au {
			if err := stream.WritePacketRTPWithNTP(medi, p, time.Now()); err != nil {
				s.t.Errorf("RTSP server write: %v", err)
				return
			}
		}
		s.last.Store(int64(i))
	}
}

// OnDescribe implements gortsplib.ServerHandlerOnDescribe.
func (s *rtspServer) OnDescribe(*gortsplib.ServerHandlerOnDescribeCtx) (*base.Response, *gortsplib.ServerStream, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return &base.Response{StatusCode: base.StatusOK}, s.stream, nil
}

// OnSetup implements gortsplib.ServerHandlerOnSetup.
func (s *rtspServer) OnSetup(*gortsplib.ServerHandlerOnSetupCtx) (*base.Response, *gortsplib.ServerStream, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return &base.Response{StatusCode: base.StatusOK}, s.stream, nil
}

// OnPlay implements gortsplib.ServerHandlerOnPlay.
func (s *rtspServer) OnPlay(*gortsplib.ServerHandlerOnPlayCtx) (*base.Response, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.once.Do(func() { close(s.played) })
	return &base.Response{StatusCode: base.StatusOK}, nil
}

// gbSender is a GB28181 camera pushing over UDP (GB/T 28181-2016 Annex C): each frame of the
// clip is muxed into an MPEG-2 program stream (ps.Muxer: pack header, system header and stream
// map on key frames, video PES, ISO/IEC 13818-1 §2.5) and cut into RTP packets (RFC 3550) of
// at most 1400 payload bytes, payload type 96, the frame's 90 kHz PTS as timestamp and the
// marker on its last packet. It sends the clip once, from key frame from on, in real time,
// until the end of the test.
type gbSender struct {
	t    *testing.T
	clip *sourcetest.Clip
	conn net.Conn
	ssrc uint32
	from int
	stop chan struct{}
	done chan struct{}
}

func startGBSender(t *testing.T, c *sourcetest.Clip, from int, ssrc uint32, addr string) {
	conn, err := net.Dial("udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	g := &gbSender{t: t, clip: c, conn: conn, ssrc: ssrc, from: from, stop: make(chan struct{}), done: make(chan struct{})}
	t.Cleanup(func() {
		close(g.stop)
		<-g.done
		conn.Close()
	})
	go g.run()
}

func (g *gbSender) run() {
	defer close(g.done)
	mux := ps.Muxer{Codec: g.clip.Codec}
	var pack []byte
	first := g.clip.Samples[g.from]
	seq := uint16(7)
	ts0 := -uint32(first.PTS + 45000) // the 32-bit RTP clock wraps 0.5 s in (RFC 3550 §5.1)
	start := time.Now()
	for i := g.from; i < len(g.clip.Samples); i++ {
		smp := g.clip.Samples[i]
		select {
		case <-time.After(time.Until(start.Add(time.Duration(smp.DTS-first.DTS) * time.Second / 90000))):
		case <-g.stop:
			return
		}
		pack = mux.Frame(pack[:0], g.clip.AnnexB(i), smp.PTS, smp.DTS, smp.Key)
		for b := pack; len(b) > 0; {
			n := min(len(b), 1400)
			p := pionrtp.Packet{Header: pionrtp.Header{Version: 2, PayloadType: 96, SequenceNumber: seq,
				Timestamp: ts0 + uint32(smp.PTS), SSRC: g.ssrc, Marker: n == len(b)}, Payload: b[:n]}
			raw, err := p.Marshal()
			if err != nil {
				g.t.Errorf("GB28181 sender: %v", err)
				return
			}
			if _, err := g.conn.Write(raw); err != nil {
				return // the test is over
			}
			seq++
			b = b[n:]
		}
	}
}
