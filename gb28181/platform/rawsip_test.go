package platform

import (
	"bytes"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vinfer/vinfer/internal/testutil/gbsim"
)

// rawUA is a SIP endpoint written in the test: raw text over its own UDP socket, as an
// attacker (or a device firmware) would write it.
type rawUA struct {
	t    *testing.T
	conn *net.UDPConn
	srv  string // the platform's host:port
	in   chan *gbsim.Msg
}

func newRawUA(t *testing.T, srv string) *rawUA {
	t.Helper()
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	u := &rawUA{t: t, conn: c, srv: srv, in: make(chan *gbsim.Msg, 256)}
	t.Cleanup(func() { c.Close() })
	go func() {
		buf := make([]byte, 65536)
		for {
			n, _, err := c.ReadFrom(buf)
			if err != nil {
				close(u.in)
				return
			}
			u.in <- parseRaw(buf[:n])
		}
	}()
	return u
}

func parseRaw(b []byte) *gbsim.Msg {
	head, body, _ := bytes.Cut(b, []byte("\r\n\r\n"))
	lines := strings.Split(string(head), "\r\n")
	return &gbsim.Msg{Start: lines[0], Hdrs: lines[1:], Body: append([]byte(nil), body...)}
}

func (u *rawUA) addr() string { return u.conn.LocalAddr().String() }

// send writes one datagram to the platform.
func (u *rawUA) send(b []byte) {
	u.t.Helper()
	a, _ := net.ResolveUDPAddr("udp", u.srv)
	if _, err := u.conn.WriteTo(b, a); err != nil {
		u.t.Fatal(err)
	}
}

// next returns the next message matching pred, failing after timeout; others are skipped
// (and handed to skip when not nil).
func (u *rawUA) next(timeout time.Duration, what string, pred func(*gbsim.Msg) bool) *gbsim.Msg {
	u.t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case m, ok := <-u.in:
			if !ok {
				u.t.Fatalf("%s: socket closed", what)
			}
			if pred(m) {
				return m
			}
		case <-deadline:
			u.t.Fatalf("%s: nothing within %v", what, timeout)
		}
	}
}

// final returns the next final response to CSeq cseq.
func (u *rawUA) final(cseq, what string) *gbsim.Msg {
	u.t.Helper()
	return u.next(30*time.Second, what, func(m *gbsim.Msg) bool {
		return strings.HasPrefix(m.Start, "SIP/2.0 ") && m.Status() >= 200 && m.Get("CSeq") == cseq
	})
}

// request is a raw request's text: via is the Via's sent-by, extra header lines are added.
func request(method, uri, via, from, to, callID string, cseq int, extra []string, body string) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s SIP/2.0\r\n", method, uri)
	fmt.Fprintf(&b, "Via: SIP/2.0/UDP %s;rport;branch=z9hG4bK%d\r\n", via, rand.Uint64())
	fmt.Fprintf(&b, "From: <sip:%s@%s>;tag=%d\r\nTo: <sip:%s@%s>\r\n", from, testDomain, rand.Uint32(), to, testDomain)
	fmt.Fprintf(&b, "Call-ID: %s\r\nCSeq: %d %s\r\nMax-Forwards: 70\r\n", callID, cseq, method)
	for _, h := range extra {
		b.WriteString(h + "\r\n")
	}
	if body != "" {
		b.WriteString("Content-Type: Application/MANSCDP+xml\r\n")
	}
	fmt.Fprintf(&b, "Content-Length: %d\r\n\r\n%s", len(body), body)
	return []byte(b.String())
}

// withVia replaces a raw request's Via sent-by and branch and its CSeq number, as an attacker
// re-sending it from elsewhere does (the digest covers neither).
func withVia(raw []byte, via string) []byte {
	lines := strings.Split(string(raw), "\r\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "Via: ") {
			lines[i] = fmt.Sprintf("Via: SIP/2.0/UDP %s;rport;branch=z9hG4bK%d", via, rand.Uint64())
		}
		if v, ok := strings.CutPrefix(l, "CSeq: "); ok {
			_, method, _ := strings.Cut(v, " ")
			lines[i] = fmt.Sprintf("CSeq: %d %s", 1000+rand.IntN(1e6), method)
		}
	}
	return []byte(strings.Join(lines, "\r\n"))
}

