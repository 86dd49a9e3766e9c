// Package rtsp receives H.264 and H.265 video from RTSP servers and cameras (RFC 2326,
// RFC 7826 via gortsplib), with reconnection, a watchdog and credential redaction.
package rtsp

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bluenviron/gortsplib/v5"
	"github.com/bluenviron/gortsplib/v5/pkg/base"
	"github.com/bluenviron/gortsplib/v5/pkg/liberrors"
	"github.com/pion/rtcp"
	pionrtp "github.com/pion/rtp"

	"github.com/vinfer/vinfer/internal/redact"
	"github.com/vinfer/vinfer/media"
	"github.com/vinfer/vinfer/source"
	"github.com/vinfer/vinfer/source/internal/udpmux"
	"github.com/vinfer/vinfer/source/live"
	"github.com/vinfer/vinfer/source/rtp"
	"github.com/vinfer/vinfer/source/timestamp"
)

// Transports.
const (
	TransportAuto = "auto" // UDP, falling back to TCP when no packet arrives (gortsplib's default)
	TransportUDP  = "udp"
	TransportTCP  = "tcp" // interleaved in the RTSP connection (RFC 2326 §10.12)
)

// Source plays one RTSP stream and delivers the access units of its first H.264 or H.265 video
// media. Basic and digest authentication take the credentials from the URL; the URL is only
// ever logged or reported through Redact.
//
// Connecting happens in the background: Init only validates. A failed connection, a server
// that goes away, or a stream without an access unit for Watchdog are retried after the
// Backoff steps, for ever; each new session is counted and its first access unit carries
// media.AccessUnit.Discontinuity. A session that ended can no longer deliver anything: packets
// of older sessions are told apart by a generation number and discarded.
//
// Read blocks across reconnections; it fails only after Close, when its context ends, or for a
// stream that cannot be decoded (no H.264/H.265 video).
type Source struct {
	// URL is rtsp://[user:password@]host[:port]/path (rtsps:// for TLS).
	URL string
	// Transport is TransportTCP, TransportUDP or TransportAuto ("" means auto).
	Transport string
	// Backoff are the waits between connection attempts; nil means live.DefaultBackoff
	// (0.5 s, 1 s, 2 s, then 5 s).
	Backoff []time.Duration
	// Watchdog ends a session that received no packet for this long; 0 means
	// rtp.DefaultWatchdog. A session whose packets arrive is never ended: under heavy loss it
	// delivers damaged access units, and a late first key frame is waited for.
	Watchdog time.Duration
	// ReadTimeout bounds RTSP requests and the silence of a TCP connection; 0 means 10 s.
	ReadTimeout time.Duration
	// MaxJump bounds timestamp steps (timestamp.Clock); 0 means timestamp.DefaultMaxJump.
	MaxJump time.Duration
	// QueueSize is the number of access units buffered for Read; 0 means live.DefaultQueueSize.
	QueueSize int
	// Logger receives connection events; nil means slog.Default().
	Logger *slog.Logger
	// TLSConfig is used for rtsps://; nil means the system's roots. The server name defaults
	// to the URL's host.
	TLSConfig *tls.Config

	u        *base.URL
	redacted string
	stats    live.Counters
	health   live.Health
	spropLog sync.Once
	q        *live.Queue
	clock    timestamp.Clock
	cancel   context.CancelFunc
	done     chan struct{}
	closer   sync.Once

	mu        sync.Mutex // guards gen, firstAU against the session callbacks
	gen       uint64     // generation of the session allowed to deliver; 0: none
	firstAU   bool       // the next access unit is the first of a session after the first
	sessions  int
	lastAU    atomic.Int64 // unix nanoseconds of the last access unit delivered
	lastPkt   atomic.Int64 // unix nanoseconds of the last packet received
	depacketz atomic.Pointer[rtp.Depacketizer]
}

var _ source.Source = (*Source)(nil)

// permanentError ends Read: retrying cannot help.
type permanentError struct{ error }

func (e permanentError) Unwrap() error { return e.error }

