package platform

import (
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/internal/testutil"
	"github.com/vinfer/vinfer/internal/testutil/gbsim"
	"github.com/vinfer/vinfer/source/gb28181"
)

// fakeClock is the nonces' and the rate-limited log's clock, moved by the test.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// challengeForm is the WWW-Authenticate of GB/T 28181-2016's examples: no space after the commas.
var challengeForm = regexp.MustCompile(`^Digest realm="` + testDomain + `",nonce="[0-9a-f]{32}",algorithm=MD5(,stale=true)?$`)

// TestRegisterReplay: a REGISTER captured from a device and re-sent (byte for byte, or with
// the attacker's Via) from another port, at once or after the nonce expired, is challenged
// again, never accepted; the same with a nonce answered twice (nc not rising) or too late. The
// device stays where it registered from, and INVITEs go there.
func TestRegisterReplay(t *testing.T) {
	t.Parallel()
	clock := &fakeClock{now: time.Now()}
	s := startServerWith(t, func(c *config.GB28181) { c.NonceTTL = config.Duration(30 * time.Second) },
		func(s *Server) { s.clock = clock.Now })
	dev := newRawDevice(t, s, testDevice)
	if ch := dev.challenge(); !challengeForm.MatchString(ch) {
		t.Fatalf("challenge %q: want GB/T 28181's form %s", ch, challengeForm)
	}
	captured, m := dev.register()
	if m.Status() != 200 {
		t.Fatalf("the device's own REGISTER: %s", m.Start)
	}
	testutil.Eventually(t, 10*time.Second, "registered", func() bool { on, _, _ := s.device(testDevice); return on })

	attacker := newRawUA(t, sipAddr(s))
	refused := func(raw []byte, who *rawUA, what string) {
		t.Helper()
		who.send(raw)
		cseq := parseRaw(raw).Get("CSeq")
		if m := who.final(cseq, what); m.Status() != 401 {
			t.Fatalf("%s: %s, want 401", what, m.Start)
		}
	}
	// byte for byte from another port: its transaction is the device's (a retransmission, never
	// answered here as a success); then with the attacker's own Via, as a real replay does
	attacker.send(captured)
	refused(withVia(captured, attacker.addr()), attacker, "replay from another port")
	for len(attacker.in) > 0 {
		if r := <-attacker.in; r.Status() == 200 {
			t.Fatalf("replay answered %s", r.Start)
		}
	}
	refused(withVia(captured, dev.addr()), dev.rawUA, "the nonce answered a second time, from the device's own port")

	// a nonce answered from another address than the one it was issued to
	nonce := param(dev.challenge(), "nonce")
	raw, _ := dev.registerReq(dev.authorization(nonce, testPassword))
	refused(withVia(raw, attacker.addr()), attacker, "a fresh nonce answered from another port")

	// a nonce answered after nonce_ttl, and the capture replayed then
	nonce = param(dev.challenge(), "nonce")
	clock.Add(31 * time.Second)
	raw, cseq := dev.registerReq(dev.authorization(nonce, testPassword))
	dev.send(raw)
	if m := dev.final(cseq, "late answer"); m.Status() != 401 || !strings.HasSuffix(m.Get("WWW-Authenticate"), ",stale=true") {
		t.Fatalf("an answer after nonce_ttl: %s %q", m.Start, m.Get("WWW-Authenticate"))
	}
	refused(withVia(captured, attacker.addr()), attacker, "replay after nonce_ttl")

	// qop=auth: the nonce count must rise
	nonce = param(dev.challenge(), "nonce")
	qop := func(nc string) []byte {
		ha1, ha2 := md5s(testDevice+":"+testDomain+":"+testPassword), md5s("REGISTER:"+registerURI)
		resp := md5s(ha1 + ":" + nonce + ":" + nc + ":c0ffee:auth:" + ha2)
		raw, _ := dev.registerReq(fmt.Sprintf(`Digest username="%s",realm="%s",nonce="%s",uri="%s",response="%s",algorithm=MD5,qop=auth,nc=%s,cnonce="c0ffee"`,
			testDevice, testDomain, nonce, registerURI, resp, nc))
		return raw
	}
	raw = qop("00000001")
	dev.send(raw)
	if m := dev.final(parseRaw(raw).Get("CSeq"), "qop nc 1"); m.Status() != 200 {
		t.Fatalf("qop=auth, nc 1: %s", m.Start)
	}
	refused(qop("00000001"), dev.rawUA, "qop=auth, nc 1 again")

	if n := s.Counters.NonceRefused.Load(); n < 6 {
		t.Fatalf("nonce_refused %d, want ≥ 6", n)
	}
	info := s.Info()
	if len(info.Devices) != 1 || info.Devices[0].Addr != dev.addr() {
		t.Fatalf("the device moved: %+v (its address %s)", info.Devices, dev.addr())
	}
	// INVITEs still go to the device
	if _, err := s.OpenChannel("cam", gb28181.Channel{DeviceID: testDevice, ChannelID: testDevice[:10] + "1310000001", Transport: gb28181.TransportUDP}); err != nil {
		t.Fatal(err)
	}
	dev.next(30*time.Second, "INVITE at the device", isRequest("INVITE"))
	select {
	case m := <-attacker.in:
		if isRequest("INVITE")(m) {
			t.Fatal("INVITE sent to the attacker")
		}
	default:
	}
}

