// Package gb28181 receives the media of GB/T 28181 cameras and platforms: H.264/H.265 video in
// an MPEG-2 program stream (source/gb28181/ps) inside RTP (GB/T 28181-2016 Annex C), over UDP
// or over TCP with RFC 4571 framing, the platform listening (passive) or connecting (active).
// SIP signalling is not part of it: the platform that sent the INVITE configures a Source with
// the port and SSRC it announced.
package gb28181

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vinfer/vinfer/media"
	"github.com/vinfer/vinfer/source"
	"github.com/vinfer/vinfer/source/gb28181/ps"
	"github.com/vinfer/vinfer/source/internal/udpmux"
	"github.com/vinfer/vinfer/source/live"
	"github.com/vinfer/vinfer/source/rtp"
	"github.com/vinfer/vinfer/source/timestamp"
)

// Transports (the SDP's m= line protocol and a=setup attribute, GB/T 28181-2016 §C.2).
const (
	TransportUDP        = "udp"         // RTP/AVP
	TransportTCPPassive = "tcp-passive" // TCP/RTP/AVP, a=setup:passive: vinfer listens
	TransportTCPActive  = "tcp-active"  // TCP/RTP/AVP, a=setup:active: vinfer connects
)

// tcpQueue is the number of RTP packets read from a TCP connection ahead of processing.
const tcpQueue = 256

// Source receives one GB28181 video stream and delivers its access units.
//
// Over UDP several Sources may share ListenAddr, each selecting its SSRC (the y= line of the
// INVITE's SDP): streams are told apart by SSRC, and a second sender using the same SSRC is
// counted and ignored. Over TCP a Source owns its connection: a camera that reconnects
// (passive) replaces its old connection; a lost connection (active) is dialled again after the
// Backoff steps. A Watchdog period without an access unit releases the SSRC (UDP) or closes the
// connection (TCP).
//
// Read blocks across all of this; it fails only after Close or when its context ends.
type Source struct {
	// Transport is TransportUDP (default), TransportTCPPassive or TransportTCPActive.
	Transport string
	// ListenAddr is the local address for TransportUDP and TransportTCPPassive, e.g. ":30000".
	ListenAddr string
	// RemoteAddr is the camera's media address for TransportTCPActive.
	RemoteAddr string
	// RTCPAddr is where RTCP arrives over UDP: "" means ListenAddr's port + 1, "none"
	// disables it. RTCP multiplexed on the RTP port (RFC 5761), or sharing the TCP connection,
	// is accepted either way.
	RTCPAddr string
	// SSRC selects the stream; 0 takes the first that arrives.
	SSRC uint32
	// Sender, when valid, accepts UDP packets from that address only (any port when its port
	// is 0); LockAddr keeps the stream on the first sender's IP address; Holdover is how long
	// the current sender must be silent before another may take over (rtp.Receiver).
	Sender   netip.AddrPort
	LockAddr bool
	Holdover time.Duration
	// PayloadType selects the RTP payload type (96 in GB28181); 0 accepts any.
	PayloadType uint8
	// ReorderWindow and ReorderDelay bound the wait for a missing UDP packet; zero values mean
	// rtp.DefaultReorderWindow and rtp.DefaultReorderDelay.
	ReorderWindow int
	ReorderDelay  time.Duration
	// Watchdog is the longest time without an access unit; 0 means rtp.DefaultWatchdog.
	Watchdog time.Duration
	// Backoff are the waits between connection attempts (TransportTCPActive); nil means
	// live.DefaultBackoff.
	Backoff []time.Duration
	// MaxJump bounds timestamp steps (timestamp.Clock); 0 means timestamp.DefaultMaxJump.
	MaxJump time.Duration
	// QueueSize is the number of access units buffered for Read; 0 means live.DefaultQueueSize.
	QueueSize int
	// Name is the stream's id, for messages (a port clash names the stream holding it).
	Name string
	// Logger receives connection events; nil means slog.Default(). It names the configured SSRC
	// itself where there is one (the receiver logs the senders' as sender_ssrc).
	Logger *slog.Logger

	stats  live.Counters
	health live.Health
	q      *live.Queue
	clock  timestamp.Clock
	wall   timestamp.Wallclock
	depack psDepacketizer
	recv   rtp.Receiver
	cancel context.CancelFunc
	done   chan struct{}
	wg     sync.WaitGroup
	closer sync.Once

	sub  *udpmux.Sub // TransportUDP
	rtcp *udpmux.Sub

	ln      net.Listener   // TransportTCPPassive
	pool    *udpmux.Pool   // TCP packets
	tcpIn   chan tcpPacket // TCP packets, tagged with their connection
	newConn chan uint64    // a TCP connection of that generation started
	connGen atomic.Uint64
	connMu  sync.Mutex
	conn    net.Conn
	alive   atomic.Bool // the current TCP connection delivered an access unit
}

