package rtsp

import (
	"crypto/tls"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/bluenviron/gortsplib/v5"
	"github.com/bluenviron/gortsplib/v5/pkg/base"
	"github.com/bluenviron/gortsplib/v5/pkg/description"
	"github.com/bluenviron/gortsplib/v5/pkg/format"
	"github.com/bluenviron/gortsplib/v5/pkg/liberrors"
	pionrtp "github.com/pion/rtp"

	"github.com/vinfer/vinfer/internal/sourcetest"
	"github.com/vinfer/vinfer/media"
)

// testServer is a gortsplib RTSP server on loopback that serves one clip over TCP and UDP,
// paced at rate times real time from the first PLAY on.
type testServer struct {
	t      *testing.T
	addr   string
	rtp    int // UDP RTP port; RTCP is rtp+1
	forma  format.Format
	aus    [][]*pionrtp.Packet
	rate   float64
	user   string
	pass   string
	pause  func(au int) time.Duration // optional extra wait before access unit au
	drop   func() bool                // optional: drop the next packet (a lossy link)
	tls    *tls.Config                // optional: serve rtsps:// (TCP only)
	mu     sync.Mutex                 // held while starting: requests wait for the stream
	srv    *gortsplib.Server
	stream *gortsplib.ServerStream
	medi   *description.Media
	played chan struct{}
	once   sync.Once
	stop   chan struct{}
	done   chan struct{}
}

// clipFormat returns the RTP format and packets of a clip. sdp puts the parameter sets in the
// SDP (and not in-band); otherwise they go in-band and the SDP has none.
func clipFormat(t *testing.T, c *sourcetest.Clip, sdp bool) (format.Format, [][]*pionrtp.Packet) {
	pkts := c.Packetize(t, 0, len(c.Samples), 96, 0x51525354, 1000, 90000, !sdp)
	var aus [][]*pionrtp.Packet
	for i, p := range pkts {
		if i == 0 || p.Timestamp != pkts[i-1].Timestamp {
			aus = append(aus, nil)
		}
		aus[len(aus)-1] = append(aus[len(aus)-1], p)
	}
	var f format.Format
	switch {
	case c.Codec == media.CodecH264 && sdp:
		f = &format.H264{PayloadTyp: 96, PacketizationMode: 1, SPS: c.ParamSets[0], PPS: c.ParamSets[1]}
	case c.Codec == media.CodecH264:
		f = &format.H264{PayloadTyp: 96, PacketizationMode: 1}
	case sdp:
		f = &format.H265{PayloadTyp: 96, VPS: c.ParamSets[0], SPS: c.ParamSets[1], PPS: c.ParamSets[2]}
	default:
		f = &format.H265{PayloadTyp: 96}
	}
	return f, aus
}

func (s *testServer) start() {
	s.t.Helper()
	if s.addr == "" {
		s.addr = fmt.Sprintf("127.0.0.1:%d", sourcetest.TCPPort(s.t))
		s.rtp = sourcetest.UDPPortPair(s.t)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.srv = &gortsplib.Server{
		Handler:        s,
		RTSPAddress:    s.addr,
		UDPRTPAddress:  fmt.Sprintf("127.0.0.1:%d", s.rtp),
		UDPRTCPAddress: fmt.Sprintf("127.0.0.1:%d", s.rtp+1),
		// A writer that a loaded machine held back sends the access units it owes at once: a
		// queue for a whole clip's packets (~1900), not the default 256 that would drop them
		// ("write queue is full").
		WriteQueueSize: 4096,
	}
	if s.tls != nil {
		s.srv.TLSConfig = s.tls
		s.srv.UDPRTPAddress, s.srv.UDPRTCPAddress = "", ""
	}
	if err := s.srv.Start(); err != nil {
		s.t.Fatalf("RTSP server: %v", err)
	}
	s.medi = &description.Media{Type: description.MediaTypeVideo, Formats: []format.Format{s.forma}}
	s.stream = &gortsplib.ServerStream{Server: s.srv, Desc: &description.Session{Medias: []*description.Media{s.medi}}}
	if err := s.stream.Initialize(); err != nil {
		s.t.Fatal(err)
	}
	s.played, s.once = make(chan struct{}), sync.Once{}
	s.stop, s.done = make(chan struct{}), make(chan struct{})
	go s.write()
	s.t.Cleanup(s.close)
}

// url returns the stream's URL, with the server's credentials when it has some.
func (s *testServer) url() string {
	scheme := "rtsp"
	if s.tls != nil {
		scheme = "rtsps"
	}
	if s.user != "" {
		return fmt.Sprintf("%s://%s:%s@%s/clip", scheme, s.user, s.pass, s.addr)
	}
	return fmt.Sprintf("%s://%s/clip", scheme, s.addr)
}

// close stops the server: its clients see the connection end. Safe to call twice.
func (s *testServer) close() {
	select {
	case <-s.stop:
		return
	default:
	}
	close(s.stop)
	<-s.done
	s.stream.Close()
	s.srv.Close()
}

func (s *testServer) write() {
	defer close(s.done)
	select {
	case <-s.played:
	case <-s.stop:
		return
	}
	start := time.Now()
	ts0 := s.aus[0][0].Timestamp
	var extra time.Duration
	for i, au := range s.aus {
		if s.pause != nil {
			extra += s.pause(i)
		}
		at := start.Add(extra + time.Duration(float64(au[0].Timestamp-ts0)/90000/s.rate*float64(time.Second)))
		select {
		case <-time.After(time.Until(at)):
		case <-s.stop:
			return
		}
		for _, p := range au {
			if s.drop != nil && s.drop() {
				continue
			}
			if err := s.stream.WritePacketRTPWithNTP(s.medi, p, time.Now()); err != nil {
				s.t.Errorf("write: %v", err)
				return
			}
		}
	}
}

func (s *testServer) auth(req *base.Request, conn *gortsplib.ServerConn) (*base.Response, error) {
	if s.user != "" && !conn.VerifyCredentials(req, s.user, s.pass) {
		return &base.Response{StatusCode: base.StatusUnauthorized}, liberrors.ErrServerAuth{}
	}
	return nil, nil
}

func (s *testServer) OnDescribe(ctx *gortsplib.ServerHandlerOnDescribeCtx) (*base.Response, *gortsplib.ServerStream, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if res, err := s.auth(ctx.Request, ctx.Conn); res != nil {
		return res, nil, err
	}
	return &base.Response{StatusCode: base.StatusOK}, s.stream, nil
}

func (s *testServer) OnSetup(ctx *gortsplib.ServerHandlerOnSetupCtx) (*base.Response, *gortsplib.ServerStream, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if res, err := s.auth(ctx.Request, ctx.Conn); res != nil {
		return res, nil, err
	}
	return &base.Response{StatusCode: base.StatusOK}, s.stream, nil
}

func (s *testServer) OnPlay(*gortsplib.ServerHandlerOnPlayCtx) (*base.Response, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return &base.Response{StatusCode: base.StatusOK}, nil
}

// OnResponse starts the writer on the first PLAY response (the one with RTP-Info): gortsplib
// makes the session a reader of the stream only after OnPlay returns, and packets written
// before that (the clip's first key frame, on a loaded machine) would reach no one.
func (s *testServer) OnResponse(_ *gortsplib.ServerConn, res *base.Response) {
	if _, ok := res.Header["RTP-Info"]; ok && res.StatusCode == base.StatusOK {
		s.once.Do(func() { close(s.played) })
	}
}