// TestSpoofedMessage: MESSAGEs (catalog, keepalive, MediaStatus) and BYEs from an address
// that is not the registered device's are refused (403, wrong_source) and change nothing; a
// MediaStatus naming an unknown Call-ID ends no session (unknown_call_id); one naming a
// session ends that session only.
func TestSpoofedMessage(t *testing.T) {
	t.Parallel()
	s := startServer(t, nil)
	d := gbsim.New(t, testServerID, sipAddr(s), "UDP", testDevice, testPassword)
	chans := openChannels(t, s, d.ID, d.Channels[:2])
	if m := d.Register(testPassword, 3600); m.Status() != 200 {
		t.Fatal(m.Start)
	}
	testutil.Eventually(t, 30*time.Second, "catalog and both sessions", func() bool {
		_, n, _ := s.device(testDevice)
		a, _ := chans[0].State()
		b, _ := chans[1].State()
		return n == 4 && a == StatePlaying && b == StatePlaying
	})
	_, call0 := chans[0].State()
	_, call1 := chans[1].State()

	attacker := newRawUA(t, sipAddr(s))
	cseq := 0
	spoof := func(method, callID, body string) *gbsim.Msg {
		t.Helper()
		cseq++
		attacker.send(request(method, registerURI, attacker.addr(), testDevice, testServerID, callID, cseq, nil, body))
		return attacker.final(fmt.Sprintf("%d %s", cseq, method), method+" from another address")
	}
	catalog := fmt.Sprintf("<?xml version=\"1.0\"?>\r\n<Response>\r\n<CmdType>Catalog</CmdType>\r\n<SN>1</SN>\r\n<DeviceID>%s</DeviceID>\r\n<SumNum>1</SumNum>\r\n<DeviceList Num=\"1\">\r\n<Item><DeviceID>%s</DeviceID><Name>HACKED</Name><Status>ON</Status></Item>\r\n</DeviceList>\r\n</Response>\r\n", testDevice, d.Channels[0])
	keepalive := fmt.Sprintf("<Notify><CmdType>Keepalive</CmdType><SN>2</SN><DeviceID>%s</DeviceID><Status>OK</Status></Notify>", testDevice)
	ended := func(ch string) string {
		return fmt.Sprintf("<Notify><CmdType>MediaStatus</CmdType><SN>3</SN><DeviceID>%s</DeviceID><NotifyType>121</NotifyType></Notify>", ch)
	}
	for _, c := range []struct{ method, callID, body string }{
		{"MESSAGE", "x1", catalog}, {"MESSAGE", "x2", keepalive},
		{"MESSAGE", call0, ended(d.Channels[0])}, {"MESSAGE", "x3", ended(d.Channels[0])}, {"BYE", call0, ""},
	} {
		if m := spoof(c.method, c.callID, c.body); m.Status() != 403 {
			t.Fatalf("%s %.40q from another address: %s, want 403", c.method, c.body, m.Start)
		}
	}
	if n := s.Counters.WrongSource.Load(); n != 5 {
		t.Fatalf("wrong_source %d, want 5", n)
	}
	for _, ch := range s.Info().Devices[0].Channels {
		if ch.Name == "HACKED" {
			t.Fatal("a spoofed catalog renamed a channel")
		}
	}
	// the device's own MediaStatus with a Call-ID of no session: ignored, counted
	if m := d.EndMedia("no-such-call", d.Channels[0]); m.Status() != 200 {
		t.Fatalf("MediaStatus, unknown Call-ID: %s", m.Start)
	}
	if n := s.Counters.UnknownCallID.Load(); n != 1 {
		t.Fatalf("unknown_call_id %d, want 1", n)
	}
	for i, want := range []string{call0, call1} {
		if st, id := chans[i].State(); st != StatePlaying || id != want {
			t.Fatalf("channel %d: %s %s, want playing %s (untouched)", i, st, id, want)
		}
	}
	if n := d.Invites.Load(); n != 2 {
		t.Fatalf("%d INVITEs, want 2 (no session ended)", n)
	}
	// the device's own MediaStatus naming channel 1's session ends that one only
	if m := d.EndMedia(call1, d.Channels[1]); m.Status() != 200 {
		t.Fatal(m.Start)
	}
	testutil.Eventually(t, 30*time.Second, "channel 1 INVITEd again", func() bool {
		st, id := chans[1].State()
		return st == StatePlaying && id != call1 && d.Invites.Load() == 3
	})
	if _, id := chans[0].State(); id != call0 {
		t.Fatal("channel 0's session ended too")
	}
}