type tcpPacket struct {
	d   *udpmux.Datagram
	gen uint64
}

var _ source.Source = (*Source)(nil)

// Init validates the configuration, opens the socket (UDP, TCP listener) and starts receiving
// or connecting in the background. It returns an error for an unknown transport, a missing
// address, or a port that cannot be opened.
func (s *Source) Init() error {
	if s.Transport == "" {
		s.Transport = TransportUDP
	}
	if s.Logger == nil {
		s.Logger = slog.Default()
	}
	s.Logger = s.Logger.With("source", "gb28181", "transport", s.Transport) // ssrc: the creator's (kind.go, the platform's channel)
	s.health.Waiting(s.Transport + " " + s.ListenAddr + s.RemoteAddr)
	s.clock = timestamp.Clock{Rate: rtp.ClockRate, MaxJump: s.MaxJump}
	if err := s.clock.Init(); err != nil {
		return err
	}
	s.wall = timestamp.Wallclock{Rate: rtp.ClockRate}
	s.q = live.NewQueue(s.QueueSize)
	s.depack = psDepacketizer{clock: &s.clock, wall: &s.wall, stats: &s.stats, deliver: s.deliver}
	s.depack.init()
	s.recv = rtp.Receiver{
		SSRC: s.SSRC, Sender: s.Sender, LockAddr: s.LockAddr, Holdover: s.Holdover, PayloadType: s.PayloadType,
		ReorderWindow: s.ReorderWindow, ReorderDelay: s.ReorderDelay, Watchdog: s.Watchdog,
		Stats: &s.stats, Health: &s.health, Logger: s.Logger, Wallclock: &s.wall, Handler: &s.depack,
	}
	switch s.Transport {
	case TransportUDP:
		if err := s.openUDP(); err != nil {
			return err
		}
		s.recv.Release = s.sub.Release
	case TransportTCPPassive, TransportTCPActive:
		if s.Transport == TransportTCPPassive {
			ln, err := net.Listen("tcp", s.ListenAddr)
			if err != nil {
				return fmt.Errorf("gb28181: %w", err)
			}
			s.ln = ln
		} else if _, _, err := net.SplitHostPort(s.RemoteAddr); err != nil {
			return fmt.Errorf("gb28181: tcp-active needs RemoteAddr host:port of the camera: %w", err)
		}
		s.recv.ReorderWindow = 1 // TCP does not reorder: only count loss
		s.pool = udpmux.NewPool(tcpQueue + 2)
		s.recv.Release = s.pool.Put
		s.tcpIn = make(chan tcpPacket, tcpQueue)
		s.newConn = make(chan uint64)
	default:
		return fmt.Errorf("gb28181: transport %q: want %q, %q or %q", s.Transport, TransportUDP, TransportTCPPassive, TransportTCPActive)
	}
	if err := s.recv.Init(time.Now()); err != nil {
		s.closeSockets()
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel, s.done = cancel, make(chan struct{})
	switch s.Transport {
	case TransportTCPPassive:
		s.wg.Add(1)
		go s.accept(ctx)
	case TransportTCPActive:
		s.wg.Add(1)
		go s.dial(ctx)
	}
	go s.run(ctx)
	return nil
}

func (s *Source) openUDP() error {
	var err error
	if s.sub, err = udpmux.SubscribeAs(s.ListenAddr, s.SSRC, s.owner(), false); err != nil {
		return fmt.Errorf("gb28181: %w", err)
	}
	rtcpAddr := s.RTCPAddr
	if rtcpAddr == "" {
		host, port, err := net.SplitHostPort(s.ListenAddr)
		p, perr := strconv.Atoi(port)
		if err != nil || perr != nil || p <= 0 || p >= 65535 {
			s.sub.Close()
			return fmt.Errorf("gb28181: listen address %q: give a fixed port below 65535, or set RTCPAddr", s.ListenAddr)
		}
		rtcpAddr = net.JoinHostPort(host, strconv.Itoa(p+1))
	}
	if rtcpAddr != "none" {
		if s.rtcp, err = udpmux.SubscribeAs(rtcpAddr, s.SSRC, s.owner(), true); err != nil {
			s.sub.Close()
			return fmt.Errorf("gb28181: RTCP: %w", err)
		}
	}
	return nil
}

func (s *Source) deliver(au *media.AccessUnit) bool {
	s.health.AccessUnit(time.Now())
	s.alive.Store(true)
	return s.q.Push(au)
}

// run owns the receiving state: every packet, timer and connection change goes through it.
func (s *Source) run(ctx context.Context) {
	defer close(s.done)
	var udpC, rtcpC <-chan *udpmux.Datagram
	if s.sub != nil {
		udpC = s.sub.C
	}
	if s.rtcp != nil {
		rtcpC = s.rtcp.C
	}
	gen := uint64(0)
	timer := time.NewTimer(time.Until(s.recv.Wake()))
	defer timer.Stop()
	for {
		select {
		case d := <-udpC:
			s.recv.Handle(d)
		case d := <-rtcpC:
			s.recv.RTCP(d.Bytes())
			s.rtcp.Release(d)
		case p := <-s.tcpIn:
			if p.gen != gen {
				s.pool.Put(p.d) // from a connection that was replaced
				continue
			}
			s.recv.Handle(p.d)
		case gen = <-s.newConn:
			s.recv.Reset(time.Now()) // the next packet starts a new session
		case <-timer.C:
		case <-ctx.Done():
			return
		}
		now := time.Now()
		s.recv.Tick(now)
		if s.recv.Stalled(now) {
			switch {
			case s.Transport != TransportUDP && s.currentConn() != nil:
				s.stats.Watchdog.Add(1)
				s.Logger.Warn("no packets for the watchdog period, closing the connection", "watchdog", s.recv.Watchdog)
				s.closeConn()
			case s.recv.Locked():
				s.stats.Watchdog.Add(1)
				s.Logger.Warn("no packets for the watchdog period, releasing the sender lock", "watchdog", s.recv.Watchdog)
			}
			s.recv.Reset(now)
		}
		timer.Reset(time.Until(s.recv.Wake()))
	}
}

// Read returns the next access unit (Annex-B, parameter sets before key frames), blocking until
// one arrives. It returns ctx.Err() when ctx is done and live.ErrClosed after Close.
func (s *Source) Read(ctx context.Context) (*media.AccessUnit, error) {
	if s.q == nil {
		return nil, errors.New("gb28181: Read before Init")
	}
	return s.q.Pop(ctx)
}

// Info returns the codec and, once an SPS was seen, the picture size and frame rate.
func (s *Source) Info() media.StreamInfo { return s.depack.Info() }

// Live reports true.
func (s *Source) Live() bool { return true }

// Stats returns the source's counters.
func (s *Source) Stats() live.Stats {
	st := s.stats.Snapshot()
	if s.sub != nil {
		st.Garbage += s.sub.Garbage()
		st.PacketOverflow += s.sub.Overflow()
	}
	s.health.Fill(&st, time.Now())
	return st
}

// DemuxStats returns the program-stream counters, vendor oddities included.
func (s *Source) DemuxStats() ps.Stats { return s.depack.demux.Stats() }

// Addr returns the local address media is received on (useful with port 0); zero for
// TransportTCPActive.
func (s *Source) Addr() netip.AddrPort {
	switch {
	case s.sub != nil:
		return s.sub.Addr()
	case s.ln != nil:
		return s.ln.Addr().(*net.TCPAddr).AddrPort()
	}
	return netip.AddrPort{}
}

// Close stops receiving and releases the sockets. Safe to call more than once.
func (s *Source) Close() error {
	s.closer.Do(func() {
		if s.cancel == nil {
			return
		}
		s.cancel()
		s.closeSockets()
		s.closeConn()
		s.wg.Wait()
		<-s.done
		s.q.Close()
	})
	return nil
}

func (s *Source) closeSockets() {
	if s.sub != nil {
		s.sub.Close()
	}
	if s.rtcp != nil {
		s.rtcp.Close()
	}
	if s.ln != nil {
		s.ln.Close()
	}
}

// owner names the source in a port clash.
func (s *Source) owner() string {
	if s.Name == "" {
		return ""
	}
	return "stream " + s.Name
}
