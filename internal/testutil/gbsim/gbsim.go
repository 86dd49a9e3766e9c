// Package gbsim is a GB28181 device simulator for tests (an NVR with four channels), written
// from raw SIP text, not through a SIP library.
package gbsim

import (
	"bufio"
	"bytes"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	pionrtp "github.com/pion/rtp"
	"golang.org/x/text/encoding/simplifiedchinese"

	"github.com/vinfer/vinfer/internal/sourcetest"
	"github.com/vinfer/vinfer/internal/testutil/sipmsg"
	"github.com/vinfer/vinfer/source/gb28181/ps"
	"github.com/vinfer/vinfer/source/rtp"
)

// Device is a GB28181 device (an NVR with four cameras) written from raw SIP text over real
// sockets, following the message examples of GB/T 28181-2016 §9 and Annex A; it shares no
// code with the platform's SIP library, so each checks the other. It answers Catalog (two
// parts of two items, SumNum 4, in GBK) and DeviceInfo queries, INVITE (sending Clip as PS over
// RTP, UDP or TCP, after the ACK) and BYE.
type Device struct {
	// ID, Password: the device's SIP user and digest password; ServerID, Domain: the
	// platform's (Domain is ServerID's first 10 digits); Server its SIP host:port; Transport
	// "UDP" or "TCP".
	ID, Password, ServerID, Domain, Server, Transport string
	// Channels are the catalog's four channel IDs (the device's first 10 digits, type 131).
	Channels []string
	// Clip is what an INVITEd session sends, once from its first sample (set before the INVITE;
	// nil: sessions send nothing); Speed its pace, in times real time (0: 4).
	Clip  *sourcetest.Clip
	Speed float64
	// Sent counts the clip's frames sent, all sessions together.
	Sent atomic.Int64
	// Invites, Byes and Queries count the requests received; AlarmAnswers the platform's
	// Alarm Responses among the queries.
	Invites, Byes, Queries, AlarmAnswers atomic.Int64
	// LastInviteSDP is the last INVITE's offer (a string).
	LastInviteSDP atomic.Value
	// NoMedia: answer INVITEs but send nothing.
	NoMedia atomic.Bool

	t           testing.TB
	conn        net.Conn
	local       string
	callID, tag string
	cseq        atomic.Int64
	mu          sync.Mutex
	waiters     map[string]chan *Msg // "cseq method" → final response
	sessions    map[string]*session  // Call-ID → session
	wmu         sync.Mutex
	closed      chan struct{}
}

// Msg is a SIP message as received: its start line, its header lines and its body.
type Msg = sipmsg.Msg

// New connects a device to the platform serverID at server (host:port) over transport ("UDP"
// or "TCP"); it closes at the test's end. Register it next.
func New(t testing.TB, serverID, server, transport, id, password string) *Device {
	d := &Device{t: t, ID: id, Password: password, ServerID: serverID, Domain: serverID[:10], Server: server,
		Transport: transport, waiters: map[string]chan *Msg{}, sessions: map[string]*session{},
		closed: make(chan struct{})}
	for i := 1; i <= 4; i++ {
		d.Channels = append(d.Channels, id[:10]+"13100000"+fmt.Sprintf("%02d", i))
	}
	d.connect()
	t.Cleanup(d.Close)
	return d
}

// connect opens a new socket (a restarted device has a new one) and starts reading.
func (d *Device) connect() {
	var err error
	d.conn, err = net.DialTimeout(strings.ToLower(d.Transport), d.Server, 5*time.Second)
	if err != nil {
		d.t.Fatal(err)
	}
	d.local = d.conn.LocalAddr().String()
	d.callID = fmt.Sprintf("%d@%s", rand.Uint64(), d.local)
	d.tag = strconv.FormatUint(rand.Uint64(), 16)
	go d.read(d.conn)
}

// Close ends the device: its connection and sessions.
func (d *Device) Close() {
	select {
	case <-d.closed:
		return
	default:
	}
	close(d.closed)
	d.conn.Close()
	d.mu.Lock()
	for _, s := range d.sessions {
		s.stop()
	}
	d.mu.Unlock()
}

// Restart drops the connection and the sessions, as a rebooting device does.
func (d *Device) Restart() {
	d.conn.Close()
	d.mu.Lock()
	for k, s := range d.sessions {
		s.stop()
		delete(d.sessions, k)
	}
	d.mu.Unlock()
	d.connect()
}

func (d *Device) write(b []byte) {
	d.wmu.Lock()
	defer d.wmu.Unlock()
	d.conn.SetWriteDeadline(time.Now().Add(5 * time.Second))
	d.conn.Write(b)
}

