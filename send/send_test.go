package send

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bluenviron/gortsplib/v5"
	"github.com/bluenviron/gortsplib/v5/pkg/base"
	"github.com/bluenviron/gortsplib/v5/pkg/description"
	"github.com/bluenviron/gortsplib/v5/pkg/format"
	pionrtp "github.com/pion/rtp"

	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/internal/sourcetest"
	"github.com/vinfer/vinfer/internal/testutil"
	"github.com/vinfer/vinfer/media"
	"github.com/vinfer/vinfer/source"
	"github.com/vinfer/vinfer/source/gb28181"
	"github.com/vinfer/vinfer/source/rtp"
	"github.com/vinfer/vinfer/source/rtsp"
)

const clip = "videos/car-detection.mp4" // H.264, 12.5 fps, a key frame first

// wait bounds every wait on a loaded machine; it only matters when a test fails.
const wait = 60 * time.Second

// sendTo runs Run in the background until the test ends; its error is reported then.
func sendTo(t *testing.T, dest string, o Options) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	started := make(chan struct{})
	o.Started = func() { close(started) }
	o.Log = slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	go func() { done <- Run(ctx, sourcetest.Asset(t, clip), dest, o) }()
	t.Cleanup(func() {
		cancel()
		if err := testutil.Within(t, wait, "send to stop", done); err != nil {
			t.Errorf("send: %v", err)
		}
	})
	select {
	case <-started:
	case err := <-done:
		t.Fatalf("send: %v", err)
	case <-time.After(wait):
		t.Fatal("send did not start")
	}
}

// open opens a vinfer source on url (a receiver binds its port now); closed when the test ends.
func open(t *testing.T, k source.Kind, url string, transport ...string) source.Source {
	t.Helper()
	s := &config.Stream{ID: "cam", Source: url, Model: "m"}
	for _, tr := range transport {
		if err := s.Transport.UnmarshalText([]byte(tr)); err != nil {
			t.Fatal(err)
		}
	}
	src, err := k.Open(s, source.Policy{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.Close() })
	return src
}

// frames checks that frames arrive from src: 15 access units in order, byte-identical to the
// file's, the first a key frame.
func frames(t *testing.T, src source.Source) {
	t.Helper()
	m := &sourcetest.Matcher{Clip: sourcetest.LoadClip(t, clip), PTSTolerance: time.Millisecond}
	if err := sourcetest.ReadUntil(src, m, func(*media.AccessUnit) bool { return m.Matched >= 15 }, wait); err != nil {
		t.Fatal(err)
	}
	if m.Keys == 0 {
		t.Fatalf("%d access units, no key frame", m.Matched)
	}
}

// TestSendRTP: plain RTP to vinfer's RTP source, which is given only the codec (the parameter
// sets travel in-band).
func TestSendRTP(t *testing.T) {
	port := sourcetest.UDPPortPair(t)
	src := open(t, rtp.Kind, fmt.Sprintf("rtp://127.0.0.1:%d?codec=h264&ssrc=1234", port))
	sendTo(t, fmt.Sprintf("rtp://127.0.0.1:%d?ssrc=1234", port), Options{})
	frames(t, src)
}

// TestSendRTSPServe: send as the RTSP server, vinfer's RTSP source its client, over TCP and
// over UDP.
func TestSendRTSPServe(t *testing.T) {
	for _, tr := range []string{"tcp", "udp"} {
		t.Run(tr, func(t *testing.T) {
			addr := fmt.Sprintf("127.0.0.1:%d", sourcetest.TCPPort(t))
			sendTo(t, fmt.Sprintf("rtsp://%s/cam?rtp_port=%d", addr, sourcetest.UDPPortPair(t)), Options{Serve: true})
			frames(t, open(t, rtsp.Kind, fmt.Sprintf("rtsp://%s/cam", addr), tr))
		})
	}
}

// TestSendRTSPPublish: send publishes (ANNOUNCE/RECORD) to an RTSP server that relays to its
// readers, as MediaMTX does; vinfer's RTSP source reads from it.
func TestSendRTSPPublish(t *testing.T) {
	r := &relay{}
	addr := r.start(t)
	sendTo(t, fmt.Sprintf("rtsp://%s/cam", addr), Options{})
	frames(t, open(t, rtsp.Kind, fmt.Sprintf("rtsp://%s/cam", addr)))
}

