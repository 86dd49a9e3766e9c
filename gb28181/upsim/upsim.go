// Package upsim is a GB28181 upper platform for tests, written from raw SIP text following
// the message examples of GB/T 28181-2016 §9 and Annex A, not through a SIP library: it
// challenges a lower platform's REGISTER with a digest (RFC 2617 MD5) and checks the answer,
// answers keepalives, sends Catalog/DeviceInfo/DeviceStatus queries and collects the
// responses, INVITEs a channel (UDP, TCP with the platform listening or connecting) and keeps
// the RTP payload (the PS stream), sends BYE, subscribes to alarms and collects the alarms
// (MESSAGE or NOTIFY). vinfer's lower platform (gb28181/cascade) is tested against it.
package upsim

import (
	"bufio"
	"cmp"
	"crypto/md5"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vinfer/vinfer/internal/testutil/sipmsg"
)

// Upper is an upper platform listening on loopback over one transport.
type Upper struct {
	// ID and Domain are the platform's SIP ID and domain; Password the one lower platforms
	// must answer the digest with.
	ID, Domain, Password string
	// Transport is "UDP" or "TCP".
	Transport string

	// Registers counts REGISTERs with a correct digest (Unregisters those of them with
	// Expires 0), Refused those with a wrong one, Keepalives the keepalives received.
	Registers, Unregisters, Refused, Keepalives atomic.Int64
	// Forget makes the platform answer keepalives 403 (it restarted and forgot the lower one).
	Forget atomic.Bool
	// Algorithm is the digest's algorithm: "" or "MD5" (GB/T 28181-2016), "SHA-256" (as the
	// 2022 edition allows). Set it before the first REGISTER.
	Algorithm string

	t      testing.TB
	udp    net.PacketConn
	ln     net.Listener
	local  string
	nonce  string
	tag    string
	cseq   atomic.Int64
	ackSeq atomic.Int64

	mu       sync.Mutex
	lower    string   // the registered lower platform's ID
	lowerAt  net.Addr // where its requests came from (UDP)
	lowerTCP net.Conn // its connection (TCP)
	waiters  map[string]chan *Msg
	msgs     []*Msg // MESSAGE and NOTIFY requests received other than keepalives
	closed   chan struct{}
}

// Msg is a SIP message: its start line, header lines and body.
type Msg = sipmsg.Msg