// read parses datagrams (UDP) or a Content-Length framed stream (TCP).
func (d *Device) read(conn net.Conn) {
	r := bufio.NewReaderSize(conn, 65536)
	buf := make([]byte, 65536)
	for {
		var raw []byte
		if d.Transport == "UDP" {
			n, err := conn.Read(buf)
			if err != nil {
				return
			}
			raw = buf[:n]
		} else {
			var err error
			if raw, err = sipmsg.Read(r); err != nil {
				return
			}
		}
		d.handle(sipmsg.Parse(raw))
	}
}

func (d *Device) handle(m *Msg) {
	if strings.HasPrefix(m.Start, "SIP/2.0 ") {
		code, _ := strconv.Atoi(strings.Fields(m.Start)[1])
		if code < 200 {
			return
		}
		d.mu.Lock()
		w := d.waiters[m.Get("CSeq")]
		delete(d.waiters, m.Get("CSeq"))
		d.mu.Unlock()
		if w != nil {
			w <- m
		}
		return
	}
	method := strings.Fields(m.Start)[0]
	switch method {
	case "MESSAGE":
		d.reply(m, 200, "OK", "", nil)
		d.Queries.Add(1)
		switch {
		case bytes.Contains(m.Body, []byte("<Response>")) && bytes.Contains(m.Body, []byte("<CmdType>Alarm</CmdType>")):
			d.AlarmAnswers.Add(1)
		case bytes.Contains(m.Body, []byte("<CmdType>Catalog</CmdType>")):
			go d.sendCatalog(snOf(m.Body))
		case bytes.Contains(m.Body, []byte("<CmdType>DeviceInfo</CmdType>")):
			go d.Message(fmt.Sprintf("<?xml version=\"1.0\" encoding=\"GB2312\"?>\r\n<Response>\r\n<CmdType>DeviceInfo</CmdType>\r\n<SN>%s</SN>\r\n<DeviceID>%s</DeviceID>\r\n<Result>OK</Result>\r\n<DeviceName>测试录像机</DeviceName>\r\n<Manufacturer>Sim</Manufacturer>\r\n<Model>NVR-4</Model>\r\n<Firmware>V1.0</Firmware>\r\n<Channel>4</Channel>\r\n</Response>\r\n", snOf(m.Body), d.ID), true)
		}
	case "INVITE":
		d.Invites.Add(1)
		d.LastInviteSDP.Store(string(m.Body))
		d.answer(m)
	case "ACK":
		d.mu.Lock()
		s := d.sessions[m.Get("Call-ID")]
		d.mu.Unlock()
		if s != nil && !d.NoMedia.Load() {
			s.start()
		}
	case "BYE":
		d.Byes.Add(1)
		d.mu.Lock()
		s := d.sessions[m.Get("Call-ID")]
		delete(d.sessions, m.Get("Call-ID"))
		d.mu.Unlock()
		if s != nil {
			s.stop()
			d.reply(m, 200, "OK", "", nil)
		} else {
			d.reply(m, 481, "Call/Transaction Does Not Exist", "", nil)
		}
	default:
		d.reply(m, 405, "Method Not Allowed", "", nil)
	}
}

func snOf(body []byte) string {
	_, after, _ := bytes.Cut(body, []byte("<SN>"))
	sn, _, _ := bytes.Cut(after, []byte("</SN>"))
	return string(sn)
}

// reply answers a request, copying Via, From, To, Call-ID and CSeq (RFC 3261 §8.2.6).
func (d *Device) reply(m *Msg, code int, reason, ctype string, body []byte) {
	var b strings.Builder
	fmt.Fprintf(&b, "SIP/2.0 %d %s\r\n", code, reason)
	for _, v := range m.All("Via") {
		b.WriteString(v + "\r\n")
	}
	to := m.Get("To")
	if !strings.Contains(to, "tag=") {
		to += ";tag=" + d.tag
	}
	fmt.Fprintf(&b, "From: %s\r\nTo: %s\r\nCall-ID: %s\r\nCSeq: %s\r\n", m.Get("From"), to, m.Get("Call-ID"), m.Get("CSeq"))
	if ctype != "" {
		fmt.Fprintf(&b, "Contact: <sip:%s@%s>\r\nContent-Type: %s\r\n", d.ID, d.local, ctype)
	}
	fmt.Fprintf(&b, "User-Agent: sim\r\nContent-Length: %d\r\n\r\n", len(body))
	d.write(append([]byte(b.String()), body...))
}

