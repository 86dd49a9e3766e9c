package onvifsim

import (
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

// Camera is the camera's RTSP server: one H.264 clip, looped in real time, over TCP
// (interleaved), behind the same credentials as the SOAP services (RTSP digest).
type Camera struct {
	User, Password string

	addr   string
	srv    *gortsplib.Server
	stream *gortsplib.ServerStream
	medi   *description.Media
	aus    [][]*pionrtp.Packet
	mu     sync.Mutex
	plays  int
	stop   chan struct{}
	done   chan struct{}
}

// StartCamera serves c (an H.264 clip: sourcetest.LoadClip, LoadFile) on a loopback port
// until the test ends.
func StartCamera(t testing.TB, c *sourcetest.Clip, user, password string) *Camera {
	t.Helper()
	if c.Codec != media.CodecH264 {
		t.Fatalf("%s: want H.264", c.Path)
	}
	cam := &Camera{User: user, Password: password, addr: fmt.Sprintf("127.0.0.1:%d", sourcetest.TCPPort(t)),
		stop: make(chan struct{}), done: make(chan struct{})}
	pkts := c.Packetize(t, 0, len(c.Samples), 96, 0x51525354, 1000, 90000, false)
	for i, p := range pkts {
		if i == 0 || p.Timestamp != pkts[i-1].Timestamp {
			cam.aus = append(cam.aus, nil)
		}
		cam.aus[len(cam.aus)-1] = append(cam.aus[len(cam.aus)-1], p)
	}
	cam.srv = &gortsplib.Server{Handler: cam, RTSPAddress: cam.addr, WriteQueueSize: 4096}
	if err := cam.srv.Start(); err != nil {
		t.Fatalf("RTSP server: %v", err)
	}
	f := &format.H264{PayloadTyp: 96, PacketizationMode: 1, SPS: c.ParamSets[0], PPS: c.ParamSets[1]}
	cam.medi = &description.Media{Type: description.MediaTypeVideo, Formats: []format.Format{f}}
	cam.stream = &gortsplib.ServerStream{Server: cam.srv, Desc: &description.Session{Medias: []*description.Media{cam.medi}}}
	if err := cam.stream.Initialize(); err != nil {
		t.Fatal(err)
	}
	go cam.write()
	t.Cleanup(func() {
		close(cam.stop)
		<-cam.done
		cam.stream.Close()
		cam.srv.Close()
	})
	return cam
}

// Addr is the server's host:port.
func (c *Camera) Addr() string { return c.addr }

// Plays returns the PLAY requests served.
func (c *Camera) Plays() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.plays
}

// write sends the clip in a loop at its own pace (RTP timestamps continue across loops).
func (c *Camera) write() {
	defer close(c.done)
	start := time.Now()
	ts0 := c.aus[0][0].Timestamp
	span := c.aus[len(c.aus)-1][0].Timestamp - ts0 + 3600
	for loop := uint32(0); ; loop++ {
		for _, au := range c.aus {
			off := au[0].Timestamp - ts0 + loop*span
			select {
			case <-time.After(time.Until(start.Add(time.Duration(off) * time.Second / 90000))):
			case <-c.stop:
				return
			}
			for _, p := range au {
				q := *p
				q.Timestamp = ts0 + off
				c.stream.WritePacketRTPWithNTP(c.medi, &q, time.Now())
			}
		}
	}
}

func (c *Camera) auth(req *base.Request, conn *gortsplib.ServerConn) (*base.Response, error) {
	if c.User != "" && !conn.VerifyCredentials(req, c.User, c.Password) {
		return &base.Response{StatusCode: base.StatusUnauthorized}, liberrors.ErrServerAuth{}
	}
	return nil, nil
}

// OnDescribe implements gortsplib.ServerHandlerOnDescribe.
func (c *Camera) OnDescribe(ctx *gortsplib.ServerHandlerOnDescribeCtx) (*base.Response, *gortsplib.ServerStream, error) {
	if res, err := c.auth(ctx.Request, ctx.Conn); res != nil {
		return res, nil, err
	}
	return &base.Response{StatusCode: base.StatusOK}, c.stream, nil
}

// OnSetup implements gortsplib.ServerHandlerOnSetup.
func (c *Camera) OnSetup(ctx *gortsplib.ServerHandlerOnSetupCtx) (*base.Response, *gortsplib.ServerStream, error) {
	if res, err := c.auth(ctx.Request, ctx.Conn); res != nil {
		return res, nil, err
	}
	return &base.Response{StatusCode: base.StatusOK}, c.stream, nil
}

// OnPlay implements gortsplib.ServerHandlerOnPlay.
func (c *Camera) OnPlay(*gortsplib.ServerHandlerOnPlayCtx) (*base.Response, error) {
	c.mu.Lock()
	c.plays++
	c.mu.Unlock()
	return &base.Response{StatusCode: base.StatusOK}, nil
}
