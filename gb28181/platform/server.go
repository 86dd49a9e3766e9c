// Package platform makes vinfer a GB28181 platform (GB/T 28181-2016, "公共安全视频监控联网系统
// 信息传输、交换、控制技术要求"): a SIP server (RFC 3261, over UDP and TCP, on emiago/sipgo) that
// devices register with (digest authentication, expiry, keepalive), that reads their catalogs
// and device information (MANSCDP, package manscdp), and that INVITEs the channels of
// signalling-mode streams (gb28181://<device id>/<channel id>), the media arriving on vinfer's
// GB28181 receiver (source/gb28181).
//
// Cascading to an upper platform (vinfer registering as a lower platform) is package
// gb28181/cascade.
package platform

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/emiago/sipgo"
	"github.com/emiago/sipgo/sip"

	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/gb28181/manscdp"
	"github.com/vinfer/vinfer/gb28181/sdp"
	"github.com/vinfer/vinfer/internal/defs"
	"github.com/vinfer/vinfer/source"
	"github.com/vinfer/vinfer/source/gb28181"
)

// Server is vinfer's GB28181 platform. Set Config (its Init is called by Init) and Logger,
// then Init; Close stops it.
type Server struct {
	// Config is the gb28181: section.
	Config config.GB28181
	// Logger receives registrations, state changes and refusals; nil: slog.Default().
	// Passwords are never logged.
	Logger *slog.Logger

	Counters Counters
	// Waker wakes the activity-gated streams an Alarm notification concerns (the app); nil:
	// alarms are counted, not acted on.
	Waker defs.Waker
	// Forward receives each registered device's Alarm notification with the streams it
	// concerns (at least one), e.g. for the upper platforms (gb28181/cascade); nil: none. It
	// must not block.
	Forward func(streams []string, m *manscdp.Message)

	ua       *sipgo.UserAgent
	srv      *sipgo.Server
	cli      *sipgo.Client
	dialogUA *sipgo.DialogUA
	parser   *sip.Parser
	udp      net.PacketConn
	tcp      net.Listener
	bindHost string // host media sockets bind to

	nonces  nonces
	limited rateLog
	// clock is the nonces' clock; nil: time.Now. Tests set it to age nonces without waiting.
	clock func() time.Time
	ports ports
	ssrcs sdp.SSRCAllocator

	mu       sync.Mutex
	devices  map[string]*device
	channels map[*Channel]bool
	sn       int64

	alarmAnswers atomic.Int64 // Alarm Responses in flight

	ctx       context.Context
	cancel    context.CancelFunc
	wg        sync.WaitGroup
	closeOnce sync.Once
}

var _ gb28181.Signaller = (*Server)(nil)

// Init validates the configuration, opens the SIP sockets (UDP and TCP on one port) and starts
// serving and watching keepalives.
func (s *Server) Init() error {
	if s.Logger == nil {
		s.Logger = slog.Default()
	}
	s.Logger = s.Logger.With("component", "gb28181")
	if err := s.Config.Init(); err != nil {
		return err
	}
	first, last, _ := s.Config.PortRange()
	s.ports = ports{first: first, last: last}
	if s.clock == nil {
		s.clock = time.Now
	}
	s.nonces = nonces{ttl: time.Duration(s.Config.NonceTTL), now: s.clock}
	s.limited = rateLog{logger: s.Logger, every: logEvery, now: s.clock}
	s.ssrcs = sdp.SSRCAllocator{Domain: s.Config.Domain}
	if err := s.ssrcs.Init(); err != nil {
		return err
	}
	s.devices, s.channels = map[string]*device{}, map[*Channel]bool{}
	if err := s.listen(); err != nil {
		return err
	}
	s.tcp = &tcpListener{Listener: s.tcp, srv: s, maxConns: s.Config.MaxTCPConns, maxPerHost: s.Config.MaxTCPConnsPerHost,
		idle: time.Duration(s.Config.TCPIdleTimeout), msgTimeout: time.Duration(s.Config.TCPMessageTimeout), byHost: map[string]int{}}
	host, _, _ := net.SplitHostPort(s.Config.Listen)
	s.bindHost = host
	sipLog := slog.New(sipLogHandler{s.Logger.Handler(), s}).With("sip", true)
	s.parser = sip.NewParser()
	var err error
	s.ua, err = sipgo.NewUA(sipgo.WithUserAgent(s.Config.ID), sipgo.WithUserAgentHostname(s.Config.Domain),
		sipgo.WithUserAgentTransportLayerOptions(sip.WithTransportLayerLogger(sipLog), sip.WithTransportLayerReadFilter(s.filter)),
		sipgo.WithUserAgentTransactionLayerOptions(sip.WithTransactionLayerLogger(sipLog), sip.WithTransactionLayerUnhandledResponseHandler(s.onStrayResponse)))
	if err != nil {
		s.closeSockets()
		return err
	}
	s.srv, _ = sipgo.NewServer(s.ua, sipgo.WithServerLogger(sipLog))
	var copts []sipgo.ClientOption
	if ip := net.ParseIP(host); ip != nil && !ip.IsUnspecified() {
		copts = append(copts, sipgo.WithClientHostname(host))
	} else if s.Config.MediaIP != "" {
		copts = append(copts, sipgo.WithClientHostname(s.Config.MediaIP))
	}
	s.cli, _ = sipgo.NewClient(s.ua, append(copts, sipgo.WithClientLogger(sipLog))...)
	s.dialogUA = &sipgo.DialogUA{Client: s.cli, RewriteContact: true, ContactHDR: sip.ContactHeader{
		Address: sip.Uri{Scheme: "sip", User: s.Config.ID, Host: s.contactHost(), Port: s.SIPPort()}}}
	s.srv.OnRegister(s.onRegister)
	s.srv.OnMessage(s.onMessage)
	s.srv.OnBye(s.onBye)
	s.srv.OnAck(func(*sip.Request, sip.ServerTransaction) {})
	s.srv.OnOptions(func(req *sip.Request, tx sip.ServerTransaction) { s.respond(req, tx, 200, "OK") })
	s.srv.OnNoRoute(func(req *sip.Request, tx sip.ServerTransaction) {
		s.Counters.BadRequest.Add(1)
		s.respond(req, tx, 405, "Method Not Allowed")
	})
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.tcp.(*tcpListener).done = s.ctx.Done()
	s.wg.Add(3)
	go func() { defer s.wg.Done(); s.srv.ServeUDP(s.udp) }()
	go func() { defer s.wg.Done(); s.srv.ServeTCP(s.tcp) }()
	go func() { defer s.wg.Done(); s.watch() }()
	s.Logger.Info("GB28181 platform listening", "id", s.Config.ID, "domain", s.Config.Domain,
		"udp", s.udp.LocalAddr().String(), "tcp", s.tcp.Addr().String(), "media_ports", s.Config.MediaPorts)
	return nil
}