// request sends a request and waits for its final response.
func (d *Device) request(method, uri string, extra []string, ctype string, body []byte) *Msg {
	return d.requestIn("", method, uri, extra, ctype, body)
}

// requestIn is request with a Call-ID ("": the registration's for REGISTER, a new one else).
func (d *Device) requestIn(callID, method, uri string, extra []string, ctype string, body []byte) *Msg {
	n := d.cseq.Add(1)
	key := fmt.Sprintf("%d %s", n, method)
	w := make(chan *Msg, 1)
	d.mu.Lock()
	d.waiters[key] = w
	d.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s SIP/2.0\r\n", method, uri)
	fmt.Fprintf(&b, "Via: SIP/2.0/%s %s;rport;branch=z9hG4bK%d\r\n", d.Transport, d.local, rand.Uint64())
	fmt.Fprintf(&b, "From: <sip:%s@%s>;tag=%s\r\n", d.ID, d.Domain, d.tag)
	to := d.ID
	if method == "MESSAGE" {
		to = d.ServerID
	}
	fmt.Fprintf(&b, "To: <sip:%s@%s>\r\n", to, d.Domain)
	switch {
	case callID != "":
	case method == "REGISTER":
		callID = d.callID
	default:
		callID = fmt.Sprintf("%d", rand.Uint64())
	}
	fmt.Fprintf(&b, "Call-ID: %s\r\nCSeq: %d %s\r\nMax-Forwards: 70\r\nUser-Agent: sim\r\n", callID, n, method)
	for _, h := range extra {
		b.WriteString(h + "\r\n")
	}
	if ctype != "" {
		fmt.Fprintf(&b, "Content-Type: %s\r\n", ctype)
	}
	fmt.Fprintf(&b, "Content-Length: %d\r\n\r\n", len(body))
	msg := append([]byte(b.String()), body...)
	d.write(msg)
	// over UDP, retransmit as RFC 3261 §17.1.2.2 says (timer E: T1, doubling up to T2)
	deadline := time.After(20 * time.Second)
	resend := 500 * time.Millisecond
	for {
		select {
		case m := <-w:
			return m
		case <-time.After(resend):
			if d.Transport == "UDP" {
				d.write(msg)
				resend = min(2*resend, 4*time.Second)
			}
		case <-deadline:
			return &Msg{Start: "SIP/2.0 0 timeout"}
		}
	}
}

// Register does REGISTER, then the digest round when challenged (GB/T 28181-2016 §9.1.2.1,
// with the password p); it returns the final response.
func (d *Device) Register(p string, expires int) *Msg {
	uri := fmt.Sprintf("sip:%s@%s", d.ServerID, d.Domain)
	hdrs := []string{fmt.Sprintf("Contact: <sip:%s@%s>", d.ID, d.local), fmt.Sprintf("Expires: %d", expires)}
	m := d.request("REGISTER", uri, hdrs, "", nil)
	if m.Status() != 401 {
		return m
	}
	ch := m.Get("WWW-Authenticate")
	realm, nonce := param(ch, "realm"), param(ch, "nonce")
	h := func(s string) string { x := md5.Sum([]byte(s)); return hex.EncodeToString(x[:]) }
	resp := h(h(d.ID+":"+realm+":"+p) + ":" + nonce + ":" + h("REGISTER:"+uri))
	auth := fmt.Sprintf(`Authorization: Digest username="%s", realm="%s", nonce="%s", uri="%s", response="%s", algorithm=MD5`, d.ID, realm, nonce, uri, resp)
	return d.request("REGISTER", uri, append(hdrs, auth), "", nil)
}

func param(h, name string) string {
	_, after, ok := strings.Cut(h, name+`="`)
	if !ok {
		return ""
	}
	v, _, _ := strings.Cut(after, `"`)
	return v
}

// Message sends a MANSCDP MESSAGE, in GBK when gbk is set.
func (d *Device) Message(body string, gbk bool) *Msg {
	b := []byte(body)
	if gbk {
		b, _ = simplifiedchinese.GBK.NewEncoder().Bytes(b)
	}
	return d.request("MESSAGE", fmt.Sprintf("sip:%s@%s", d.ServerID, d.Domain), nil, "Application/MANSCDP+xml", b)
}

