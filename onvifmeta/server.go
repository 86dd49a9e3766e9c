package onvifmeta

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bluenviron/gortsplib/v5"
	"github.com/bluenviron/gortsplib/v5/pkg/base"
	"github.com/bluenviron/gortsplib/v5/pkg/description"
	"github.com/bluenviron/gortsplib/v5/pkg/format"
	"github.com/bluenviron/gortsplib/v5/pkg/liberrors"

	"github.com/vinfer/vinfer/event"
	"github.com/vinfer/vinfer/media"
	"github.com/vinfer/vinfer/pipeline"
	"github.com/vinfer/vinfer/sink"
)

// Errors.
var (
	// ErrCodec: the stream's video is neither H.264 nor H.265.
	ErrCodec = errors.New("onvifmeta: video is neither H.264 nor H.265")
	// ErrClosed: the server was closed.
	ErrClosed = errors.New("onvifmeta: server closed")
	// ErrConfig wraps a bad server setting.
	ErrConfig = errors.New("onvifmeta: bad setting")
)

// Defaults.
const (
	DefaultListen     = "127.0.0.1:8554"
	DefaultMaxClients = 16
	DefaultUser       = "vinfer"
	// DefaultWriteQueue is the packets queued per client before it counts as slow and is
	// dropped (about 2 s of 1080p video).
	DefaultWriteQueue = 1024
	// maxDoc bounds one metadata document (bytes); objects beyond it are left out.
	maxDoc = 256 << 10
)

// Config sets up a Server.
type Config struct {
	// Listen is the RTSP address, host:port (DefaultListen: loopback only).
	Listen string
	// MaxClients is the most playing sessions at once over all paths (DefaultMaxClients);
	// further SETUPs get 503.
	MaxClients int
	// Password, when set, is required of every client (RTSP digest, RFC 2617, or basic), with
	// User (DefaultUser), unless it gives one of Credentials.
	User, Password string
	// Credentials are further user names and passwords, each limited to its Streams when
	// listed. With Credentials and no Password, a client must give one of them.
	Credentials []Credential
	// UDPPort, when set, also offers RTP over UDP from this even port (RTCP on the next), on
	// Listen's host; 0: TCP only (a SETUP asking for UDP gets 461).
	UDPPort int
	// WriteQueue is the packets queued per client, a power of two (DefaultWriteQueue). A client
	// whose queue fills is dropped; the pipeline never waits for one.
	WriteQueue int
	// Logger, nil: slog.Default.
	Logger *slog.Logger
}

// Credential is an RTSP user name and password, optionally limited to some stream ids.
type Credential struct {
	User, Password string
	// Streams, when not empty, are the only paths the credential opens (others: 404).
	Streams []string
}

// Server serves rtsp://listen/<stream id>: each stream's video as it arrives (from its first
// key frame) and its metadata track. A stream's path exists from its first key frame to its
// end. Server is a sink.Sink (the metadata) and gives each stream an observer (the video).
type Server struct {
	cfg Config
	log *slog.Logger
	srv *gortsplib.Server

	mu       sync.Mutex
	paths    map[string]*path
	sessions int
	closed   bool

	dropped, refused, docs, connsRefused atomic.Uint64
	slow                                 sync.Map // *gortsplib.ServerSession being dropped
	authFails                            [authReasons]atomic.Uint64
	authLog                              authLog
	stop                                 chan struct{} // closed by Close: ends authFailed's waits
}