// New starts an upper platform with id and password on 127.0.0.1 over transport ("UDP" or
// "TCP"); it stops at the test's end.
func New(t testing.TB, transport, id, password string) *Upper {
	u := &Upper{t: t, ID: id, Domain: id[:10], Password: password, Transport: transport, tag: strconv.FormatUint(rand.Uint64(), 16),
		waiters: map[string]chan *Msg{}, closed: make(chan struct{})}
	var err error
	if transport == "UDP" {
		u.udp, err = net.ListenPacket("udp", "127.0.0.1:0")
		if err == nil {
			u.local = u.udp.LocalAddr().String()
			go u.readUDP()
		}
	} else {
		u.ln, err = net.Listen("tcp", "127.0.0.1:0")
		if err == nil {
			u.local = u.ln.Addr().String()
			go u.accept()
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(u.Close)
	return u
}

// Addr is the platform's SIP host:port.
func (u *Upper) Addr() string { return u.local }

// Close stops it.
func (u *Upper) Close() {
	select {
	case <-u.closed:
		return
	default:
	}
	close(u.closed)
	if u.udp != nil {
		u.udp.Close()
	}
	if u.ln != nil {
		u.ln.Close()
	}
	u.mu.Lock()
	if u.lowerTCP != nil {
		u.lowerTCP.Close()
	}
	u.mu.Unlock()
}

func (u *Upper) readUDP() {
	buf := make([]byte, 65536)
	for {
		n, from, err := u.udp.ReadFrom(buf)
		if err != nil {
			return
		}
		if n <= 4 {
			continue
		}
		u.handle(sipmsg.Parse(buf[:n]), from, nil)
	}
}

func (u *Upper) accept() {
	for {
		c, err := u.ln.Accept()
		if err != nil {
			return
		}
		go u.readTCP(c)
	}
}

// readTCP reads Content-Length framed messages (RFC 3261 §18.3).
func (u *Upper) readTCP(c net.Conn) {
	defer c.Close()
	r := bufio.NewReaderSize(c, 65536)
	for {
		raw, err := sipmsg.Read(r)
		if err != nil {
			return
		}
		u.handle(sipmsg.Parse(raw), c.RemoteAddr(), c)
	}
}

// send writes b to the lower platform (where it last spoke from), or to addr/conn.
func (u *Upper) send(b []byte, to net.Addr, conn net.Conn) {
	if conn != nil {
		conn.SetWriteDeadline(time.Now().Add(5 * time.Second))
		conn.Write(b)
		return
	}
	u.udp.WriteTo(b, to)
}

func (u *Upper) handle(m *Msg, from net.Addr, conn net.Conn) {
	if strings.HasPrefix(m.Start, "SIP/2.0 ") {
		if m.Status() < 200 {
			return
		}
		u.mu.Lock()
		w := u.waiters[m.Get("Call-ID")+" "+m.Get("CSeq")]
		u.mu.Unlock()
		if w != nil {
			select {
			case w <- m:
			default:
			}
		}
		return
	}
	switch m.Method() {
	case "REGISTER":
		u.onRegister(m, from, conn)
	case "MESSAGE", "NOTIFY":
		if m.Field("CmdType") == "Keepalive" {
			u.Keepalives.Add(1)
			if u.Forget.Load() {
				u.reply(m, from, conn, 403, "Forbidden", nil)
				return
			}
		} else {
			u.mu.Lock()
			u.msgs = append(u.msgs, m)
			u.mu.Unlock()
		}
		u.reply(m, from, conn, 200, "OK", nil)
	default:
		u.reply(m, from, conn, 405, "Method Not Allowed", nil)
	}
}

// onRegister challenges, then checks the digest (GB/T 28181-2016 §9.1.2.1, RFC 2617 §3.2.2):
// a right answer is 200 with Date, a wrong one 403.
func (u *Upper) onRegister(m *Msg, from net.Addr, conn net.Conn) {
	auth := m.Get("Authorization")
	if auth == "" {
		u.mu.Lock()
		u.nonce = strconv.FormatUint(rand.Uint64(), 16)
		nonce := u.nonce
		u.mu.Unlock()
		u.reply(m, from, conn, 401, "Unauthorized", nil,
			fmt.Sprintf(`WWW-Authenticate: Digest realm="%s",nonce="%s",algorithm=%s`, u.Domain, nonce, cmp.Or(u.Algorithm, "MD5")))
		return
	}
	h := func(s string) string { x := md5.Sum([]byte(s)); return hex.EncodeToString(x[:]) }
	if u.Algorithm == "SHA-256" {
		h = func(s string) string { x := sha256.Sum256([]byte(s)); return hex.EncodeToString(x[:]) }
	}
	user, realm, nonce, uri := param(auth, "username"), param(auth, "realm"), param(auth, "nonce"), param(auth, "uri")
	want := h(h(user+":"+realm+":"+u.Password) + ":" + nonce + ":" + h("REGISTER:"+uri))
	if qop := paramBare(auth, "qop"); qop != "" {
		want = h(h(user+":"+realm+":"+u.Password) + ":" + nonce + ":" + paramBare(auth, "nc") + ":" + param(auth, "cnonce") + ":" + qop + ":" + h("REGISTER:"+uri))
	}
	u.mu.Lock()
	okNonce := nonce == u.nonce
	u.mu.Unlock()
	if !okNonce || param(auth, "response") != want {
		u.Refused.Add(1)
		u.reply(m, from, conn, 403, "Forbidden", nil)
		return
	}
	u.mu.Lock()
	_, after, _ := strings.Cut(m.Get("From"), "sip:")
	u.lower, _, _ = strings.Cut(after, "@")
	u.lowerAt, u.lowerTCP = from, conn
	u.mu.Unlock()
	u.Registers.Add(1)
	if m.Get("Expires") == "0" {
		u.Unregisters.Add(1)
	}
	u.reply(m, from, conn, 200, "OK", nil, "Date: "+time.Now().Format("2006-01-02T15:04:05.000"), "Expires: "+m.Get("Expires"))
}

func param(h, name string) string {
	for _, p := range strings.Split(strings.TrimPrefix(h, "Digest "), ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(p), "=")
		if k == name {
			return strings.Trim(v, `"`)
		}
	}
	return ""
}

func paramBare(h, name string) string { return param(h, name) }

// reply answers m, copying Via, From, To (adding a tag), Call-ID and CSeq (RFC 3261 §8.2.6).
func (u *Upper) reply(m *Msg, from net.Addr, conn net.Conn, code int, reason string, body []byte, extra ...string) {
	var b strings.Builder
	fmt.Fprintf(&b, "SIP/2.0 %d %s\r\n", code, reason)
	for _, h := range m.Hdrs {
		if k, _, _ := strings.Cut(h, ":"); strings.EqualFold(strings.TrimSpace(k), "Via") {
			b.WriteString(h + "\r\n")
		}
	}
	to := m.Get("To")
	if !strings.Contains(to, "tag=") {
		to += ";tag=" + u.tag
	}
	fmt.Fprintf(&b, "From: %s\r\nTo: %s\r\nCall-ID: %s\r\nCSeq: %s\r\n", m.Get("From"), to, m.Get("Call-ID"), m.Get("CSeq"))
	for _, h := range extra {
		b.WriteString(h + "\r\n")
	}
	fmt.Fprintf(&b, "User-Agent: upsim\r\nContent-Length: %d\r\n\r\n", len(body))
	u.send(append([]byte(b.String()), body...), from, conn)
}

// Aim makes requests go to the lower platform id at addr (UDP) without its registration: a
// stranger's requests.
func (u *Upper) Aim(id, addr string) {
	a, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		u.t.Fatal(err)
	}
	u.mu.Lock()
	u.lower, u.lowerAt = id, a
	u.mu.Unlock()
}

