package cascade

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/emiago/sipgo"
	"github.com/emiago/sipgo/sip"

	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/internal/defs"
)

// Limits of one upstream.
const (
	maxSessions    = 16               // media sessions at once; more INVITEs are answered 486
	alarmQueue     = 256              // alarms waiting to be sent
	requestTimeout = 10 * time.Second // the wait for any request's final response
	ackTimeout     = 10 * time.Second // an answered INVITE without ACK is dropped
	maxBackoff     = 30 * time.Second // between failed registrations
	maxMisses      = 3                // keepalives unanswered in a row before registering again
	maxSubs        = 8                // alarm subscriptions at once
	maxSubExpires  = 24 * time.Hour
)

// Upstream is vinfer registered with one upper platform.
type Upstream struct {
	Counters Counters

	c         *Cascade
	cfg       config.GB28181Upstream
	log       *slog.Logger
	transport string // "UDP" or "TCP"
	domain    string // vinfer's domain: DeviceID's first 10 digits
	localIP   string
	localPort int
	peerIP    net.IP // the upper platform's address: requests from elsewhere are refused
	channels  map[string]config.GB28181UpChannel

	ua  *sipgo.UserAgent
	srv *sipgo.Server
	cli *sipgo.Client
	udp net.PacketConn
	tcp net.Listener

	registered  atomic.Bool
	strayLogged atomic.Int64 // when a stray response was last logged, Unix ns
	sn          atomic.Int64
	callID      string // the REGISTER's, kept across refreshes (RFC 3261 §10.2)
	fromTag     string
	cseq        atomic.Uint32
	kick        chan struct{} // register again now
	alarms      chan pending
	qsem        chan struct{} // queries being answered

	mu       sync.Mutex
	sessions map[string]*session      // Call-ID → media session
	subs     map[string]*subscription // Call-ID → alarm subscription

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func newUpstream(c *Cascade, cfg config.GB28181Upstream) (*Upstream, error) {
	u := &Upstream{c: c, cfg: cfg, transport: "UDP", domain: cfg.DeviceID[:10], channels: map[string]config.GB28181UpChannel{},
		callID: sip.GenerateTagN(16) + "@vinfer", fromTag: sip.GenerateTagN(16), kick: make(chan struct{}, 1), qsem: make(chan struct{}, maxQueries),
		alarms: make(chan pending, alarmQueue), sessions: map[string]*session{}, subs: map[string]*subscription{}}
	if cfg.Transport == "tcp" {
		u.transport = "TCP"
	}
	u.log = c.Logger.With("component", "gb28181-upstream", "server_id", cfg.ServerID, "address", cfg.Address, "transport", cfg.Transport)
	for _, ch := range cfg.Channels {
		u.channels[ch.ID] = ch
	}
	host, _, _ := net.SplitHostPort(cfg.Address)
	ips, err := net.LookupIP(host)
	if err != nil || len(ips) == 0 {
		return nil, fmt.Errorf("%w %s: address %q: %v", ErrUpstream, cfg.ServerID, cfg.Address, err)
	}
	u.peerIP = ips[0]
	u.localIP = cfg.LocalIP
	if u.localIP == "" {
		u.localIP = routeIP(cfg.Address)
	}
	if err := u.listen(); err != nil {
		return nil, err
	}
	sipLog := slog.New(debugHandler{u.log.Handler()}).With("sip", true)
	u.ua, err = sipgo.NewUA(sipgo.WithUserAgent(cfg.DeviceID), sipgo.WithUserAgentHostname(u.domain),
		sipgo.WithUserAgentTransportLayerOptions(sip.WithTransportLayerLogger(sipLog)),
		sipgo.WithUserAgentTransactionLayerOptions(sip.WithTransactionLayerLogger(sipLog), sip.WithTransactionLayerUnhandledResponseHandler(u.onStrayResponse)))
	if err != nil {
		u.closeSockets()
		return nil, err
	}
	u.srv, _ = sipgo.NewServer(u.ua, sipgo.WithServerLogger(sipLog))
	opts := []sipgo.ClientOption{sipgo.WithClientHostname(u.localIP), sipgo.WithClientLogger(sipLog)}
	if u.udp != nil {
		opts = append(opts, sipgo.WithClientPort(u.localPort), sipgo.WithClientConnectionAddr(u.udp.LocalAddr().String()))
	}
	u.cli, _ = sipgo.NewClient(u.ua, opts...)
	u.srv.OnMessage(u.onMessage)
	u.srv.OnInvite(u.onInvite)
	u.srv.OnAck(u.onAck)
	u.srv.OnBye(u.onBye)
	u.srv.OnSubscribe(u.onSubscribe)
	u.srv.OnOptions(func(req *sip.Request, tx sip.ServerTransaction) {
		if u.allowed(req, tx) {
			u.respond(req, tx, 200, "OK", nil)
		}
	})
	u.srv.OnNoRoute(func(req *sip.Request, tx sip.ServerTransaction) { u.respond(req, tx, 405, "Method Not Allowed", nil) })
	u.ctx, u.cancel = context.WithCancel(context.Background())
	if l, ok := u.tcp.(*tcpListener); ok {
		l.done = u.ctx.Done()
	}
	u.wg.Add(3)
	if u.udp != nil {
		go func() { defer u.wg.Done(); u.srv.ServeUDP(u.udp) }()
	} else {
		go func() { defer u.wg.Done(); u.srv.ServeTCP(u.tcp) }()
	}
	go func() { defer u.wg.Done(); u.run() }()
	go func() { defer u.wg.Done(); u.sendAlarms() }()
	u.log.Info("GB28181 upstream: registering", "device_id", cfg.DeviceID, "local", net.JoinHostPort(u.localIP, strconv.Itoa(u.localPort)), "channels", len(cfg.Channels))
	return u, nil
}

// listen opens the local SIP socket: UDP, or a TCP listener (the Contact an upper platform
// may connect to; most reuse vinfer's own connection).
func (u *Upstream) listen() error {
	var err error
	if u.transport == "UDP" {
		if u.udp, err = net.ListenPacket("udp", u.cfg.Local); err != nil {
			return fmt.Errorf("%w %s: local %s: %v", ErrUpstream, u.cfg.ServerID, u.cfg.Local, err)
		}
		u.localPort = u.udp.LocalAddr().(*net.UDPAddr).Port
		return nil
	}
	if u.tcp, err = net.Listen("tcp", u.cfg.Local); err != nil {
		return fmt.Errorf("%w %s: local %s: %v", ErrUpstream, u.cfg.ServerID, u.cfg.Local, err)
	}
	u.localPort = u.tcp.Addr().(*net.TCPAddr).Port
	u.tcp = &tcpListener{Listener: u.tcp, u: u} // the upper platform only, bounded (tcplimit.go)
	return nil
}

// routeIP is the local address packets to addr leave from (no packet is sent).
func routeIP(addr string) string {
	c, err := net.Dial("udp", addr)
	if err != nil {
		return "127.0.0.1"
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).IP.String()
}

func (u *Upstream) closeSockets() {
	if u.udp != nil {
		u.udp.Close()
	}
	if u.tcp != nil {
		u.tcp.Close()
	}
}

// unregisterTimeout bounds the unregistration on close.
const unregisterTimeout = 2 * time.Second

func (u *Upstream) close() error {
	if u.cancel == nil {
		return nil
	}
	wasRegistered := u.registered.Load()
	u.cancel()
	u.mu.Lock()
	for id, s := range u.sessions {
		s.stop()
		delete(u.sessions, id)
	}
	u.mu.Unlock()
	if wasRegistered { // tell the upper platform vinfer goes (§9.1.2.2), briefly
		ctx, cancel := context.WithTimeout(context.Background(), unregisterTimeout)
		u.registerFor(ctx, 0)
		cancel()
	}
	u.closeSockets()
	u.ua.Close()
	u.wg.Wait()
	return nil
}

// Registered reports whether the upper platform accepted the last registration.
func (u *Upstream) Registered() bool { return u.registered.Load() }

// LocalAddr is the SIP address vinfer uses toward the upper platform (host:port).
func (u *Upstream) LocalAddr() string { return net.JoinHostPort(u.localIP, strconv.Itoa(u.localPort)) }

// run registers, keeps alive, refreshes at half the lifetime and registers again when
// keepalives go unanswered or the upper platform forgets vinfer.
func (u *Upstream) run() {
	backoff := time.Second
	for u.ctx.Err() == nil {
		if err := u.register(); err != nil {
			u.registered.Store(false)
			select {
			case <-u.ctx.Done():
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, maxBackoff)
			continue
		}
		backoff = time.Second
		u.registered.Store(true)
		if u.keepAlive() { // else a refresh, which keeps the state unless it fails
			// The upper platform restarted or is gone: its live views are over (it sends no
			// BYE for them), and media to it would go nowhere.
			u.endSessions("registration lost")
		}
	}
}

// keepAlive sends keepalives until the registration must be renewed (false) or is lost
// (true).
func (u *Upstream) keepAlive() (lost bool) {
	refresh := time.NewTimer(time.Duration(u.cfg.Expires) / 2)
	defer refresh.Stop()
	tick := time.NewTicker(time.Duration(u.cfg.Keepalive))
	defer tick.Stop()
	misses := 0
	for {
		select {
		case <-u.ctx.Done():
			return false
		case <-refresh.C:
			return false
		case <-u.kick:
			return false
		case <-tick.C:
			res, err := u.message(manscdpKeepalive(u))
			switch {
			case err == nil && res.StatusCode == 200:
				u.Counters.Keepalives.Add(1)
				misses = 0
			case err == nil && res.StatusCode >= 400:
				// The upper platform answers but no longer knows vinfer (it restarted).
				u.Counters.KeepaliveFailures.Add(1)
				u.log.Warn("GB28181 upstream: keepalive refused; registering again", "status", res.StatusCode)
				return true
			default:
				u.Counters.KeepaliveFailures.Add(1)
				if misses++; misses >= maxMisses {
					u.log.Warn("GB28181 upstream: keepalives unanswered; registering again", "misses", misses, "err", err)
					return true
				}
			}
		}
	}
}

// errRefused: the upper platform refused the credentials.
var errRefused = errors.New("registration refused")

// register sends REGISTER with the configured lifetime.
func (u *Upstream) register() error { return u.registerFor(u.ctx, time.Duration(u.cfg.Expires)) }

// registerFor sends REGISTER with lifetime expires (0: unregister, §9.1.2.2) and answers the
// digest challenge (GB/T 28181-2016 §9.1.2.1).
func (u *Upstream) registerFor(parent context.Context, expires time.Duration) error {
	host, port := u.localIP, u.localPort
	req := sip.NewRequest(sip.REGISTER, sip.Uri{Scheme: "sip", User: u.cfg.ServerID, Host: u.cfg.Domain})
	req.SetDestination(u.cfg.Address)
	req.SetTransport(u.transport)
	from := &sip.FromHeader{Address: sip.Uri{Scheme: "sip", User: u.cfg.DeviceID, Host: u.domain}, Params: sip.NewParams()}
	from.Params.Add("tag", u.fromTag)
	req.AppendHeader(from)
	req.AppendHeader(&sip.ToHeader{Address: sip.Uri{Scheme: "sip", User: u.cfg.DeviceID, Host: u.domain}})
	cid := sip.CallIDHeader(u.callID)
	req.AppendHeader(&cid)
	req.AppendHeader(&sip.CSeqHeader{SeqNo: u.cseq.Add(1), MethodName: sip.REGISTER})
	req.AppendHeader(&sip.ContactHeader{Address: sip.Uri{Scheme: "sip", User: u.cfg.DeviceID, Host: host, Port: port}})
	exp := sip.ExpiresHeader(int(expires / time.Second))
	req.AppendHeader(&exp)
	ctx, cancel := context.WithTimeout(parent, requestTimeout)
	defer cancel()
	res, err := u.cli.Do(ctx, req)
	if err == nil && (res.StatusCode == 401 || res.StatusCode == 407) {
		u.cseq.Add(1)
		res, err = u.cli.DoDigestAuth(ctx, req, res, sipgo.DigestAuth{Username: u.cfg.DeviceID, Password: u.cfg.Password})
	}
	switch {
	case err != nil:
		u.Counters.RegisterErrors.Add(1)
		u.log.Warn("GB28181 upstream: registration failed", "err", err)
		return err
	case res.StatusCode == 401 || res.StatusCode == 403 || res.StatusCode == 407:
		u.Counters.Refused.Add(1)
		u.log.Error("GB28181 upstream: registration refused: check the password and device_id the upper platform expects", "status", res.StatusCode, "reason", res.Reason)
		return errRefused
	case res.StatusCode != 200:
		u.Counters.RegisterErrors.Add(1)
		u.log.Warn("GB28181 upstream: registration failed", "status", res.StatusCode, "reason", res.Reason)
		return fmt.Errorf("registration: %d %s", res.StatusCode, res.Reason)
	}
	if expires == 0 {
		u.log.Info("GB28181 upstream: unregistered")
		return nil
	}
	if !u.registered.Load() {
		u.log.Info("GB28181 upstream: registered", "expires", expires.String())
	}
	u.Counters.Registrations.Add(1)
	return nil
}

func manscdpKeepalive(u *Upstream) []byte { return keepaliveBody(u.sn.Add(1), u.cfg.DeviceID) }

// message sends a MANSCDP MESSAGE to the upper platform and waits for its final response.
func (u *Upstream) message(body []byte) (*sip.Response, error) { return u.messageIn("", body) }

// messageIn sends a MESSAGE with Call-ID callID ("": a new one), e.g. a playback's
// MediaStatus in its INVITE's Call-ID.
func (u *Upstream) messageIn(callID string, body []byte) (*sip.Response, error) {
	req := sip.NewRequest(sip.MESSAGE, sip.Uri{Scheme: "sip", User: u.cfg.ServerID, Host: u.cfg.Domain})
	req.SetDestination(u.cfg.Address)
	req.SetTransport(u.transport)
	from := &sip.FromHeader{Address: sip.Uri{Scheme: "sip", User: u.cfg.DeviceID, Host: u.domain}, Params: sip.NewParams()}
	from.Params.Add("tag", sip.GenerateTagN(16))
	req.AppendHeader(from)
	req.AppendHeader(&sip.ToHeader{Address: sip.Uri{Scheme: "sip", User: u.cfg.ServerID, Host: u.cfg.Domain}})
	if callID != "" {
		cid := sip.CallIDHeader(callID)
		req.AppendHeader(&cid)
	}
	req.AppendHeader(sip.NewHeader("Content-Type", "Application/MANSCDP+xml"))
	req.SetBody(body)
	ctx, cancel := context.WithTimeout(u.ctx, requestTimeout)
	defer cancel()
	return u.cli.Do(ctx, req)
}

// allowed answers 403 to a request not from the upper platform (its address and ID) and
// reports whether the request may go on.
func (u *Upstream) allowed(req *sip.Request, tx sip.ServerTransaction) bool {
	host, _, _ := net.SplitHostPort(req.Source())
	from := req.From()
	if ip := net.ParseIP(host); ip == nil || !ip.Equal(u.peerIP) || from == nil || from.Address.User != u.cfg.ServerID {
		u.Counters.Forbidden.Add(1)
		u.log.Warn("GB28181 upstream: request refused: not from the upper platform", "method", string(req.Method), "source", req.Source())
		u.respond(req, tx, 403, "Forbidden", nil)
		return false
	}
	return true
}

func (u *Upstream) respond(req *sip.Request, tx sip.ServerTransaction, code int, reason string, body []byte, hdrs ...sip.Header) *sip.Response {
	res := sip.NewResponseFromRequest(req, code, reason, body)
	for _, h := range hdrs {
		res.AppendHeader(h)
	}
	if err := tx.Respond(res); err != nil {
		u.log.Debug("response not sent", "code", code, "err", err)
	}
	return res
}

func (u *Upstream) contact() *sip.ContactHeader {
	return &sip.ContactHeader{Address: sip.Uri{Scheme: "sip", User: u.cfg.DeviceID, Host: u.localIP, Port: u.localPort}}
}

// Info is the upstream's state (defs.GB28181Upstream).
func (u *Upstream) Info() defs.GB28181Upstream {
	return defs.GB28181Upstream{ServerID: u.cfg.ServerID, Address: u.cfg.Address, Transport: u.cfg.Transport,
		Registered: u.registered.Load(), Sessions: u.Sessions(), Counters: u.Counters.Map()}
}