// New starts serving; Close stops.
func New(cfg Config) (*Server, error) {
	if cfg.Listen == "" {
		cfg.Listen = DefaultListen
	}
	if cfg.MaxClients == 0 {
		cfg.MaxClients = DefaultMaxClients
	}
	if cfg.MaxClients < 0 {
		return nil, fmt.Errorf("%w: max_clients %d", ErrConfig, cfg.MaxClients)
	}
	if cfg.User == "" {
		cfg.User = DefaultUser
	}
	for _, c := range cfg.Credentials {
		if c.User == "" || c.Password == "" {
			return nil, fmt.Errorf("%w: a credential without a user name or password", ErrConfig)
		}
	}
	if cfg.WriteQueue == 0 {
		cfg.WriteQueue = DefaultWriteQueue
	}
	if q := cfg.WriteQueue; q < 16 || q&(q-1) != 0 {
		return nil, fmt.Errorf("%w: write_queue %d: a power of two from 16", ErrConfig, q)
	}
	if p := cfg.UDPPort; p < 0 || p%2 != 0 || p > 65532 {
		return nil, fmt.Errorf("%w: udp_port %d: an even port below 65534 (RTCP on the next)", ErrConfig, p)
	}
	s := &Server{cfg: cfg, log: cfg.Logger, paths: map[string]*path{}, stop: make(chan struct{})}
	if s.log == nil {
		s.log = slog.Default()
	}
	s.srv = &gortsplib.Server{Handler: s, RTSPAddress: cfg.Listen, WriteQueueSize: cfg.WriteQueue,
		ReadTimeout: 10 * time.Second, WriteTimeout: 10 * time.Second,
		Listen: func(network, addr string) (net.Listener, error) {
			ln, err := net.Listen(network, addr)
			if err != nil {
				return nil, err
			}
			return newConnLimit(ln, maxConns(cfg.MaxClients), maxConnsPerAddr(cfg.MaxClients), &s.connsRefused), nil
		}}
	if cfg.UDPPort != 0 {
		host, _, err := net.SplitHostPort(cfg.Listen)
		if err != nil {
			return nil, fmt.Errorf("%w: listen %q: %v", ErrConfig, cfg.Listen, err)
		}
		s.srv.UDPRTPAddress = net.JoinHostPort(host, strconv.Itoa(cfg.UDPPort))
		s.srv.UDPRTCPAddress = net.JoinHostPort(host, strconv.Itoa(cfg.UDPPort+1))
	}
	if err := s.srv.Start(); err != nil {
		return nil, fmt.Errorf("onvifmeta: rtsp server: %w", err)
	}
	s.log.Info("rtsp metadata server", "listen", cfg.Listen, "auth", cfg.Password != "")
	return s, nil
}

// Addr is the address the server listens on.
func (s *Server) Addr() string { return s.srv.NetListener().Addr().String() }

// Close ends every session and stops serving.
func (s *Server) Close() error {
	s.mu.Lock()
	ps := s.paths
	s.paths = map[string]*path{}
	if !s.closed {
		close(s.stop)
	}
	s.closed = true
	s.mu.Unlock()
	for _, p := range ps {
		p.end()
	}
	s.srv.Close()
	return nil
}

// Counters are the server's totals.
type Counters struct {
	// Clients: sessions open now.
	Clients int
	// Dropped: clients dropped for being slow; Refused: SETUPs refused beyond MaxClients;
	// Docs: metadata documents sent; ConnsRefused: connections closed on accept beyond
	// 2×MaxClients+8 open at once, or MaxClients+4 from one remote address.
	Dropped, Refused, Docs, ConnsRefused uint64
	// AuthFailed: requests with wrong credentials (each answered 401 after a second): the
	// sum of Auth's wrong and method.
	AuthFailed uint64
	// Auth: refused requests by reason, those without credentials included.
	Auth AuthFailures
}

// Counters returns the totals so far.
func (s *Server) Counters() Counters {
	s.mu.Lock()
	n := s.sessions
	s.mu.Unlock()
	c := Counters{Clients: n, Dropped: s.dropped.Load(), Refused: s.refused.Load(), Docs: s.docs.Load(),
		ConnsRefused: s.connsRefused.Load()}
	for r := range c.Auth {
		c.Auth[r] = s.authFails[r].Load()
	}
	c.AuthFailed = c.Auth[AuthWrong] + c.Auth[AuthMethod]
	return c
}

// Observer is what feeds stream id's video (pipeline.StreamConfig.AUObserver).
func (s *Server) Observer(id string) pipeline.AUObserver { return &observer{s: s, id: id} }

// observer feeds one stream; called on the stream's goroutine.
type observer struct {
	s      *Server
	id     string
	warned bool // the stream could not be served: logged once
}

func (o *observer) ObserveAccessUnit(au *media.AccessUnit) {
	if err := o.s.video(o.id, au); err != nil && !o.warned {
		o.warned = true
		o.s.log.Warn("rtsp metadata: stream not served", "stream", o.id, "err", err)
	}
}

func (o *observer) EndOfStream() { o.s.remove(o.id, nil) }

// path is one stream's RTSP stream.
type path struct {
	s      *Server
	mu     sync.Mutex
	st     *gortsplib.ServerStream
	video  *description.Media
	meta   *description.Media
	vp     *videoPacketizer
	mp     *metaPayloader
	codec  media.Codec
	origin time.Time // wall clock of PTS 0
	doc    []byte
	frame  Frame
}

func (s *Server) lookup(id string) *path {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.paths[id]
}

