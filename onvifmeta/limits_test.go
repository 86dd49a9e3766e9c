package onvifmeta_test

import (
	"bufio"
	"fmt"
	"log/slog"
	"net"
	"net/textproto"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/bluenviron/gortsplib/v5"
	"github.com/bluenviron/gortsplib/v5/pkg/base"
	"github.com/bluenviron/gortsplib/v5/pkg/description"
	"github.com/pion/rtp"

	"github.com/vinfer/vinfer/internal/testutil"
	"github.com/vinfer/vinfer/media"
	"github.com/vinfer/vinfer/onvifmeta"
)

// rawRTSP is an RTSP client written in the test (RFC 2326 text over TCP).
type rawRTSP struct {
	c    net.Conn
	r    *textproto.Reader
	cseq int
}

// dialSmall connects with a small receive buffer, so that not reading fills the window fast.
func dialSmall(t *testing.T, addr string) *rawRTSP {
	t.Helper()
	d := net.Dialer{Timeout: waitLimit, Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		err := rc.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
		if err != nil {
			return err
		}
		return serr
	}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &rawRTSP{c: c, r: textproto.NewReader(bufio.NewReader(c))}
}

// do sends a request and returns the status code, headers and body of its response.
func (x *rawRTSP) do(t *testing.T, method, url string, hdr ...string) (int, textproto.MIMEHeader, string) {
	t.Helper()
	x.cseq++
	req := fmt.Sprintf("%s %s RTSP/1.0\r\nCSeq: %d\r\n", method, url, x.cseq)
	for _, h := range hdr {
		req += h + "\r\n"
	}
	x.c.SetDeadline(time.Now().Add(waitLimit))
	if _, err := x.c.Write([]byte(req + "\r\n")); err != nil {
		t.Fatal(err)
	}
	line, err := x.r.ReadLine()
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(line)
	if len(f) < 2 {
		t.Fatalf("status line %q", line)
	}
	code, _ := strconv.Atoi(f[1])
	h, err := x.r.ReadMIMEHeader()
	if err != nil {
		t.Fatal(err)
	}
	body := ""
	if n, _ := strconv.Atoi(h.Get("Content-Length")); n > 0 {
		b := make([]byte, n)
		if _, err := x.r.R.Read(b); err != nil {
			t.Fatal(err)
		}
		body = string(b)
	}
	return code, h, body
}

// TestSlowClientDropped: a client that stops reading is dropped, while the stream is fed
// without waiting and a reading client keeps getting it.
func TestSlowClientDropped(t *testing.T) {
	aus := readClip(t, "videos/person-bicycle-car-detection_reenc.mp4", 60)
	srv, err := onvifmeta.New(onvifmeta.Config{Listen: "127.0.0.1:0", WriteQueue: 1024})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	obs := srv.Observer("cam1")
	obs.ObserveAccessUnit(&aus[0])

	url := "rtsp://" + srv.Addr() + "/cam1"
	slow := dialSmall(t, srv.Addr())
	code, _, sdp := slow.do(t, "DESCRIBE", url, "Accept: application/sdp")
	if code != 200 || !strings.Contains(sdp, "m=application") || !strings.Contains(sdp, onvifmeta.MetadataRTPMap) {
		t.Fatalf("DESCRIBE: %d\n%s", code, sdp)
	}
	control := ""
	for _, l := range strings.Split(sdp, "\r\n") {
		if c, ok := strings.CutPrefix(l, "a=control:"); ok && strings.Contains(sdp[:strings.Index(sdp, l)], "m=video") {
			control = c
			break
		}
	}
	if !strings.HasPrefix(control, "rtsp://") {
		control = url + "/" + control
	}
	code, h, _ := slow.do(t, "SETUP", control, "Transport: RTP/AVP/TCP;unicast;interleaved=0-1")
	if code != 200 {
		t.Fatalf("SETUP %s: %d", control, code)
	}
	sess, _, _ := strings.Cut(h.Get("Session"), ";")
	if code, _, _ := slow.do(t, "PLAY", url, "Session: "+sess); code != 200 {
		t.Fatalf("PLAY: %d", code)
	}
	good, _ := play(t, url)

	// Feed the clip over and over, never waiting on a client, until the slow one is dropped.
	deadline := time.Now().Add(waitLimit)
	var offset time.Duration
	fed := 0
	for srv.Counters().Dropped == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("slow client not dropped after %d access units", fed)
		}
		for i := range aus {
			au := aus[i]
			au.PTS += offset
			au.DTS += offset
			obs.ObserveAccessUnit(&au)
			fed++
		}
		offset += aus[len(aus)-1].PTS + 40*time.Millisecond
		// The reading client keeps up pass by pass; the slow one never reads.
		waitFor(t, "the reading client to get the pass", func() bool {
			v, _ := good.counts()
			return v >= fed-1
		})
	}
	before, _ := good.counts()
	for i := range aus {
		au := aus[i]
		au.PTS += offset
		obs.ObserveAccessUnit(&au)
	}
	waitFor(t, "the reading client to get the stream after the drop", func() bool {
		v, _ := good.counts()
		return v > before
	})
	if c := srv.Counters(); c.Dropped != 1 || c.Clients < 1 {
		t.Fatalf("counters %+v, want 1 dropped and the reading client open", c)
	}
}

