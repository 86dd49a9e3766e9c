package rtp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"github.com/vinfer/vinfer/media"
	"github.com/vinfer/vinfer/source"
	"github.com/vinfer/vinfer/source/internal/udpmux"
	"github.com/vinfer/vinfer/source/live"
	"github.com/vinfer/vinfer/source/timestamp"
)

// Source receives one H.264 or H.265 RTP stream over UDP (RFC 3550, RFC 6184, RFC 7798), as
// sent by `ffmpeg -f rtp` or a camera pushing RTP, and delivers its access units. Several
// Sources may listen on one port when each selects its SSRC. RTCP sender reports on the next
// port (RFC 3550 §11) or on the RTP port itself (RFC 5761) give the capture wall-clock time.
//
// Set the fields, call Init, then Read until Close. Read blocks while nothing arrives: a live
// source never ends by itself.
type Source struct {
	// ListenAddr is the UDP address RTP arrives at, e.g. ":5004" or "127.0.0.1:5004".
	ListenAddr string
	// RTCPAddr is where RTCP arrives: "" means ListenAddr's port + 1, "none" disables it.
	// RTCP multiplexed on the RTP port (RFC 5761) is accepted either way.
	RTCPAddr string
	// SSRC selects the stream; 0 takes the first that arrives (and, once it was silent for
	// Holdover, the next one: see Receiver).
	SSRC uint32
	// Sender, when valid, accepts packets from that address only (any port when its port is 0).
	Sender netip.AddrPort
	// LockAddr keeps the stream on the first sender's IP address for good.
	LockAddr bool
	// Holdover is how long the current sender must be silent before another may take the
	// stream over; 0 means DefaultHoldover.
	Holdover time.Duration
	// Codec is media.CodecH264 or media.CodecH265; SDPFile may give it instead.
	Codec media.Codec
	// PayloadType selects the RTP payload type; 0 accepts any.
	PayloadType uint8
	// SDPFile is an SDP file describing the stream (as `ffmpeg -sdp_file` writes): it sets
	// Codec, PayloadType and the out-of-band parameter sets.
	SDPFile string
	// Roots, when not nil, are the directories SDPFile must lie in (symlinks resolved).
	Roots []string
	// ParamSets are out-of-band VPS/SPS/PPS NAL units (without start codes), for streams that
	// do not repeat them in-band.
	ParamSets [][]byte
	// ReorderWindow (packets) and ReorderDelay bound the wait for a missing packet; zero
	// values mean DefaultReorderWindow and DefaultReorderDelay.
	ReorderWindow int
	ReorderDelay  time.Duration
	// Watchdog is how long without a packet before the sender lock is released (and the
	// silence counted as an outage); 0 means DefaultWatchdog.
	Watchdog time.Duration
	// MaxJump bounds timestamp steps (timestamp.Clock); 0 means timestamp.DefaultMaxJump.
	MaxJump time.Duration
	// QueueSize is the number of access units buffered for Read; 0 means live.DefaultQueueSize.
	QueueSize int
	// Name is the stream's id, for messages (a port clash names the stream holding it).
	Name string
	// Logger receives sender, timestamp and codec events; nil means slog.Default(). The
	// registry's Open gives one that names the stream.
	Logger *slog.Logger

	stats   live.Counters
	health  live.Health
	warnSDP error
	q       *live.Queue
	sub     *udpmux.Sub
	rtcp    *udpmux.Sub
	depack  Depacketizer
	recv    Receiver
	clock   timestamp.Clock
	wall    timestamp.Wallclock
	cancel  context.CancelFunc
	done    chan struct{}
	close   sync.Once
}

var _ source.Source = (*Source)(nil)