// Init validates the configuration and starts connecting in the background. It returns an
// error for a URL that does not parse or an unknown transport; connection failures are not
// errors (they are retried).
func (s *Source) Init() error {
	s.redacted = redact.URL(s.URL)
	u, err := base.ParseURL(s.URL)
	if err != nil {
		return fmt.Errorf("rtsp: URL %s: %v", s.redacted, s.redactErr(err))
	}
	if u.Scheme != "rtsp" && u.Scheme != "rtsps" {
		return fmt.Errorf("rtsp: URL %s: scheme must be rtsp or rtsps", s.redacted)
	}
	switch s.Transport {
	case "", TransportAuto, TransportUDP, TransportTCP:
	default:
		return fmt.Errorf("rtsp: transport %q: want %q, %q or %q", s.Transport, TransportTCP, TransportUDP, TransportAuto)
	}
	if s.Watchdog <= 0 {
		s.Watchdog = rtp.DefaultWatchdog
	}
	if s.ReadTimeout <= 0 {
		s.ReadTimeout = 10 * time.Second
	}
	if s.Logger == nil {
		s.Logger = slog.Default()
	}
	s.Logger = s.Logger.With("source", "rtsp", "url", s.redacted)
	s.clock = timestamp.Clock{Rate: rtp.ClockRate, MaxJump: s.MaxJump}
	if err := s.clock.Init(); err != nil {
		return err
	}
	s.u = u
	s.q = live.NewQueue(s.QueueSize)
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel, s.done = cancel, make(chan struct{})
	go s.run(ctx)
	return nil
}

func (s *Source) run(ctx context.Context) {
	defer close(s.done)
	backoff := live.Backoff{Steps: s.Backoff}
	failures := 0 // sessions in a row that delivered nothing
	for {
		delivered, err := s.session(ctx)
		if ctx.Err() != nil {
			return
		}
		var perm permanentError
		if errors.As(err, &perm) {
			s.health.Fail(err)
			s.Logger.Error("stream cannot be played", "err", err)
			s.q.Fail(fmt.Errorf("rtsp %s: %w", s.redacted, err))
			return
		}
		if delivered {
			backoff.Reset()
			failures = 0
		}
		wait := backoff.Next()
		s.health.Error(err)
		failures++
		switch {
		case delivered:
			s.Logger.Warn("session ended, reconnecting", "err", err, "retry_in", wait)
		case failures == 1 || failures%12 == 0: // a camera that stays down: a line a minute or so
			s.Logger.Warn("no stream from the server, retrying", "err", err, "attempts", failures, "retry_in", wait)
		default:
			s.Logger.Debug("no stream from the server, retrying", "err", err, "attempts", failures, "retry_in", wait)
		}
		if live.Sleep(ctx, wait) != nil {
			return
		}
	}
}