// TestMaxClients: beyond max_clients sessions a SETUP gets 503, counted.
func TestMaxClients(t *testing.T) {
	aus := readClip(t, "videos/person-bicycle-car-detection_reenc.mp4", 1)
	logs := &testutil.LogBuffer{}
	srv, err := onvifmeta.New(onvifmeta.Config{Listen: "127.0.0.1:0", MaxClients: 1, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	srv.Observer("cam1").ObserveAccessUnit(&aus[0])
	url := "rtsp://" + srv.Addr() + "/cam1"
	play(t, url)

	u, _ := base.ParseURL(url)
	tcp := gortsplib.ProtocolTCP
	c := &gortsplib.Client{Scheme: u.Scheme, Host: u.Host, Protocol: &tcp}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	desc, _, err := c.Describe(u)
	if err != nil {
		t.Fatal(err)
	}
	err = c.SetupAll(desc.BaseURL, desc.Medias)
	if err == nil || !strings.Contains(err.Error(), "503") {
		t.Fatalf("second client's SETUP: %v, want 503", err)
	}
	if got := srv.Counters().Refused; got != 1 {
		t.Fatalf("refused %d, want 1", got)
	}
	// An unknown path is 404 and a stream whose video is neither H.264 nor H.265 is not served,
	// logged once.
	odd := srv.Observer("cam2")
	for range 3 {
		odd.ObserveAccessUnit(&media.AccessUnit{Codec: media.Codec(99), Key: true, Data: []byte{0, 0, 1, 0x65}})
	}
	if n := logs.Count("stream not served"); n != 1 {
		t.Errorf("logged %d times, want once:\n%s", n, logs)
	}
	u2, _ := base.ParseURL("rtsp://" + srv.Addr() + "/cam2")
	c2 := &gortsplib.Client{Scheme: u2.Scheme, Host: u2.Host, Protocol: &tcp}
	if err := c2.Start(); err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if _, _, err := c2.Describe(u2); err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("DESCRIBE of a stream not served: %v, want 404", err)
	}
}

// TestAfterClose: access units and results after Close are ignored, no path reopens.
func TestAfterClose(t *testing.T) {
	aus := readClip(t, "videos/person-bicycle-car-detection_reenc.mp4", 2)
	srv, err := onvifmeta.New(onvifmeta.Config{Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	obs := srv.Observer("cam1")
	obs.ObserveAccessUnit(&aus[0])
	srv.Close()
	obs.ObserveAccessUnit(&aus[0])
	obs.ObserveAccessUnit(&aus[1])
	if err := srv.Write(result(1, &aus[1], 768, 432)); err != nil {
		t.Fatal(err)
	}
	obs.EndOfStream()
	if c := srv.Counters(); c.Docs != 0 {
		t.Fatalf("%+v", c)
	}
}

// TestCredentials: a scoped credential opens only its streams (others 404), the main password
// opens all, a wrong password or none is refused.
func TestCredentials(t *testing.T) {
	aus := readClip(t, "videos/person-bicycle-car-detection_reenc.mp4", 1)
	srv, err := onvifmeta.New(onvifmeta.Config{Listen: "127.0.0.1:0", Password: "admin-secret",
		Credentials: []onvifmeta.Credential{{User: "lobby", Password: "viewer-secret", Streams: []string{"cam1"}}}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	srv.Observer("cam1").ObserveAccessUnit(&aus[0])
	srv.Observer("cam2").ObserveAccessUnit(&aus[0])
	describe := func(userinfo, path string) error {
		u, _ := base.ParseURL("rtsp://" + userinfo + srv.Addr() + "/" + path)
		c := &gortsplib.Client{Scheme: u.Scheme, Host: u.Host}
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_, _, err := c.Describe(u)
		return err
	}
	for _, tc := range []struct {
		userinfo, path, want string // want: "" success, else a substring of the error
	}{
		{"lobby:viewer-secret@", "cam1", ""},
		{"lobby:viewer-secret@", "cam2", "404"},
		{"vinfer:admin-secret@", "cam2", ""},
		{"lobby:admin-secret@", "cam1", "401"},
		{"vinfer:viewer-secret@", "cam1", "401"},
		{"", "cam1", "401"},
	} {
		err := describe(tc.userinfo, tc.path)
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s%s: %v, want %q", tc.userinfo, tc.path, err, tc.want)
		}
	}
	if _, err := onvifmeta.New(onvifmeta.Config{Listen: "127.0.0.1:0", Credentials: []onvifmeta.Credential{{User: "x"}}}); err == nil {
		t.Error("a credential without a password accepted")
	}
}

// TestUDP: with a UDP port, a client playing over UDP gets the video and the documents.
func TestUDP(t *testing.T) {
	const n = 10
	aus := readClip(t, "videos/person-bicycle-car-detection_reenc.mp4", n)
	port := testutil.UDPPortPair(t)
	srv, err := onvifmeta.New(onvifmeta.Config{Listen: "127.0.0.1:0", UDPPort: port})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	obs := srv.Observer("cam1")
	obs.ObserveAccessUnit(&aus[0])
	_, c, desc := describe(t, srv.Addr(), "cam1", gortsplib.ProtocolUDP)
	if err := c.SetupAll(desc.BaseURL, desc.Medias); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	docs := 0
	for _, m := range desc.Medias {
		if m.Type == description.MediaTypeApplication {
			c.OnPacketRTP(m, m.Formats[0], func(pkt *rtp.Packet) {
				if pkt.Marker {
					mu.Lock()
					docs++
					mu.Unlock()
				}
			})
		}
	}
	if _, err := c.Play(nil); err != nil {
		t.Fatal(err)
	}
	// UDP may lose a datagram: feed until some documents came.
	testutil.Eventually(t, waitLimit, "documents over UDP", func() bool {
		for i := 1; i < n; i++ {
			obs.ObserveAccessUnit(&aus[i])
			_ = srv.Write(result(i, &aus[i], 768, 432))
		}
		mu.Lock()
		defer mu.Unlock()
		return docs > 0
	})
	if _, err := onvifmeta.New(onvifmeta.Config{Listen: "127.0.0.1:0", UDPPort: 5001}); err == nil {
		t.Error("an odd UDP port accepted")
	}
}