// Lower is the ID of the lower platform registered, "" before.
func (u *Upper) Lower() string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.lower
}

// Request sends a request to the lower platform in dialog callID ("": a new one) with the
// To tag toTag, and waits up to 20 s for its final response (retransmitting over UDP, RFC
// 3261 §17.1.2.2). ruser is the Request-URI's user (the lower platform or a channel).
func (u *Upper) Request(method, ruser, callID, toTag string, extra []string, ctype string, body []byte) (*Msg, string) {
	u.mu.Lock()
	at, conn := u.lowerAt, u.lowerTCP
	u.mu.Unlock()
	if callID == "" {
		callID = strconv.FormatUint(rand.Uint64(), 10) + "@upsim"
	}
	var n int64
	if method == "ACK" { // the INVITE's number (RFC 3261 §17.1.1.3)
		n = u.ackSeq.Load()
	} else {
		n = u.cseq.Add(1)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s sip:%s@%s SIP/2.0\r\n", method, ruser, u.Domain)
	fmt.Fprintf(&b, "Via: SIP/2.0/%s %s;rport;branch=z9hG4bK%d\r\n", u.Transport, u.local, rand.Uint64())
	fmt.Fprintf(&b, "From: <sip:%s@%s>;tag=%s\r\n", u.ID, u.Domain, u.tag)
	to := fmt.Sprintf("<sip:%s@%s>", ruser, u.Domain)
	if toTag != "" {
		to += ";tag=" + toTag
	}
	fmt.Fprintf(&b, "To: %s\r\nCall-ID: %s\r\nCSeq: %d %s\r\nMax-Forwards: 70\r\n", to, callID, n, method)
	fmt.Fprintf(&b, "Contact: <sip:%s@%s>\r\n", u.ID, u.local)
	for _, h := range extra {
		b.WriteString(h + "\r\n")
	}
	if ctype != "" {
		fmt.Fprintf(&b, "Content-Type: %s\r\n", ctype)
	}
	fmt.Fprintf(&b, "Content-Length: %d\r\n\r\n", len(body))
	msg := append([]byte(b.String()), body...)
	if method == "ACK" {
		u.send(msg, at, conn)
		return nil, callID
	}
	key := fmt.Sprintf("%s %d %s", callID, n, method)
	w := make(chan *Msg, 1)
	u.mu.Lock()
	u.waiters[key] = w
	u.mu.Unlock()
	defer func() { u.mu.Lock(); delete(u.waiters, key); u.mu.Unlock() }()
	u.send(msg, at, conn)
	deadline := time.After(20 * time.Second)
	resend := 500 * time.Millisecond
	for {
		select {
		case m := <-w:
			return m, callID
		case <-time.After(resend):
			if conn == nil {
				u.send(msg, at, nil)
				resend = min(2*resend, 4*time.Second)
			}
		case <-deadline:
			return &Msg{Start: "SIP/2.0 0 timeout"}, callID
		}
	}
}

// Query sends a MANSCDP query (§A.2.4) of cmd for device and returns the MESSAGE's response
// and the SN to wait for.
func (u *Upper) Query(cmd, device string) (*Msg, string) {
	sn := strconv.Itoa(rand.IntN(1e6))
	body := fmt.Sprintf("<?xml version=\"1.0\" encoding=\"GB2312\"?>\r\n<Query>\r\n<CmdType>%s</CmdType>\r\n<SN>%s</SN>\r\n<DeviceID>%s</DeviceID>\r\n</Query>\r\n", cmd, sn, device)
	m, _ := u.Request("MESSAGE", u.Lower(), "", "", nil, "Application/MANSCDP+xml", []byte(body))
	return m, sn
}

// RecordInfo asks channel's recordings in [start, end] ("2006-01-02T15:04:05") of type typ
// (§A.2.4.5: time, alarm, manual, all) and returns the MESSAGE's response and the SN to wait
// for.
func (u *Upper) RecordInfo(channel, start, end, typ string) (*Msg, string) {
	sn := strconv.Itoa(rand.IntN(1e6))
	body := fmt.Sprintf("<?xml version=\"1.0\" encoding=\"GB2312\"?>\r\n<Query>\r\n<CmdType>RecordInfo</CmdType>\r\n<SN>%s</SN>\r\n<DeviceID>%s</DeviceID>\r\n<StartTime>%s</StartTime>\r\n<EndTime>%s</EndTime>\r\n<Secrecy>0</Secrecy>\r\n<Type>%s</Type>\r\n</Query>\r\n",
		sn, channel, start, end, typ)
	m, _ := u.Request("MESSAGE", u.Lower(), "", "", nil, "Application/MANSCDP+xml", []byte(body))
	return m, sn
}

// Messages returns the MESSAGE and NOTIFY requests received (keepalives aside) for which
// keep returns true.
func (u *Upper) Messages(keep func(*Msg) bool) []*Msg {
	u.mu.Lock()
	defer u.mu.Unlock()
	var out []*Msg
	for _, m := range u.msgs {
		if keep(m) {
			out = append(out, m)
		}
	}
	return out
}

// ToTag is the tag of a response's To header.
func ToTag(m *Msg) string {
	_, tag, _ := strings.Cut(m.Get("To"), "tag=")
	tag, _, _ = strings.Cut(tag, ";")
	return tag
}

// Bye ends the session callID of channel (§9.2.2.3) and returns the response.
func (u *Upper) Bye(channel, callID, toTag string) *Msg {
	m, _ := u.Request("BYE", channel, callID, toTag, nil, "", nil)
	return m
}

// SubscribeAlarms subscribes to device's alarms (§9.11.1: SUBSCRIBE, Event presence, a Query
// of CmdType Alarm with priorities 1 … 4 and AlarmMethod method, "0": all) for expires
// seconds (0: ends the subscription callID, toTag); it returns the response and the Call-ID.
func (u *Upper) SubscribeAlarms(device string, expires int, method, callID, toTag string) (*Msg, string) {
	body := fmt.Sprintf("<?xml version=\"1.0\" encoding=\"GB2312\"?>\r\n<Query>\r\n<CmdType>Alarm</CmdType>\r\n<SN>%d</SN>\r\n<DeviceID>%s</DeviceID>\r\n<StartAlarmPriority>1</StartAlarmPriority>\r\n<EndAlarmPriority>4</EndAlarmPriority>\r\n<AlarmMethod>%s</AlarmMethod>\r\n</Query>\r\n",
		rand.IntN(1e6), device, method)
	return u.Request("SUBSCRIBE", device, callID, toTag, []string{"Event: presence", fmt.Sprintf("Expires: %d", expires)}, "Application/MANSCDP+xml", []byte(body))
}

// Invite INVITEs channel for a live view (§9.2.2.1, the standard's example SDP) with media to
// rx, and ACKs a 200; it returns the response and the Call-ID.
func (u *Upper) Invite(channel string, rx *Receiver, ssrc string) (*Msg, string) {
	return u.invite(channel, rx, ssrc, "Play", "0 0", "")
}

// Playback INVITEs channel for the recording of [start, end] (Unix seconds, §9.8, Annex C:
// s=Playback, u=channel:0) with media to rx, or for its download at speed (s=Download,
// a=downloadspeed) when speed > 0, and ACKs a 200; it returns the response and the Call-ID.
func (u *Upper) Playback(channel string, rx *Receiver, ssrc string, start, end int64, speed int) (*Msg, string) {
	name, extra := "Playback", ""
	if speed > 0 {
		name, extra = "Download", fmt.Sprintf("a=downloadspeed:%d\r\n", speed)
	}
	return u.invite(channel, rx, ssrc, name+"\r\nu="+channel+":0", fmt.Sprintf("%d %d", start, end), extra)
}

func (u *Upper) invite(channel string, rx *Receiver, ssrc, name, times, extra string) (*Msg, string) {
	proto, setup := "RTP/AVP", extra
	switch rx.Mode {
	case "tcp-passive":
		proto, setup = "TCP/RTP/AVP", extra+"a=setup:passive\r\na=connection:new\r\n"
	case "tcp-active":
		proto, setup = "TCP/RTP/AVP", extra+"a=setup:active\r\na=connection:new\r\n"
	}
	sdp := fmt.Sprintf("v=0\r\no=%s 0 0 IN IP4 127.0.0.1\r\ns=%s\r\nc=IN IP4 127.0.0.1\r\nt=%s\r\nm=video %d %s 96 98 97\r\na=recvonly\r\na=rtpmap:96 PS/90000\r\na=rtpmap:98 H264/90000\r\na=rtpmap:97 MPEG4/90000\r\n%sy=%s\r\n",
		u.ID, name, times, rx.Port(), proto, setup, ssrc)
	subject := fmt.Sprintf("Subject: %s:%s,%s:0", channel, ssrc, u.ID)
	m, callID := u.Request("INVITE", channel, "", "", []string{subject}, "APPLICATION/SDP", []byte(sdp))
	if m.Status() == 200 {
		if rx.Mode == "tcp-active" {
			rx.dial(m.Body)
		}
		n, _, _ := strings.Cut(m.Get("CSeq"), " ")
		seq, _ := strconv.ParseInt(n, 10, 64)
		u.ackSeq.Store(seq)
		u.Request("ACK", channel, callID, ToTag(m), nil, "", nil)
	}
	return m, callID
}

// Receiver receives one session's RTP (UDP, or TCP with RFC 4571 framing, listening or
// connecting) and keeps its payloads: the PS stream.
type Receiver struct {
	// Mode is "udp", "tcp-passive" (the receiver listens) or "tcp-active" (it connects to
	// the address the answer gives).
	Mode string

	t       testing.TB
	udp     net.PacketConn
	ln      net.Listener
	mu      sync.Mutex
	ps      []byte
	packets int
	ssrcs   map[uint32]bool
	closed  chan struct{}
}

// NewReceiver opens a receiver on 127.0.0.1; it closes at the test's end.
func NewReceiver(t testing.TB, mode string) *Receiver {
	r := &Receiver{Mode: mode, t: t, ssrcs: map[uint32]bool{}, closed: make(chan struct{})}
	var err error
	switch mode {
	case "udp":
		if r.udp, err = net.ListenPacket("udp", "127.0.0.1:0"); err == nil {
			go r.readUDP()
		}
	case "tcp-passive":
		if r.ln, err = net.Listen("tcp", "127.0.0.1:0"); err == nil {
			go func() {
				c, err := r.ln.Accept()
				if err == nil {
					r.readTCP(c)
				}
			}()
		}
	case "tcp-active":
	default:
		t.Fatalf("receiver mode %q", mode)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	return r
}

// Port is the port offered (9, RFC 4145's discard, when connecting).
func (r *Receiver) Port() int {
	switch {
	case r.udp != nil:
		return r.udp.LocalAddr().(*net.UDPAddr).Port
	case r.ln != nil:
		return r.ln.Addr().(*net.TCPAddr).Port
	}
	return 9
}

// dial connects to the c= and m= of an answer.
func (r *Receiver) dial(answer []byte) {
	var ip, port string
	for _, l := range strings.Split(strings.ReplaceAll(string(answer), "\r\n", "\n"), "\n") {
		switch {
		case strings.HasPrefix(l, "c=IN IP4 "):
			ip = strings.TrimPrefix(l, "c=IN IP4 ")
		case strings.HasPrefix(l, "m=video "):
			port = strings.Fields(l)[1]
		}
	}
	c, err := net.DialTimeout("tcp", net.JoinHostPort(ip, port), 5*time.Second)
	if err != nil {
		r.t.Errorf("receiver: connecting to the answer's %s:%s: %v", ip, port, err)
		return
	}
	go r.readTCP(c)
}

func (r *Receiver) readUDP() {
	buf := make([]byte, 65536)
	for {
		n, _, err := r.udp.ReadFrom(buf)
		if err != nil {
			return
		}
		r.packet(buf[:n])
	}
}

func (r *Receiver) readTCP(c net.Conn) {
	go func() { <-r.closed; c.Close() }()
	br := bufio.NewReader(c)
	var hdr [2]byte
	for {
		if _, err := io.ReadFull(br, hdr[:]); err != nil {
			return
		}
		p := make([]byte, binary.BigEndian.Uint16(hdr[:]))
		if _, err := io.ReadFull(br, p); err != nil {
			return
		}
		r.packet(p)
	}
}

// packet keeps an RTP packet's payload (RFC 3550 §5.1: 12 bytes, CSRCs, extension, padding).
func (r *Receiver) packet(p []byte) {
	if len(p) < 12 || p[0]>>6 != 2 {
		return
	}
	off := 12 + 4*int(p[0]&0x0F)
	if p[0]&0x10 != 0 && len(p) >= off+4 {
		off += 4 + 4*int(binary.BigEndian.Uint16(p[off+2:]))
	}
	end := len(p)
	if p[0]&0x20 != 0 && end > 0 {
		end -= int(p[end-1])
	}
	if off > end {
		return
	}
	r.mu.Lock()
	r.ps = append(r.ps, p[off:end]...)
	r.packets++
	r.ssrcs[binary.BigEndian.Uint32(p[8:])] = true
	r.mu.Unlock()
}

// Packets is the number of RTP packets received.
func (r *Receiver) Packets() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.packets
}

// PS returns a copy of the payloads received, in order.
func (r *Receiver) PS() []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]byte(nil), r.ps...)
}

// SSRCs returns the SSRCs seen.
func (r *Receiver) SSRCs() []uint32 {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []uint32
	for s := range r.ssrcs {
		out = append(out, s)
	}
	return out
}

// Close stops receiving.
func (r *Receiver) Close() {
	select {
	case <-r.closed:
		return
	default:
	}
	close(r.closed)
	if r.udp != nil {
		r.udp.Close()
	}
	if r.ln != nil {
		r.ln.Close()
	}
}
