package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/pion/rtp"
	"github.com/pion/webrtc/v4"

	"github.com/vinfer/vinfer/api"
	"github.com/vinfer/vinfer/app"
	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/internal/testutil"
)

// startLive is start with the live view served, ICE on loopback, at most maxViewers viewers.
func startLive(t *testing.T, token string, maxViewers int) *env {
	t.Helper()
	return startWith(t, token, func(c *config.Config) {
		c.Live.MaxViewers = maxViewers
		c.Live.ICE.Loopback = true
	}, func(s *api.Server) { s.Live = s.App.(*app.App).Live() })
}

// viewer is a WebRTC peer written with pion, standing in for a browser: it offers to receive
// video (codecs: mime types it accepts) and opens the "results" data channel.
type viewer struct {
	pc      *webrtc.PeerConnection
	mu      sync.Mutex
	frames  []frameRTP // one per access unit (RTP marker), in arrival order
	results []float64  // the results' PTS in seconds
	cur     *frameRTP
}

// frameRTP is one access unit as received: its RTP timestamp and its NAL unit types.
type frameRTP struct {
	ts   uint32
	nals []byte
}

func newViewer(t *testing.T, mimes ...string) *viewer {
	t.Helper()
	me := &webrtc.MediaEngine{}
	for i, m := range mimes {
		fmtp := ""
		if m == webrtc.MimeTypeH264 {
			fmtp = "level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42e01f"
		}
		if err := me.RegisterCodec(webrtc.RTPCodecParameters{RTPCodecCapability: webrtc.RTPCodecCapability{
			MimeType: m, ClockRate: 90000, SDPFmtpLine: fmtp}, PayloadType: webrtc.PayloadType(102 + i)}, webrtc.RTPCodecTypeVideo); err != nil {
			t.Fatal(err)
		}
	}
	var se webrtc.SettingEngine
	se.SetIncludeLoopbackCandidate(true)
	pc, err := webrtc.NewAPI(webrtc.WithMediaEngine(me), webrtc.WithSettingEngine(se)).NewPeerConnection(webrtc.Configuration{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pc.Close() })
	v := &viewer{pc: pc}
	if _, err := pc.AddTransceiverFromKind(webrtc.RTPCodecTypeVideo, webrtc.RTPTransceiverInit{Direction: webrtc.RTPTransceiverDirectionRecvonly}); err != nil {
		t.Fatal(err)
	}
	dc, err := pc.CreateDataChannel("results", nil)
	if err != nil {
		t.Fatal(err)
	}
	dc.OnMessage(func(m webrtc.DataChannelMessage) {
		var r struct {
			PTS *float64 `json:"pts"`
		}
		if json.Unmarshal(m.Data, &r) == nil && r.PTS != nil {
			v.mu.Lock()
			v.results = append(v.results, *r.PTS)
			v.mu.Unlock()
		}
	})
	pc.OnTrack(func(tr *webrtc.TrackRemote, _ *webrtc.RTPReceiver) {
		for {
			p, _, err := tr.ReadRTP()
			if err != nil {
				return
			}
			v.packet(p)
		}
	})
	return v
}

// packet notes an H.264 RTP packet's NAL unit types (RFC 6184 §5.6-5.8: single, STAP-A, FU-A).
func (v *viewer) packet(p *rtp.Packet) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.cur == nil || v.cur.ts != p.Timestamp {
		v.cur = &frameRTP{ts: p.Timestamp}
	}
	if len(p.Payload) > 1 {
		switch typ := p.Payload[0] & 0x1f; typ {
		case 24: // STAP-A: 2-byte sizes, then NAL units
			for b := p.Payload[1:]; len(b) > 2; {
				n := int(b[0])<<8 | int(b[1])
				if n == 0 || len(b) < 2+n {
					break
				}
				v.cur.nals = append(v.cur.nals, b[2]&0x1f)
				b = b[2+n:]
			}
		case 28: // FU-A: the type on the start fragment
			if p.Payload[1]&0x80 != 0 {
				v.cur.nals = append(v.cur.nals, p.Payload[1]&0x1f)
			}
		default:
			v.cur.nals = append(v.cur.nals, typ)
		}
	}
	if p.Marker {
		v.frames = append(v.frames, *v.cur)
		v.cur = nil
	}
}