// listen opens UDP and TCP on the same port (with port 0, one the two share).
func (s *Server) listen() error {
	host, port, _ := net.SplitHostPort(s.Config.Listen)
	for range 20 {
		u, err := net.ListenPacket("udp", s.Config.Listen)
		if err != nil {
			return fmt.Errorf("gb28181: SIP over UDP: %w", err)
		}
		p := u.LocalAddr().(*net.UDPAddr).Port
		t, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(p)))
		if err != nil {
			u.Close()
			if port != "0" {
				return fmt.Errorf("gb28181: SIP over TCP: %w", err)
			}
			continue
		}
		s.udp, s.tcp = u, t
		s.Config.Listen = net.JoinHostPort(host, strconv.Itoa(p))
		return nil
	}
	return errors.New("gb28181: no port free for both UDP and TCP")
}

// SIPPort is the port SIP is served on (UDP and TCP).
func (s *Server) SIPPort() int { return s.udp.LocalAddr().(*net.UDPAddr).Port }

func (s *Server) contactHost() string {
	if s.Config.MediaIP != "" {
		return s.Config.MediaIP
	}
	host, _, _ := net.SplitHostPort(s.Config.Listen)
	if ip := net.ParseIP(host); ip != nil && !ip.IsUnspecified() {
		return host
	}
	return s.Config.Domain
}

// filter counts and drops UDP datagrams that do not parse as SIP: they carry no Via to answer
// to, and sipgo would log each in full. Datagrams of 4 bytes or less other than a CRLF
// keepalive (RFC 5626 §4.4.1) are counted and logged at most once a minute.
func (s *Server) filter(p sip.TransportReadProps, data []byte) ([]byte, error) {
	if p.Transport != "UDP" {
		return data, nil
	}
	if len(data) <= 4 {
		if len(bytes.Trim(data, "\r\n")) == 0 {
			return data, nil
		}
		s.Counters.TinyDatagrams.Add(1)
		s.limited.log("tiny_datagram", "UDP datagrams of 4 bytes or less dropped", "from", p.RemoteAddr.String(), "bytes", len(data))
		return nil, nil
	}
	if _, err := s.parser.ParseSIP(data); err != nil {
		s.Counters.Malformed.Add(1)
		s.Logger.Debug("not a SIP message, dropped", "from", p.RemoteAddr.String(), "bytes", len(data))
		return nil, nil
	}
	return data, nil
}

// Close ends every session (BYE; pending INVITEs CANCELed), stops serving and closes the
// sockets. It waits at most byeGrace for a device's answers, however many channels: a dead
// device delays a stop by about 2 s, not by its transactions' timers (Timer B, F: 32 s).
// Later calls do nothing.
func (s *Server) Close() error {
	if s.cancel == nil {
		return nil
	}
	s.closeOnce.Do(s.close)
	return nil
}