// TestTinyDatagrams: UDP datagrams of 4 bytes or less are counted and logged once a minute,
// not once each; CRLF keepalives are neither.
func TestTinyDatagrams(t *testing.T) {
	t.Parallel()
	s, clock, own := startClockedLogged(t)
	u := newRawUA(t, sipAddr(s))
	const n = 300
	for i := range n {
		u.send([]byte("\r\n\r\n")) // keepalive, not counted
		u.send([]byte{byte('a' + i%26), 1, 2, 3}[:1+i%4])
		// one at a time, so that no datagram is lost to a full socket buffer
		testutil.Eventually(t, 10*time.Second, fmt.Sprintf("datagram %d counted", i), func() bool { return s.Counters.TinyDatagrams.Load() == uint64(i+1) })
	}
	const line = "UDP datagrams of 4 bytes or less dropped"
	if c := own.Count(line); c != 1 {
		t.Fatalf("%d log lines for %d tiny datagrams, want 1\n%s", c, n, own.String())
	}
	if strings.Contains(own.String(), "failed to parse") {
		t.Fatal("sipgo logged the datagrams")
	}
	clock.Add(61 * time.Second)
	u.send([]byte("xyz"))
	testutil.Eventually(t, 10*time.Second, "a second line a minute later", func() bool {
		return own.Count(line) == 2 && strings.Contains(own.String(), fmt.Sprintf("unlogged_since_last=%d", n-1))
	})
	if s.Counters.TinyDatagrams.Load() != n+1 {
		t.Fatal(s.Counters.TinyDatagrams.Load())
	}
}

// TestMessageDigest: with message_auth, a MESSAGE from the registered address still needs a
// digest answered on a fresh nonce: without one it is challenged (401), with one accepted
// once, replayed challenged again; only the accepted one counts as a keepalive.
func TestMessageDigest(t *testing.T) {
	t.Parallel()
	s := startServer(t, func(c *config.GB28181) { c.MessageAuth = true })
	dev := newRawDevice(t, s, testDevice)
	if _, m := dev.register(); m.Status() != 200 {
		t.Fatal(m.Start)
	}
	keepalive := fmt.Sprintf("<Notify><CmdType>Keepalive</CmdType><SN>9</SN><DeviceID>%s</DeviceID><Status>OK</Status></Notify>", testDevice)
	send := func(auth string) (*gbsim.Msg, []byte) {
		t.Helper()
		dev.cseq++
		var extra []string
		if auth != "" {
			extra = []string{"Authorization: " + auth}
		}
		raw := request("MESSAGE", registerURI, dev.addr(), testDevice, testServerID, fmt.Sprintf("k%d", dev.cseq), dev.cseq, extra, keepalive)
		dev.send(raw)
		return dev.final(fmt.Sprintf("%d MESSAGE", dev.cseq), "MESSAGE"), raw
	}
	m, _ := send("")
	if m.Status() != 401 || !challengeForm.MatchString(m.Get("WWW-Authenticate")) {
		t.Fatalf("MESSAGE without a digest: %s %q, want a 401 challenge", m.Start, m.Get("WWW-Authenticate"))
	}
	auth := dev.authorizationFor("MESSAGE", param(m.Get("WWW-Authenticate"), "nonce"), testPassword)
	if m, _ := send(auth); m.Status() != 200 {
		t.Fatalf("MESSAGE with its digest: %s", m.Start)
	}
	if m, _ := send(auth); m.Status() != 401 {
		t.Fatalf("MESSAGE with a spent nonce: %s, want 401", m.Start)
	}
	if n := s.Counters.Keepalives.Load(); n != 1 {
		t.Fatalf("keepalives %d, want 1", n)
	}
}