// remove ends stream id's path (p, or whichever it has when nil).
func (s *Server) remove(id string, p *path) {
	s.mu.Lock()
	q := s.paths[id]
	if q != nil && (p == nil || p == q) {
		delete(s.paths, id)
	}
	s.mu.Unlock()
	if q != nil && (p == nil || p == q) {
		q.end()
	}
}

func (p *path) end() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.st != nil {
		p.st.Close()
		p.st = nil
	}
}

// video writes au to stream id's path, opening it on its first key frame (and again when the
// codec changes); the error says why the path could not open.
func (s *Server) video(id string, au *media.AccessUnit) error {
	p := s.lookup(id)
	if p != nil && p.codec != au.Codec {
		s.remove(id, p)
		p = nil
	}
	if p == nil {
		if !au.Key {
			return nil
		}
		var err error
		if p, err = s.open(id, au); err != nil {
			return err
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.st == nil {
		return nil
	}
	pkts, err := p.vp.Packets(au)
	if err != nil {
		s.log.Debug("rtsp metadata: access unit not sent", "stream", id, "err", err)
		return nil
	}
	ntp := p.origin.Add(au.PTS)
	for _, k := range pkts {
		_ = p.st.WritePacketRTPWithNTP(p.video, k, ntp)
	}
	return nil
}

func (s *Server) open(id string, au *media.AccessUnit) (*path, error) {
	vp, err := newVideoPacketizer(au)
	if err != nil {
		return nil, err
	}
	mf, err := newMetadataFormat()
	if err != nil {
		return nil, err
	}
	p := &path{s: s, vp: vp, mp: newMetaPayloader(), codec: au.Codec}
	p.video = &description.Media{Type: description.MediaTypeVideo, Control: "trackID=0", Formats: []format.Format{vp.forma}}
	p.meta = &description.Media{Type: description.MediaTypeApplication, Control: "trackID=1", Formats: []format.Format{mf}}
	wall := au.Wallclock
	if wall.IsZero() {
		wall = time.Now()
	}
	p.origin = wall.Add(-au.PTS)
	p.st = &gortsplib.ServerStream{Server: s.srv, Desc: &description.Session{Title: id, Medias: []*description.Media{p.video, p.meta}}}
	if err := p.st.Initialize(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		p.st.Close()
		return nil, ErrClosed
	}
	old := s.paths[id]
	s.paths[id] = p
	s.mu.Unlock()
	if old != nil {
		old.end()
	}
	return p, nil
}

// Write sends r's objects and events as one metadata document on its stream's path, stamped
// with its frame's presentation time (sink.Sink); nothing before the stream's first key frame.
// A stream's closing result (End) sends its events (zone.leave of tracks ending inside) with
// no objects at the last frame's time, and nothing when it has none that map.
func (s *Server) Write(r *sink.Result) error {
	if r.End && !anyNotification(r.Events) {
		return nil
	}
	p := s.lookup(r.Stream)
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.st == nil {
		return nil
	}
	f := &p.frame
	*f = Frame{Time: p.origin.Add(r.PTS), Width: r.Width, Height: r.Height, Source: r.Stream,
		Objects: f.Objects[:0], Events: f.Events[:0]}
	for _, d := range r.Detections {
		if r.End {
			break
		}
		f.Objects = append(f.Objects, Object{ID: d.TrackID, Box: d.Box, Label: d.Label, Score: d.Score})
	}
	for i := range r.Events {
		if n, ok := notification(&r.Events[i]); ok {
			f.Events = append(f.Events, n)
		}
	}
	p.doc = f.AppendXML(p.doc[:0])
	for len(p.doc) > maxDoc && len(f.Objects) > 0 {
		f.Objects = f.Objects[:len(f.Objects)/2]
		p.doc = f.AppendXML(p.doc[:0])
	}
	ntp := f.Time
	for _, k := range p.mp.packets(p.doc, r.PTS) {
		_ = p.st.WritePacketRTPWithNTP(p.meta, k, ntp)
	}
	s.docs.Add(1)
	return nil
}

func anyNotification(es []event.Event) bool {
	for i := range es {
		if _, ok := notification(&es[i]); ok {
			return true
		}
	}
	return false
}

// notification is e as a rule engine event: line.cross as LineDetector/Crossed, zone.enter and
// zone.leave as FieldDetector/ObjectsInside true and false; others have none.
func notification(e *event.Event) (Notification, bool) {
	switch e.Type {
	case event.LineCross:
		return Notification{Topic: TopicLineCrossed, Rule: e.Line, ObjectID: e.TrackID}, true
	case event.ZoneEnter, event.ZoneLeave:
		return Notification{Topic: TopicObjectsInside, Rule: e.Zone, ObjectID: e.TrackID, Inside: e.Type == event.ZoneEnter}, true
	}
	return Notification{}, false
}

// stream answers DESCRIBE and SETUP: credentials, then the path's stream.
func (s *Server) stream(c *gortsplib.ServerConn, req *base.Request, pth string) (*base.Response, *gortsplib.ServerStream, error) {
	id := strings.Trim(pth, "/")
	if ok, allowed := s.authorize(c, req); !ok {
		s.authFailed(c, req) // counted; wrong credentials answered after authFailDelay
		return &base.Response{StatusCode: base.StatusUnauthorized}, nil, liberrors.ErrServerAuth{}
	} else if allowed != nil && !slices.Contains(allowed, id) {
		return &base.Response{StatusCode: base.StatusNotFound}, nil, fmt.Errorf("no stream at %q for this user", pth)
	}
	p := s.lookup(id)
	if p == nil {
		return &base.Response{StatusCode: base.StatusNotFound}, nil, fmt.Errorf("no stream at %q", pth)
	}
	p.mu.Lock()
	st := p.st
	p.mu.Unlock()
	if st == nil {
		return &base.Response{StatusCode: base.StatusNotFound}, nil, fmt.Errorf("no stream at %q", pth)
	}
	return &base.Response{StatusCode: base.StatusOK}, st, nil
}

// authorize checks the request's credentials: ok, and the streams they are limited to (nil:
// all). Without Password and Credentials every client is let in.
func (s *Server) authorize(c *gortsplib.ServerConn, req *base.Request) (ok bool, streams []string) {
	if s.cfg.Password == "" && len(s.cfg.Credentials) == 0 {
		return true, nil
	}
	if s.cfg.Password != "" && c.VerifyCredentials(req, s.cfg.User, s.cfg.Password) {
		return true, nil
	}
	for _, k := range s.cfg.Credentials {
		if c.VerifyCredentials(req, k.User, k.Password) {
			if len(k.Streams) == 0 {
				return true, nil
			}
			return true, k.Streams
		}
	}
	return false, nil
}

// OnDescribe implements gortsplib.ServerHandlerOnDescribe.
func (s *Server) OnDescribe(ctx *gortsplib.ServerHandlerOnDescribeCtx) (*base.Response, *gortsplib.ServerStream, error) {
	return s.stream(ctx.Conn, ctx.Request, ctx.Path)
}

// OnSetup implements gortsplib.ServerHandlerOnSetup: beyond MaxClients sessions, 503.
func (s *Server) OnSetup(ctx *gortsplib.ServerHandlerOnSetupCtx) (*base.Response, *gortsplib.ServerStream, error) {
	res, st, err := s.stream(ctx.Conn, ctx.Request, ctx.Path)
	if err != nil {
		return res, st, err
	}
	s.mu.Lock()
	over := s.sessions > s.cfg.MaxClients
	s.mu.Unlock()
	if over {
		s.refused.Add(1)
		return &base.Response{StatusCode: base.StatusServiceUnavailable}, nil, errors.New("too many clients")
	}
	return res, st, nil
}

// OnPlay implements gortsplib.ServerHandlerOnPlay.
func (s *Server) OnPlay(*gortsplib.ServerHandlerOnPlayCtx) (*base.Response, error) {
	return &base.Response{StatusCode: base.StatusOK}, nil
}

// OnSessionOpen implements gortsplib.ServerHandlerOnSessionOpen.
func (s *Server) OnSessionOpen(*gortsplib.ServerHandlerOnSessionOpenCtx) {
	s.mu.Lock()
	s.sessions++
	s.mu.Unlock()
}

// OnSessionClose implements gortsplib.ServerHandlerOnSessionClose.
func (s *Server) OnSessionClose(ctx *gortsplib.ServerHandlerOnSessionCloseCtx) {
	s.mu.Lock()
	s.sessions--
	s.mu.Unlock()
	s.slow.Delete(ctx.Session)
}

// OnStreamWriteError implements gortsplib.ServerHandlerOnStreamWriteError: a client that
// cannot keep up (its write queue is full) is dropped.
func (s *Server) OnStreamWriteError(ctx *gortsplib.ServerHandlerOnStreamWriteErrorCtx) {
	if _, seen := s.slow.LoadOrStore(ctx.Session, true); seen {
		return
	}
	s.dropped.Add(1)
	s.log.Warn("rtsp metadata: slow client dropped", "path", ctx.Session.Path(), "err", ctx.Error)
	go ctx.Session.Close()
}