func md5s(s string) string { h := md5.Sum([]byte(s)); return hex.EncodeToString(h[:]) }

// rawDevice is a device written in raw SIP over a rawUA: it registers with the digest.
type rawDevice struct {
	*rawUA
	id, callID string
	cseq       int
	mu         sync.Mutex
}

func newRawDevice(t *testing.T, s *Server, id string) *rawDevice {
	u := newRawUA(t, sipAddr(s))
	return &rawDevice{rawUA: u, id: id, callID: fmt.Sprintf("%d@test", rand.Uint64())}
}

const registerURI = "sip:" + testServerID + "@" + testDomain

// registerReq is a REGISTER from the device's socket; auth "" for none.
func (d *rawDevice) registerReq(auth string) ([]byte, string) {
	d.cseq++
	extra := []string{fmt.Sprintf("Contact: <sip:%s@%s>", d.id, d.addr()), "Expires: 3600"}
	if auth != "" {
		extra = append(extra, "Authorization: "+auth)
	}
	return request("REGISTER", registerURI, d.addr(), d.id, d.id, d.callID, d.cseq, extra, ""), fmt.Sprintf("%d REGISTER", d.cseq)
}

// challenge sends REGISTER without credentials and returns the 401's WWW-Authenticate.
func (d *rawDevice) challenge() string {
	d.t.Helper()
	raw, cseq := d.registerReq("")
	d.send(raw)
	m := d.final(cseq, "challenge")
	if m.Status() != 401 {
		d.t.Fatalf("REGISTER without credentials: %s", m.Start)
	}
	return m.Get("WWW-Authenticate")
}

// authorization answers a challenge's nonce with password for a REGISTER (GB/T 28181-2016
// §9.1.2.1).
func (d *rawDevice) authorization(nonce, password string) string {
	return d.authorizationFor("REGISTER", nonce, password)
}

// authorizationFor answers a nonce for a request of method to registerURI.
func (d *rawDevice) authorizationFor(method, nonce, password string) string {
	resp := md5s(md5s(d.id+":"+testDomain+":"+password) + ":" + nonce + ":" + md5s(method+":"+registerURI))
	return fmt.Sprintf(`Digest username="%s",realm="%s",nonce="%s",uri="%s",response="%s",algorithm=MD5`, d.id, testDomain, nonce, registerURI, resp)
}

// register does the digest round; it returns the authenticated REGISTER as sent and the
// final response.
func (d *rawDevice) register() ([]byte, *gbsim.Msg) {
	d.t.Helper()
	nonce := param(d.challenge(), "nonce")
	raw, cseq := d.registerReq(d.authorization(nonce, testPassword))
	d.send(raw)
	return raw, d.final(cseq, "authenticated REGISTER")
}

func param(h, name string) string {
	_, after, ok := strings.Cut(h, name+`="`)
	if !ok {
		return ""
	}
	v, _, _ := strings.Cut(after, `"`)
	return v
}

// reply answers a request received (Via, From, To with a tag, Call-ID, CSeq copied).
func (u *rawUA) reply(m *gbsim.Msg, code int, reason, extra, body string) {
	var b strings.Builder
	fmt.Fprintf(&b, "SIP/2.0 %d %s\r\n", code, reason)
	for _, v := range m.All("Via") {
		b.WriteString(v + "\r\n")
	}
	to := m.Get("To")
	if code > 100 && !strings.Contains(to, "tag=") {
		to += ";tag=dev1"
	}
	fmt.Fprintf(&b, "From: %s\r\nTo: %s\r\nCall-ID: %s\r\nCSeq: %s\r\n%s", m.Get("From"), to, m.Get("Call-ID"), m.Get("CSeq"), extra)
	fmt.Fprintf(&b, "Content-Length: %d\r\n\r\n%s", len(body), body)
	u.send([]byte(b.String()))
}

func isRequest(method string) func(*gbsim.Msg) bool {
	return func(m *gbsim.Msg) bool { return strings.HasPrefix(m.Start, method+" ") }
}