// offer makes the viewer's complete offer (candidates gathered).
func (v *viewer) offer(t *testing.T) string {
	t.Helper()
	o, err := v.pc.CreateOffer(nil)
	if err != nil {
		t.Fatal(err)
	}
	done := webrtc.GatheringCompletePromise(v.pc)
	if err := v.pc.SetLocalDescription(o); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("gathering the viewer's candidates took over 10 s")
	}
	return v.pc.LocalDescription().SDP
}

// whep posts an offer as a WHEP client does and returns the status, Location and body.
func (e *env) whep(stream, offer, token, contentType string) (int, string, string) {
	e.t.Helper()
	stream, query, _ := strings.Cut(stream, "?")
	if query != "" {
		query = "?" + query
	}
	req, err := http.NewRequest("POST", e.url+"/api/streams/"+stream+"/whep"+query, strings.NewReader(offer))
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Content-Type", contentType)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Location"), string(b)
}

// addRoom starts the B-frame clip (10 fps, a key frame a second) as a live stream and waits for
// its first results.
func addRoom(e *env, id string) {
	e.t.Helper()
	clip := asset(e.t, "videos/one-by-one-person-detection.mp4")
	e.want("POST", "/api/streams", fmt.Sprintf(`{"id":%q,"source":%q,"loop":true,"realtime":true}`, id, clip), 201, nil)
	testutil.Eventually(e.t, 60*time.Second, "first inferred frames", func() bool { return inferred(e, id) > 0 })
}

// TestLiveWebRTC: a viewer that offers H.264 gets the stream's own access units over WebRTC,
// starting at a key frame with its parameter sets, each stamped with its PTS on the 90 kHz RTP
// clock, and the stream's results on its "results" data channel with the same PTS, so a page
// can draw each frame's boxes on that frame. The stream has B-frames: the viewer says it
// reorders (?reorder=1), which browsers' WebRTC decoders do not. Before: no route (404).
func TestLiveWebRTC(t *testing.T) {
	e := startLive(t, token, 4)
	addRoom(e, "room")
	v := newViewer(t, webrtc.MimeTypeH264)
	code, loc, answer := e.whep("room?reorder=1", v.offer(t), token, "application/sdp")
	if code != http.StatusCreated || !strings.HasPrefix(loc, "/api/streams/room/whep/") {
		t.Fatalf("offer: %d %q: %s", code, loc, answer)
	}
	if err := v.pc.SetRemoteDescription(webrtc.SessionDescription{Type: webrtc.SDPTypeAnswer, SDP: answer}); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 60*time.Second, "30 access units and 30 results", func() bool {
		v.mu.Lock()
		defer v.mu.Unlock()
		return len(v.frames) >= 30 && len(v.results) >= 30
	})
	v.mu.Lock()
	frames, results := append([]frameRTP(nil), v.frames...), append([]float64(nil), v.results...)
	v.mu.Unlock()
	first := frames[0]
	if !containsAll(first.nals, 7, 8, 5) {
		t.Fatalf("first access unit's NAL unit types %v: want SPS (7), PPS (8) and IDR (5)", first.nals)
	}
	stamps := map[uint32]bool{}
	reordered := false
	for i, f := range frames {
		stamps[f.ts] = true
		if i > 0 && int32(f.ts-frames[i-1].ts) < 0 {
			reordered = true // B-frames: sent in decoding order, stamped in presentation order
		}
	}
	if !reordered {
		t.Errorf("no RTP timestamp went back over %d access units of a B-frame clip: stamped with DTS?", len(frames))
	}
	matched, since := 0, 0 // results of frames from the first one sent on
	last := frames[len(frames)-1].ts
	for _, pts := range results {
		ts := uint32(math.Round(pts * 90000))
		if ts < first.ts || ts > last {
			continue
		}
		since++
		if stamps[ts] {
			matched++
		}
	}
	if since == 0 || matched < since*9/10 {
		t.Fatalf("%d of %d results of the frames received have the PTS of one (RTP timestamp/90 kHz)", matched, since)
	}
	t.Logf("%d access units, %d results, %d of %d on a received frame's PTS", len(frames), len(results), matched, since)

	resp, _ := e.do("DELETE", loc, "")
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE session: %s", resp.Status)
	}
	if resp, _ := e.do("DELETE", loc, ""); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("DELETE an ended session: %s, want 404", resp.Status)
	}
}

func containsAll(have []byte, want ...byte) bool {
	for _, w := range want {
		found := false
		for _, h := range have {
			found = found || h == w
		}
		if !found {
			return false
		}
	}
	return true
}