// TestSendGB28181: PS over RTP to vinfer's GB28181 source over UDP, over TCP to its passive
// port, and from a listening sender that the source dials (tcp-active).
func TestSendGB28181(t *testing.T) {
	cases := []struct{ name, recv, send string }{
		{"udp", "gb28181://127.0.0.1:%d?transport=udp&ssrc=100000001", "gb28181://127.0.0.1:%d"},
		{"tcp", "gb28181://127.0.0.1:%d?transport=tcp-passive&ssrc=7", "gb28181://127.0.0.1:%d?transport=tcp&ssrc=7"},
		{"tcp-listen", "gb28181://127.0.0.1:0?transport=tcp-active&remote=127.0.0.1:%d", "gb28181://127.0.0.1:%d?transport=tcp-listen"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			port := sourcetest.UDPPortPair(t)
			if c.name != "udp" {
				port = sourcetest.TCPPort(t)
			}
			var src source.Source
			if c.name != "tcp-listen" {
				src = open(t, gb28181.Kind, fmt.Sprintf(c.recv, port))
			}
			sendTo(t, fmt.Sprintf(c.send, port), Options{})
			if src == nil {
				src = open(t, gb28181.Kind, fmt.Sprintf(c.recv, port))
			}
			frames(t, src)
		})
	}
}

// TestSendErrors: what Run refuses at once.
func TestSendErrors(t *testing.T) {
	file := sourcetest.Asset(t, clip)
	for _, c := range []struct {
		dest, want string
		serve      bool
	}{
		{"http://127.0.0.1:1/x", "rtp://, rtsp:// or gb28181://", false},
		{"rtp://127.0.0.1", "host:port", false},
		{"rtp://127.0.0.1:5004?pt=300", "pt=", false},
		{"gb28181://127.0.0.1:5004?transport=sctp", "transport=", false},
		{"rtsp://127.0.0.1:8554/x?transport=quic", "transport=", false},
		{"rtp://127.0.0.1:0", "port", false},
		{"rtsp://127.0.0.1:0/x", "port", false},
		{"rtsp://127.0.0.1:0/x", "port", true},
		{"gb28181://127.0.0.1:00", "port", false},
		{"rtp://127.0.0.1:5004", "--serve", true},
		{"gb28181://127.0.0.1:5060", "--serve", true},
	} {
		err := Run(context.Background(), file, c.dest, Options{Serve: c.serve})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.dest, err, c.want)
		}
	}
	if err := Run(context.Background(), "/nonexistent.mp4", "rtp://127.0.0.1:5004", Options{}); err == nil {
		t.Error("a missing file accepted")
	}
}

// relay is an RTSP server that takes one publication (ANNOUNCE, SETUP, RECORD) and serves it
// to readers (DESCRIBE, SETUP, PLAY); 404 until a publisher came.
type relay struct {
	mu     sync.Mutex
	srv    *gortsplib.Server
	stream *gortsplib.ServerStream
	pub    *gortsplib.ServerSession
}

func (r *relay) start(t *testing.T) string {
	addr := fmt.Sprintf("127.0.0.1:%d", sourcetest.TCPPort(t))
	r.srv = &gortsplib.Server{Handler: r, RTSPAddress: addr}
	if err := r.srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		r.srv.Close()
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.stream != nil {
			r.stream.Close()
		}
	})
	return addr
}

func (r *relay) OnAnnounce(ctx *gortsplib.ServerHandlerOnAnnounceCtx) (*base.Response, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stream != nil {
		r.stream.Close()
	}
	r.stream = &gortsplib.ServerStream{Server: r.srv, Desc: ctx.Description}
	if err := r.stream.Initialize(); err != nil {
		return &base.Response{StatusCode: base.StatusBadRequest}, err
	}
	r.pub = ctx.Session
	return &base.Response{StatusCode: base.StatusOK}, nil
}

func (r *relay) OnSetup(ctx *gortsplib.ServerHandlerOnSetupCtx) (*base.Response, *gortsplib.ServerStream, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if ctx.Session == r.pub { // the publisher
		return &base.Response{StatusCode: base.StatusOK}, nil, nil
	}
	if r.stream == nil {
		return &base.Response{StatusCode: base.StatusNotFound}, nil, errors.New("nothing published")
	}
	return &base.Response{StatusCode: base.StatusOK}, r.stream, nil
}

func (r *relay) OnDescribe(*gortsplib.ServerHandlerOnDescribeCtx) (*base.Response, *gortsplib.ServerStream, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stream == nil {
		return &base.Response{StatusCode: base.StatusNotFound}, nil, errors.New("nothing published")
	}
	return &base.Response{StatusCode: base.StatusOK}, r.stream, nil
}

func (r *relay) OnPlay(*gortsplib.ServerHandlerOnPlayCtx) (*base.Response, error) {
	return &base.Response{StatusCode: base.StatusOK}, nil
}

func (r *relay) OnRecord(ctx *gortsplib.ServerHandlerOnRecordCtx) (*base.Response, error) {
	r.mu.Lock()
	st := r.stream
	r.mu.Unlock()
	ctx.Session.OnPacketRTPAny(func(m *description.Media, _ format.Format, p *pionrtp.Packet) {
		st.WritePacketRTP(m, p)
	})
	return &base.Response{StatusCode: base.StatusOK}, nil
}