// session runs one RTSP session until it fails, stalls or ctx ends. delivered reports that it
// delivered at least one access unit.
func (s *Source) session(ctx context.Context) (delivered bool, err error) {
	c := &gortsplib.Client{
		Scheme:         s.u.Scheme,
		Host:           s.u.Host,
		ReadTimeout:    s.ReadTimeout,
		WriteTimeout:   s.ReadTimeout,
		UserAgent:      "vinfer",
		DialTLSContext: s.dialTLS,
		// RTP over UDP: a receive buffer as large as the RTP sources' (udpmux.ReadBufferSize,
		// capped by net.core.rmem_max), so that a key frame's burst is not lost to the kernel
		// while a loaded machine does not schedule the reader.
		UDPReadBufferSize: udpmux.ReadBufferSize,
	}
	switch s.Transport {
	case TransportUDP:
		c.Protocol = ptr(gortsplib.ProtocolUDP)
	case TransportTCP:
		c.Protocol = ptr(gortsplib.ProtocolTCP)
	}
	var depack *rtp.Depacketizer       // set before PLAY; the callbacks below run after
	c.OnPacketsLost = func(n uint64) { // gortsplib's reorderer found a gap (RFC 3550 §A.3)
		s.stats.Lost.Add(n)
		if depack != nil {
			depack.Loss()
		}
	}
	c.OnDecodeError = func(error) { s.stats.DecodeErrors.Add(1) }
	var describeRes *base.Response // the DESCRIBE response, for its raw SDP
	c.OnResponse = func(res *base.Response) {
		if ct := res.Header["Content-Type"]; res.StatusCode == base.StatusOK && len(ct) == 1 && strings.HasPrefix(ct[0], "application/sdp") {
			describeRes = res
		}
	}
	if err := c.Start(); err != nil {
		s.stats.ConnectFailures.Add(1)
		return false, s.redactErr(err)
	}
	defer c.Close()
	// Close (ctx) ends a request in flight at once: closing the client cancels its dial and TLS
	// handshake (dialTLS) and its wait for a response, which the calls below return from.
	stop := context.AfterFunc(ctx, c.Close)
	defer stop()

	desc, _, err := c.Describe(s.u)
	var sdpErr liberrors.ErrClientSDPInvalid
	if errors.As(err, &sdpErr) && describeRes != nil {
		// gortsplib rejects the whole SDP for one bad sprop: parse it without
		if desc, err = rtp.ParseSession(describeRes.Body); err == nil {
			desc.BaseURL = baseURL(describeRes, s.u)
			s.spropLog.Do(func() {
				s.Logger.Warn("the SDP's parameter sets do not decode: ignored, relying on in-band ones", "err", sdpErr)
			})
		}
	}
	if err != nil {
		s.stats.ConnectFailures.Add(1)
		return false, fmt.Errorf("DESCRIBE: %w", s.redactErr(err))
	}
	medi, forma, stream, err := rtp.FindVideo(desc)
	if err != nil {
		return false, permanentError{err}
	}
	if describeRes != nil {
		var warn error
		if stream.ParamSets, warn = stream.WithSprop(describeRes.Body); warn != nil {
			s.spropLog.Do(func() { s.Logger.Warn("some SDP parameter sets do not decode: skipped", "err", warn) })
		}
	}
	wall := &timestamp.Wallclock{Rate: rtp.ClockRate}
	s.mu.Lock()
	s.sessions++
	gen := uint64(s.sessions)
	s.firstAU = s.sessions > 1
	s.mu.Unlock()
	if gen > 1 {
		s.clock.Restart()
	}
	depack = &rtp.Depacketizer{
		Codec: stream.Codec, ParamSets: stream.ParamSets, Clock: &s.clock, Wallclock: wall, Stats: &s.stats,
		Health: &s.health, Logger: s.Logger,
		OnAccessUnit: func(au *media.AccessUnit) bool { return s.deliver(gen, au) },
	}
	if err := depack.Init(); err != nil {
		return false, permanentError{err}
	}
	if _, err := c.Setup(desc.BaseURL, medi, 0, 0); err != nil {
		s.stats.ConnectFailures.Add(1)
		return false, fmt.Errorf("SETUP: %w", s.redactErr(err))
	}
	c.OnPacketRTP(medi, forma, func(pkt *pionrtp.Packet) {
		now := time.Now()
		s.lastPkt.Store(now.UnixNano())
		s.health.Packet(now)
		s.stats.Packets.Add(1)
		s.stats.Bytes.Add(uint64(pkt.MarshalSize()))
		depack.Push(pkt, now)
	})
	c.OnPacketRTCP(medi, func(p rtcp.Packet) {
		if sr, ok := p.(*rtcp.SenderReport); ok {
			wall.Update(sr.NTPTime, sr.RTPTime)
			s.stats.SenderReports.Add(1)
		}
	})
	s.depacketz.Store(depack)
	s.mu.Lock()
	s.gen = gen
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.gen = 0 // nothing of this session may reach Read any more
		s.mu.Unlock()
	}()
	start := time.Now()
	s.lastAU.Store(start.UnixNano())
	s.lastPkt.Store(start.UnixNano())
	if _, err := c.Play(nil); err != nil {
		s.stats.ConnectFailures.Add(1)
		return false, fmt.Errorf("PLAY: %w", s.redactErr(err))
	}
	s.stats.Connects.Add(1)
	if gen > 1 {
		s.stats.Reconnects.Add(1)
	}
	s.Logger.Info("playing", "codec", stream.Codec, "transport", c.Transport().Session.Protocol.String(), "session", gen)

	waitErr := make(chan error, 1)
	go func() { waitErr <- c.Wait() }()
	tick := time.NewTicker(min(s.Watchdog/4, time.Second))
	defer tick.Stop()
	for {
		select {
		case err := <-waitErr:
			return s.lastAU.Load() > start.UnixNano(), s.redactErr(err)
		case <-ctx.Done():
			return false, ctx.Err()
		case now := <-tick.C:
			if last := time.Unix(0, s.lastPkt.Load()); now.Sub(last) >= s.Watchdog {
				s.stats.Watchdog.Add(1)
				return s.lastAU.Load() > start.UnixNano(), fmt.Errorf("no packet for %v (watchdog)", s.Watchdog)
			}
		}
	}
}