// Init validates the configuration, opens the sockets and starts receiving. It returns an
// error for a missing codec, an unreadable SDP file or a port that cannot be opened.
func (s *Source) Init() error {
	if s.SDPFile != "" {
		st, warn, err := readSDP(s.SDPFile, s.Roots)
		if err != nil {
			return err
		}
		if warn != nil {
			s.warnSDP = warn
		}
		s.Codec, s.PayloadType = st.Codec, st.PayloadType
		s.ParamSets = append(st.ParamSets, s.ParamSets...)
	}
	if s.Codec != media.CodecH264 && s.Codec != media.CodecH265 {
		return fmt.Errorf("rtp: codec %v: set Codec to H.264 or H.265, or give an SDPFile", s.Codec)
	}
	if s.Logger == nil {
		s.Logger = slog.Default()
	}
	s.Logger = s.Logger.With("source", "rtp", "listen", s.ListenAddr)
	if s.warnSDP != nil {
		s.Logger.Warn("SDP parameter sets partly unusable, the stream relies on in-band ones", "sdp", s.SDPFile, "err", s.warnSDP)
		s.health.Error(s.warnSDP)
	}
	rtcpAddr, err := s.rtcpAddr()
	if err != nil {
		return err
	}
	s.clock = timestamp.Clock{Rate: ClockRate, MaxJump: s.MaxJump}
	if err := s.clock.Init(); err != nil {
		return err
	}
	s.wall = timestamp.Wallclock{Rate: ClockRate}
	s.q = live.NewQueue(s.QueueSize)
	s.depack = Depacketizer{
		Codec: s.Codec, ParamSets: s.ParamSets, Clock: &s.clock, Wallclock: &s.wall, Stats: &s.stats,
		Health: &s.health, Logger: s.Logger, OnAccessUnit: s.deliver,
	}
	if err := s.depack.Init(); err != nil {
		return err
	}
	if s.sub, err = udpmux.SubscribeAs(s.ListenAddr, s.SSRC, s.owner(), false); err != nil {
		return fmt.Errorf("rtp: %w", err)
	}
	if rtcpAddr != "" {
		if s.rtcp, err = udpmux.SubscribeAs(rtcpAddr, s.SSRC, s.owner(), true); err != nil {
			s.sub.Close()
			return fmt.Errorf("rtp: RTCP: %w", err)
		}
	}
	s.recv = Receiver{
		SSRC: s.SSRC, Sender: s.Sender, LockAddr: s.LockAddr, Holdover: s.Holdover, PayloadType: s.PayloadType,
		ReorderWindow: s.ReorderWindow, ReorderDelay: s.ReorderDelay, Watchdog: s.Watchdog,
		Stats: &s.stats, Health: &s.health, Logger: s.Logger, Wallclock: &s.wall, Handler: &s.depack, Release: s.sub.Release,
	}
	s.health.Waiting("udp " + s.sub.Addr().String())
	if err := s.recv.Init(time.Now()); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel, s.done = cancel, make(chan struct{})
	go s.run(ctx)
	return nil
}

func (s *Source) rtcpAddr() (string, error) {
	switch s.RTCPAddr {
	case "none":
		return "", nil
	case "":
		host, port, err := net.SplitHostPort(s.ListenAddr)
		if err != nil {
			return "", fmt.Errorf("rtp: listen address %q: %w", s.ListenAddr, err)
		}
		p, err := strconv.Atoi(port)
		if err != nil || p <= 0 || p >= 65535 {
			return "", fmt.Errorf("rtp: listen address %q: give a fixed port below 65535, or set RTCPAddr", s.ListenAddr)
		}
		return net.JoinHostPort(host, strconv.Itoa(p+1)), nil
	}
	return s.RTCPAddr, nil
}

func (s *Source) deliver(au *media.AccessUnit) bool {
	s.health.AccessUnit(time.Now())
	return s.q.Push(au)
}

func (s *Source) run(ctx context.Context) {
	defer close(s.done)
	var rtcpC <-chan *udpmux.Datagram
	if s.rtcp != nil {
		rtcpC = s.rtcp.C
	}
	timer := time.NewTimer(time.Until(s.recv.Wake()))
	defer timer.Stop()
	for {
		select {
		case d := <-s.sub.C:
			s.recv.Handle(d)
		case d := <-rtcpC:
			s.recv.RTCP(d.Bytes())
			s.rtcp.Release(d)
		case <-timer.C:
		case <-ctx.Done():
			return
		}
		now := time.Now()
		s.recv.Tick(now)
		if s.recv.Stalled(now) {
			if s.recv.Locked() {
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
		return nil, errors.New("rtp: Read before Init")
	}
	return s.q.Pop(ctx)
}

// Info returns the codec and, once an SPS was seen, the picture size and frame rate.
func (s *Source) Info() media.StreamInfo { return s.depack.Info() }

// Live reports true: the pipeline drops frames rather than slowing the sender.
func (s *Source) Live() bool { return true }

// Addr returns the local address RTP is received on (useful with port 0).
func (s *Source) Addr() netip.AddrPort { return s.sub.Addr() }

// Stats returns the source's counters.
func (s *Source) Stats() live.Stats {
	st := s.stats.Snapshot()
	if s.sub != nil {
		st.Garbage += s.sub.Garbage()
		st.PacketOverflow += s.sub.Overflow()
	}
	if s.rtcp != nil {
		st.Garbage += s.rtcp.Garbage()
	}
	s.health.Fill(&st, time.Now())
	if st.Hint == "" && st.State == live.StateConnecting && st.Garbage > 0 {
		st.Hint = "datagrams arrive on the port but are not RTP"
	}
	return st
}

// Close stops receiving and releases the ports. Safe to call more than once.
func (s *Source) Close() error {
	s.close.Do(func() {
		if s.cancel == nil {
			return
		}
		s.cancel()
		<-s.done
		s.sub.Close()
		if s.rtcp != nil {
			s.rtcp.Close()
		}
		s.q.Close()
	})
	return nil
}

// owner names the source in a port clash.
func (s *Source) owner() string {
	if s.Name == "" {
		return ""
	}
	return "stream " + s.Name
}