// TestLiveRefusals: the live view's offers that cannot be served get a clear error: a stream
// not running 404, over max_viewers 503, no or a wrong token 401, a token of other streams 403,
// an offer without the stream's codec 415 (the page then shows snapshots), not an SDP offer
// 400, a body not declared application/sdp 415; an ended viewer frees its place. Before: no
// route, 404 for each.
func TestLiveRefusals(t *testing.T) {
	e := startWith(t, token, func(c *config.Config) {
		c.Live.MaxViewers = 1
		c.Live.ICE.Loopback = true
	}, func(s *api.Server) {
		s.Live = s.App.(*app.App).Live()
		s.Tokens = []config.Token{{Label: "other", Token: "other-streams-secret-0123", Scope: "viewer", Streams: []string{"elsewhere"}}}
	})
	addRoom(e, "room")
	h264 := newViewer(t, webrtc.MimeTypeH264).offer(t)
	// A stream is known to have B-frames once a PTS went back; an offer before that is served.
	testutil.Eventually(t, 30*time.Second, "an offer refused for B-frames (422)", func() bool {
		code, loc, _ := e.whep("room", h264, token, "application/sdp")
		if code == http.StatusCreated {
			e.do("DELETE", loc, "")
		}
		return code == http.StatusUnprocessableEntity
	})
	for _, c := range []struct {
		name, stream, offer, token, ctype string
		code                              int
		says                              string
	}{
		{"not running", "nope", h264, token, "application/sdp", 404, "not running"},
		{"no token", "room", h264, "", "application/sdp", 401, "missing bearer token"},
		{"wrong token", "room", h264, "nope", "application/sdp", 401, "wrong bearer token"},
		{"token of other streams", "room", h264, "other-streams-secret-0123", "application/sdp", 403, "may not reach stream"},
		{"no H.264 in the offer", "room?reorder=1", newViewer(t, webrtc.MimeTypeVP8).offer(t), token, "application/sdp", 415, "cannot play"},
		{"not SDP", "room?reorder=1", "hello", token, "application/sdp", 400, "SDP offer"},
		{"not declared SDP", "room", h264, token, "text/plain", 415, "application/sdp"},
	} {
		code, _, body := e.whep(c.stream, c.offer, c.token, c.ctype)
		if code != c.code || !strings.Contains(body, c.says) {
			t.Errorf("%s: %d %s, want %d saying %q", c.name, code, body, c.code, c.says)
		}
	}
	code, loc, body := e.whep("room?reorder=1", h264, token, "application/sdp")
	if code != http.StatusCreated {
		t.Fatalf("first viewer: %d %s", code, body)
	}
	if code, _, body := e.whep("room?reorder=1", newViewer(t, webrtc.MimeTypeH264).offer(t), token, "application/sdp"); code != http.StatusServiceUnavailable || !strings.Contains(body, "most viewers") {
		t.Fatalf("second viewer over max_viewers 1: %d %s, want 503", code, body)
	}
	if resp, _ := e.do("DELETE", loc, ""); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE the first: %s", resp.Status)
	}
	testutil.Eventually(t, 30*time.Second, "a place for another viewer", func() bool {
		code, loc, _ := e.whep("room?reorder=1", newViewer(t, webrtc.MimeTypeH264).offer(t), token, "application/sdp")
		if code == http.StatusCreated {
			e.do("DELETE", loc, "")
		}
		return code == http.StatusCreated
	})
	e.want("DELETE", "/api/streams/room", "", 204, nil)
	if code, _, body := e.whep("room", h264, token, "application/sdp"); code != 404 {
		t.Fatalf("removed stream: %d %s, want 404", code, body)
	}
}

// metric returns the value of an unlabelled series from /metrics (-1 when absent).
func metric(e *env, name string) float64 {
	e.t.Helper()
	_, b := e.do("GET", "/metrics", "")
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, name+" "); ok {
			var f float64
			fmt.Sscan(v, &f)
			return f
		}
	}
	return -1
}