// dialTLS connects for rtsps:// and completes the TLS handshake within ctx, which gortsplib
// bounds by ReadTimeout and cancels on Close. (Without it gortsplib wraps the connection in
// tls.Client and the handshake happens in the first write, with no read deadline: a peer that
// accepts TCP and never answers held the session, and Close, for ever.)
func (s *Source) dialTLS(ctx context.Context, network, addr string) (net.Conn, error) {
	nc, err := (&net.Dialer{}).DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	cfg := &tls.Config{}
	if s.TLSConfig != nil {
		cfg = s.TLSConfig.Clone()
	}
	if cfg.ServerName == "" {
		cfg.ServerName, _, _ = net.SplitHostPort(addr)
	}
	tc := tls.Client(nc, cfg)
	if err := tc.HandshakeContext(ctx); err != nil {
		nc.Close()
		if ctx.Err() != nil {
			return nil, fmt.Errorf("TLS handshake with %s: %w", addr, ctx.Err())
		}
		return nil, fmt.Errorf("TLS handshake with %s: %w", addr, err)
	}
	return tc, nil
}

// deliver queues an access unit of session gen, unless a newer session replaced it.
func (s *Source) deliver(gen uint64, au *media.AccessUnit) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if gen != s.gen {
		return true // stale: drop silently, the session is over
	}
	if s.firstAU {
		if !au.Discontinuity {
			au.Discontinuity = true
			s.stats.Discontinuities.Add(1)
		}
		s.firstAU = false
	}
	now := time.Now()
	s.lastAU.Store(now.UnixNano())
	s.health.AccessUnit(now)
	if !s.q.Push(au) {
		if au.Discontinuity {
			s.firstAU = true // the next key frame carries it
		}
		return false
	}
	return true
}

// redactErr removes the URL's credentials from an error text (gortsplib errors may quote
// requests).
func (s *Source) redactErr(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if clean := redact.Message(msg, s.URL); clean != msg {
		return errors.New(clean)
	}
	return err
}

// Read returns the next access unit (Annex-B, parameter sets before key frames), blocking until
// one arrives, across reconnections. It returns ctx.Err() when ctx is done, live.ErrClosed after
// Close, and a permanent error when the stream has no H.264/H.265 video.
func (s *Source) Read(ctx context.Context) (*media.AccessUnit, error) {
	if s.q == nil {
		return nil, errors.New("rtsp: Read before Init")
	}
	return s.q.Pop(ctx)
}

// Info returns the codec and, once an SPS was seen, the picture size and frame rate; zero
// before the first session.
func (s *Source) Info() media.StreamInfo {
	if d := s.depacketz.Load(); d != nil {
		return d.Info()
	}
	return media.StreamInfo{}
}

// Live reports true.
func (s *Source) Live() bool { return true }

// Stats returns the source's counters and health.
func (s *Source) Stats() live.Stats {
	st := s.stats.Snapshot()
	s.health.Fill(&st, time.Now())
	return st
}

// baseURL is the URL SETUP requests are relative to (RFC 2326 §C.1.1): Content-Base, else
// Content-Location, else the DESCRIBE URL.
func baseURL(res *base.Response, u *base.URL) *base.URL {
	for _, h := range []string{"Content-Base", "Content-Location"} {
		if v := res.Header[h]; len(v) == 1 {
			if b, err := base.ParseURL(v[0]); err == nil {
				return b
			}
		}
	}
	return u
}

// closeWait bounds Close: the session is cancelled at once (a connection attempt, a request in
// flight included), so this is only reached when something below does not honour that.
const closeWait = 5 * time.Second

// Close ends the session and stops reconnecting. Safe to call more than once. It returns once
// the session's goroutines ended, or after closeWait at the latest (logged).
func (s *Source) Close() error {
	s.closer.Do(func() {
		if s.cancel == nil {
			return
		}
		s.cancel()
		t := time.NewTimer(closeWait)
		defer t.Stop()
		select {
		case <-s.done:
		case <-t.C:
			s.Logger.Warn("session did not end in time after Close: left to end on its own", "waited", closeWait)
		}
		s.q.Close()
	})
	return nil
}

func ptr[T any](v T) *T { return &v }