func (s *Server) close() {
	s.mu.Lock()
	chs := make([]*Channel, 0, len(s.channels))
	for c := range s.channels {
		chs = append(chs, c)
	}
	s.mu.Unlock()
	var wg sync.WaitGroup
	for _, c := range chs { // at once: each waits up to byeGrace for a dead device
		wg.Go(func() { c.Close() })
	}
	wg.Wait()
	s.cancel()
	s.closeSockets()
	s.ua.Close()
	s.wg.Wait()
}

func (s *Server) closeSockets() {
	if s.udp != nil {
		s.udp.Close()
	}
	if s.tcp != nil {
		s.tcp.Close()
	}
}

// respond answers req, logging a failure to send.
func (s *Server) respond(req *sip.Request, tx sip.ServerTransaction, code int, reason string, hdrs ...sip.Header) {
	res := sip.NewResponseFromRequest(req, code, reason, nil)
	for _, h := range hdrs {
		res.AppendHeader(h)
	}
	if err := tx.Respond(res); err != nil {
		s.Logger.Debug("response not sent", "code", code, "to", req.Source(), "err", err)
	}
}

// watch marks devices offline when their registration expired or their keepalives stopped,
// and wakes their channels.
func (s *Server) watch() {
	period := min(time.Second, time.Duration(s.Config.KeepaliveTimeout)/4)
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case now := <-t.C:
			var changed []string
			s.mu.Lock()
			for _, d := range s.devices {
				if !d.online {
					continue
				}
				why := ""
				switch {
				case now.After(d.expires):
					why = "registration expired"
				case now.Sub(d.lastSeen) > time.Duration(s.Config.KeepaliveTimeout):
					why = "keepalive timeout"
				}
				if why != "" {
					d.online = false
					s.Counters.Offline.Add(1)
					s.Logger.Warn("device offline", "device", d.id, "why", why, "last_seen", d.lastSeen.Format(time.RFC3339))
					changed = append(changed, d.id)
				}
			}
			s.mu.Unlock()
			for _, id := range changed {
				s.kick(id)
			}
		}
	}
}

// kick wakes the channels of device id (it came online, went offline or re-registered) and
// makes them give up INVITEs sent to where the device was.
func (s *Server) kick(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var gen uint64
	online := false
	if d := s.devices[id]; d != nil {
		gen, online = d.gen, d.online
	}
	for c := range s.channels {
		if c.ch.DeviceID == id {
			c.abortStale(gen, online)
			c.wake()
		}
	}
}

// deviceState returns what a channel needs of its device: where to send, whether it is
// online, and its generation.
func (s *Server) deviceState(id string) (addr, transport string, gen uint64, online bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.devices[id]
	if d == nil {
		return "", "", 0, false
	}
	return d.addr, d.transport, d.gen, d.online
}

// mediaIP is the address announced in the SDP for a device at addr: Config.MediaIP, else the
// local address the system routes to the device from (no packet is sent).
func (s *Server) mediaIP(addr string) netip.Addr {
	if ip, err := netip.ParseAddr(s.Config.MediaIP); err == nil {
		return ip
	}
	if ip, err := netip.ParseAddr(s.bindHost); err == nil && !ip.IsUnspecified() {
		return ip
	}
	if c, err := net.Dial("udp", addr); err == nil {
		defer c.Close()
		return c.LocalAddr().(*net.UDPAddr).AddrPort().Addr().Unmap()
	}
	return netip.IPv4Unspecified()
}

// OpenChannel starts a signalling-mode stream (gb28181.Signaller): the returned source
// INVITEs the channel whenever its device is online and delivers its media.
func (s *Server) OpenChannel(streamID string, ch gb28181.Channel) (source.Source, error) {
	c, err := s.newChannel(streamID, ch)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// nextSN returns the next MANSCDP sequence number.
func (s *Server) nextSN() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sn++
	return s.sn
}

// Info is the platform's snapshot (defs.GB28181).
func (s *Server) Info() defs.GB28181Info {
	s.mu.Lock()
	streams := map[string]map[string][]defs.GB28181Stream{}
	for c := range s.channels {
		if streams[c.ch.DeviceID] == nil {
			streams[c.ch.DeviceID] = map[string][]defs.GB28181Stream{}
		}
		streams[c.ch.DeviceID][c.ch.ChannelID] = append(streams[c.ch.DeviceID][c.ch.ChannelID], c.snapshot())
	}
	out := defs.GB28181Info{ID: s.Config.ID, Domain: s.Config.Domain, Listen: s.Config.Listen,
		Devices: []defs.GB28181Device{}, Counters: s.Counters.Map()}
	for _, d := range s.devices {
		out.Devices = append(out.Devices, d.snapshot(streams[d.id]))
		delete(streams, d.id)
	}
	for id, st := range streams { // streams waiting for a device never seen
		d := device{id: id}
		out.Devices = append(out.Devices, d.snapshot(st))
	}
	s.mu.Unlock()
	slices.SortFunc(out.Devices, func(a, b defs.GB28181Device) int { return strings.Compare(a.ID, b.ID) })
	return out
}