// Alarm sends a Notify/Alarm for channel (a channel ID, or the device's own ID) as GB/T
// 28181-2016 §A.2.5.5 shows it (priority 1, method 5: a video alarm), description in GBK, and
// returns the response.
func (d *Device) Alarm(channel, description string) *Msg {
	return d.Message(fmt.Sprintf("<?xml version=\"1.0\" encoding=\"GB2312\"?>\r\n<Notify>\r\n<CmdType>Alarm</CmdType>\r\n<SN>%d</SN>\r\n<DeviceID>%s</DeviceID>\r\n<AlarmPriority>1</AlarmPriority>\r\n<AlarmMethod>5</AlarmMethod>\r\n<AlarmTime>%s</AlarmTime>\r\n<AlarmDescription>%s</AlarmDescription>\r\n<Info>\r\n<AlarmType>2</AlarmType>\r\n</Info>\r\n</Notify>\r\n",
		rand.IntN(1e6), channel, time.Now().Format("2006-01-02T15:04:05"), description), true)
}

// Keepalive sends one Notify/Keepalive and returns the response.
func (d *Device) Keepalive() *Msg {
	return d.Message(fmt.Sprintf("<?xml version=\"1.0\" encoding=\"GB2312\"?>\r\n<Notify>\r\n<CmdType>Keepalive</CmdType>\r\n<SN>%d</SN>\r\n<DeviceID>%s</DeviceID>\r\n<Status>OK</Status>\r\n</Notify>\r\n", rand.IntN(1e6), d.ID), false)
}

// Keepalives sends one every period until stop is closed.
func (d *Device) Keepalives(period time.Duration, stop chan struct{}) {
	go func() {
		t := time.NewTicker(period)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-d.closed:
				return
			case <-t.C:
				d.Keepalive()
			}
		}
	}()
}

var channelNames = []string{"大门", "停车场", "走廊", "仓库"}

// sendCatalog answers a Catalog query in two parts of two items, SumNum 4, in GBK.
func (d *Device) sendCatalog(sn string) {
	for part := 0; part < 2; part++ {
		var items strings.Builder
		for i := part * 2; i < part*2+2; i++ {
			fmt.Fprintf(&items, "<Item>\r\n<DeviceID>%s</DeviceID>\r\n<Name>%s</Name>\r\n<Manufacturer>Sim</Manufacturer>\r\n<Model>IPC</Model>\r\n<Owner>Owner</Owner>\r\n<CivilCode>3402000000</CivilCode>\r\n<Address>%s</Address>\r\n<Parental>0</Parental>\r\n<ParentID>%s</ParentID>\r\n<Status>ON</Status>\r\n</Item>\r\n",
				d.Channels[i], channelNames[i], channelNames[i], d.ID)
		}
		d.Message(fmt.Sprintf("<?xml version=\"1.0\" encoding=\"GB2312\"?>\r\n<Response>\r\n<CmdType>Catalog</CmdType>\r\n<SN>%s</SN>\r\n<DeviceID>%s</DeviceID>\r\n<SumNum>4</SumNum>\r\n<DeviceList Num=\"2\">\r\n%s</DeviceList>\r\n</Response>\r\n", sn, d.ID, items.String()), true)
	}
}

// answer reads the offer and answers 200 with the device's SDP (GB/T 28181-2016 §9.2.2).
func (d *Device) answer(m *Msg) {
	var ip, port, ssrc, setup string
	tcp := false
	for _, l := range strings.Split(strings.ReplaceAll(string(m.Body), "\r\n", "\n"), "\n") {
		switch {
		case strings.HasPrefix(l, "c=IN IP4 "):
			ip = strings.TrimPrefix(l, "c=IN IP4 ")
		case strings.HasPrefix(l, "m=video "):
			f := strings.Fields(l)
			port, tcp = f[1], strings.HasPrefix(f[2], "TCP")
		case strings.HasPrefix(l, "y="):
			ssrc = l[2:]
		case strings.HasPrefix(l, "a=setup:"):
			setup = l[8:]
		}
	}
	n, _ := strconv.ParseUint(ssrc, 10, 32)
	s := &session{clip: d.Clip, speed: d.Speed, sent: &d.Sent, ssrc: uint32(n), target: net.JoinHostPort(ip, port), tcp: tcp, done: make(chan struct{})}
	localIP, _, _ := net.SplitHostPort(d.local)
	mport, msetup := "15060", ""
	if tcp {
		msetup = "a=setup:active\r\na=connection:new\r\n"
		if setup == "active" { // the platform connects: listen
			ln, err := net.Listen("tcp", net.JoinHostPort(localIP, "0"))
			if err != nil {
				d.reply(m, 500, "Server Internal Error", "", nil)
				return
			}
			s.ln = ln
			mport = strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
			msetup = "a=setup:passive\r\na=connection:new\r\n"
		}
	}
	proto := "RTP/AVP"
	if tcp {
		proto = "TCP/RTP/AVP"
	}
	body := fmt.Sprintf("v=0\r\no=%s 0 0 IN IP4 %s\r\ns=Play\r\nc=IN IP4 %s\r\nt=0 0\r\nm=video %s %s 96\r\na=sendonly\r\na=rtpmap:96 PS/90000\r\n%sy=%s\r\nf=\r\n",
		d.Channels[0], localIP, localIP, mport, proto, msetup, ssrc)
	d.mu.Lock()
	d.sessions[m.Get("Call-ID")] = s
	d.mu.Unlock()
	d.reply(m, 200, "OK", "APPLICATION/SDP", []byte(body))
}