// TestLiveSlowViewer: a fragmented MP4 viewer that stops reading is dropped once its queue of
// access units is full, and counted (vinfer_live_viewers_dropped_total); the stream goes on
// (its inferred frames keep growing), and a viewer that reads gets its fragments. Before: no
// route.
func TestLiveSlowViewer(t *testing.T) {
	e := startWith(t, token, func(c *config.Config) { c.Live.Queue = 30 },
		func(s *api.Server) { s.Live = s.App.(*app.App).Live() })
	clip := asset(t, "videos/car-detection.mp4") // not paced, inferring a frame in 25: as fast as it decodes
	e.want("POST", "/api/streams", fmt.Sprintf(`{"id":"fast","source":%q,"loop":true,"interval":25}`, clip), 201, nil)
	testutil.Eventually(t, 60*time.Second, "first inferred frames", func() bool { return inferred(e, "fast") > 0 })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	wsURL := "ws" + strings.TrimPrefix(e.url, "http") + "/api/streams/fast/mse?access_token=" + token
	dial := func(rcvbuf int) *websocket.Conn {
		d := &net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
			if rcvbuf == 0 {
				return nil
			}
			return rc.Control(func(fd uintptr) { // a small window: the server's writes block soon
				_ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, rcvbuf)
			})
		}}
		hc := &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}
		c, _, err := websocket.Dial(ctx, wsURL, &websocket.DialOptions{HTTPClient: hc})
		if err != nil {
			t.Fatal(err)
		}
		c.SetReadLimit(8 << 20)
		typ, msg, err := c.Read(ctx)
		if err != nil || typ != websocket.MessageText || !strings.Contains(string(msg), `"mime":"video/mp4; codecs=\"avc1.`) {
			t.Fatalf("first message: %v %s %v", typ, msg, err)
		}
		return c
	}
	stalled := dial(4096) // reads nothing more
	defer stalled.CloseNow()
	reader := dial(0)
	defer reader.CloseNow()
	got := make(chan int, 1)
	go func() {
		n := 0
		for {
			if _, _, err := reader.Read(ctx); err != nil {
				got <- n
				return
			}
			n++
		}
	}()
	testutil.Eventually(t, 45*time.Second, "the stalled viewer dropped and counted", func() bool {
		return metric(e, "vinfer_live_viewers_dropped_total") >= 1
	})
	before := inferred(e, "fast")
	testutil.Eventually(t, 30*time.Second, "the stream going on", func() bool { return inferred(e, "fast") > before+5 })
	reader.CloseNow()
	if n := <-got; n < 20 {
		t.Fatalf("the reading viewer got %d messages", n)
	}
}

// TestLiveICESettings: the answer offers host candidates only by default (no STUN/TURN, no
// mDNS names); public_ips replace their addresses (NAT 1:1) and port_min/port_max bound their
// ports. Before: no route.
func TestLiveICESettings(t *testing.T) {
	candidates := func(adjust func(*config.Config)) []string {
		e := startWith(t, token, adjust, func(s *api.Server) { s.Live = s.App.(*app.App).Live() })
		addRoom(e, "room")
		code, loc, answer := e.whep("room?reorder=1", newViewer(t, webrtc.MimeTypeH264).offer(t), token, "application/sdp")
		if code != http.StatusCreated {
			t.Fatalf("offer: %d %s", code, answer)
		}
		defer e.do("DELETE", loc, "")
		var out []string
		for _, l := range strings.Split(answer, "\n") {
			if c, ok := strings.CutPrefix(strings.TrimSpace(l), "a=candidate:"); ok {
				out = append(out, c)
			}
		}
		if len(out) == 0 {
			t.Fatalf("no candidates in the answer:\n%s", answer)
		}
		return out
	}
	for _, c := range candidates(func(c *config.Config) { c.Live.ICE.Loopback = true }) {
		if !strings.Contains(c, " typ host") || strings.Contains(c, ".local ") {
			t.Errorf("default: candidate %q, want host candidates with addresses", c)
		}
	}
	public := 0
	for _, c := range candidates(func(c *config.Config) {
		c.Live.ICE = config.ICE{PublicIPs: []string{"203.0.113.7"}, PortMin: 41000, PortMax: 41010, Loopback: true}
	}) {
		f := strings.Fields(c) // foundation component transport priority address port typ type
		if len(f) < 8 || f[5] < "41000" || f[5] > "41010" || len(f[5]) != 5 {
			t.Errorf("ports 41000-41010: candidate %q", c)
			continue
		}
		switch {
		case f[4] == "203.0.113.7":
			public++
		case !strings.Contains(f[4], ":"): // an IPv6 address is its own public address
			t.Errorf("public_ips 203.0.113.7: IPv4 candidate %q", c)
		}
	}
	if public == 0 {
		t.Error("no candidate with the public address")
	}
}