// EndMedia stops sending on the session callID and notifies the platform with MediaStatus 121
// (GB/T 28181-2016 §A.2.5: the stream ended) in that session's Call-ID; it returns the
// response.
func (d *Device) EndMedia(callID, channel string) *Msg {
	d.mu.Lock()
	if s := d.sessions[callID]; s != nil {
		s.stop()
	}
	d.mu.Unlock()
	body := fmt.Sprintf("<?xml version=\"1.0\" encoding=\"GB2312\"?>\r\n<Notify>\r\n<CmdType>MediaStatus</CmdType>\r\n<SN>%d</SN>\r\n<DeviceID>%s</DeviceID>\r\n<NotifyType>121</NotifyType>\r\n</Notify>\r\n", rand.IntN(1e6), channel)
	return d.requestIn(callID, "MESSAGE", fmt.Sprintf("sip:%s@%s", d.ServerID, d.Domain), nil, "Application/MANSCDP+xml", []byte(body))
}

// StopMedia stops sending on every session, which stay open (media stops, the device stays).
func (d *Device) StopMedia() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, s := range d.sessions {
		s.stop()
	}
}

// SessionCount is the number of sessions open (INVITEd, not yet ended by BYE).
func (d *Device) SessionCount() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.sessions)
}

// session sends the clip as PS over RTP (GB/T 28181-2016 Annex C) over UDP, or over TCP
// with RFC 4571 framing, connecting (the platform passive) or accepting (the platform
// active), until stopped.
type session struct {
	clip   *sourcetest.Clip
	ssrc   uint32
	target string
	tcp    bool
	ln     net.Listener
	once   sync.Once
	done   chan struct{}
	wg     sync.WaitGroup
	speed  float64
	sent   *atomic.Int64
}

func (s *session) start() {
	if s.clip == nil {
		return
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		var conn net.Conn
		var err error
		switch {
		case s.ln != nil:
			s.ln.(*net.TCPListener).SetDeadline(time.Now().Add(20 * time.Second))
			conn, err = s.ln.Accept()
		case s.tcp:
			conn, err = net.DialTimeout("tcp", s.target, 5*time.Second)
		default:
			conn, err = net.Dial("udp", s.target)
		}
		if err != nil {
			return
		}
		defer conn.Close()
		go func() { <-s.done; conn.Close() }()
		mux := ps.Muxer{Codec: s.clip.Codec}
		var frame, out []byte
		seq := uint16(rand.Uint32())
		start := time.Now()
		rate := s.speed
		if rate <= 0 {
			rate = 4
		}
		for i := range s.clip.Samples {
			smp := s.clip.Samples[i]
			at := start.Add(time.Duration(float64(smp.DTS-s.clip.Samples[0].DTS) / 90000 / rate * float64(time.Second)))
			select {
			case <-s.done:
				return
			case <-time.After(time.Until(at)):
			}
			frame = mux.Frame(frame[:0], s.clip.AnnexB(i), smp.PTS+90000, smp.DTS+90000, smp.Key)
			for b := frame; len(b) > 0; {
				n := min(len(b), 1400)
				p := pionrtp.Packet{Header: pionrtp.Header{Version: 2, PayloadType: 96, SequenceNumber: seq,
					Timestamp: uint32(smp.DTS), SSRC: s.ssrc, Marker: n == len(b)}, Payload: b[:n]}
				raw, _ := p.Marshal()
				if s.tcp {
					out, _ = rtp.AppendFrame(out[:0], raw)
					raw = out
				}
				conn.SetWriteDeadline(time.Now().Add(5 * time.Second))
				if _, err := conn.Write(raw); err != nil && s.tcp {
					return
				}
				seq++
				b = b[n:]
			}
			s.sent.Add(1)
		}
	}()
}

func (s *session) stop() {
	s.once.Do(func() {
		close(s.done)
		if s.ln != nil {
			s.ln.Close()
		}
	})
}
