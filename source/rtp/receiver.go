package rtp

import (
	"fmt"
	"log/slog"
	"net/netip"
	"time"

	"github.com/pion/rtcp"
	pionrtp "github.com/pion/rtp"

	"github.com/vinfer/vinfer/source/internal/udpmux"
	"github.com/vinfer/vinfer/source/live"
	"github.com/vinfer/vinfer/source/timestamp"
)

// DefaultWatchdog is how long a live source waits for a packet before it acts: an RTSP or
// active TCP source reconnects, a listening source releases its sender lock.
const DefaultWatchdog = 10 * time.Second

// DefaultHoldover is how long the sender a stream is locked to must be silent before another
// sender (another SSRC, another address or port) may take the stream over.
const DefaultHoldover = time.Second

// foreignLogEvery bounds how often packets of unexpected senders are logged.
const foreignLogEvery = 10 * time.Second

// Handler consumes the RTP packets of one stream in sequence order.
type Handler interface {
	// Push hands over the next packet, received at arrival; it is not kept after the call.
	Push(pkt *pionrtp.Packet, arrival time.Time)
	// Loss reports that packets are missing before the next one pushed.
	Loss()
	// Restart reports that the next packet starts a new session (new SSRC, sender restart).
	Restart()
}

// Receiver is the receiving half shared by the RTP and GB28181 sources. It locks the stream to
// one sender, an SSRC (RFC 3550 §8) from one transport address, and hands that sender's packets
// to Handler in sequence order (Reorderer); RTCP sender reports of that SSRC go to Wallclock.
//
// Sender identity: a packet of another SSRC or from another address is foreign while the
// locked sender is alive: counted (Stats.Foreign), logged with its SSRC and address once per
// episode, and dropped, so a second sender cannot take over a live stream. Once the locked
// sender was silent for Holdover, the next sender that SSRC and Sender allow takes over: a
// camera that restarted with a new SSRC, or moved to a new source port, is followed after that
// short gap; the change is counted (SSRCChanges, SenderChanges) and logged. Sender pins the
// address; LockAddr keeps the first sender's address for good (only its port may change).
//
// All methods are called from the source's one goroutine.
type Receiver struct {
	// SSRC selects the stream; 0 accepts any (the first, then whichever takes over).
	SSRC uint32
	// Sender, when valid, accepts packets from that address only (and that port, when not 0).
	Sender netip.AddrPort
	// LockAddr accepts, once a sender was seen, only packets from its IP address.
	LockAddr bool
	// Holdover is the silence of the locked sender after which another may take over; 0 means
	// DefaultHoldover.
	Holdover time.Duration
	// PayloadType selects the RTP payload type; 0 accepts any.
	PayloadType uint8
	// ReorderWindow and ReorderDelay configure the Reorderer (1 for TCP: loss counting only).
	ReorderWindow int
	ReorderDelay  time.Duration
	// Watchdog is the longest time without a packet before Stalled reports true; 0 means
	// DefaultWatchdog.
	Watchdog time.Duration
	// Stats receives the packet counters; nil for private counters.
	Stats *live.Counters
	// Health receives packet arrivals and foreign senders; nil for a private one.
	Health *live.Health
	// Logger receives sender changes and foreign senders; nil means slog.Default().
	Logger *slog.Logger
	// Wallclock receives the sender reports of the selected SSRC; nil to ignore RTCP.
	Wallclock *timestamp.Wallclock
	// Handler consumes the ordered packets.
	Handler Handler
	// Release recycles a datagram once the Receiver is done with it.
	Release func(*udpmux.Datagram)

	reorder    Reorderer[*udpmux.Datagram]
	pkt        pionrtp.Packet
	locked     bool
	ssrc       uint32
	from       netip.AddrPort
	everLock   bool
	firstAddr  netip.Addr
	lastSeen   time.Time          // last packet of the locked sender
	aliveAt    time.Time          // last packet, or last Reset
	early      *rtcp.SenderReport // the last report received before any stream was selected
	foreignKey string
	foreignAt  time.Time // last foreign packet
	foreignLog time.Time // last foreign log line
}

// Init checks the configuration.
func (r *Receiver) Init(now time.Time) error {
	if r.Stats == nil {
		r.Stats = new(live.Counters)
	}
	if r.Health == nil {
		r.Health = new(live.Health)
	}
	if r.Logger == nil {
		r.Logger = slog.Default()
	}
	if r.Watchdog <= 0 {
		r.Watchdog = DefaultWatchdog
	}
	if r.Holdover <= 0 {
		r.Holdover = DefaultHoldover
	}
	if r.Release == nil {
		r.Release = func(*udpmux.Datagram) {}
	}
	r.reorder = Reorderer[*udpmux.Datagram]{Window: r.ReorderWindow, MaxDelay: r.ReorderDelay, Stats: r.Stats}
	if err := r.reorder.Init(); err != nil {
		return err
	}
	r.aliveAt = now
	return nil
}

// Handle takes one datagram (RTP, or RTCP when d.RTCP) and hands what became ready to Handler.
func (r *Receiver) Handle(d *udpmux.Datagram) {
	if d.RTCP {
		if !d.Unmatched {
			r.RTCP(d.Bytes())
		}
		r.Release(d)
		return
	}
	b := d.Bytes()
	if err := r.pkt.Unmarshal(b); err != nil || r.pkt.Version != 2 {
		r.Stats.Garbage.Add(1)
		r.Release(d)
		return
	}
	if r.PayloadType != 0 && r.pkt.PayloadType != r.PayloadType {
		r.Stats.Garbage.Add(1)
		r.Release(d)
		return
	}
	if d.Unmatched || !r.allowed(r.pkt.SSRC, d.From) {
		r.foreign(r.pkt.SSRC, d.From, d.At, "")
		r.Release(d)
		return
	}
	switch {
	case !r.locked:
		r.lock(r.pkt.SSRC, d.From, d.At)
	case r.pkt.SSRC != r.ssrc || d.From != r.from:
		if d.At.Sub(r.lastSeen) < r.Holdover {
			r.foreign(r.pkt.SSRC, d.From, d.At, "while the locked sender is alive")
			r.Release(d)
			return
		}
		r.lock(r.pkt.SSRC, d.From, d.At)
	}
	if gap := d.At.Sub(r.lastSeen); !r.lastSeen.IsZero() && gap >= r.Watchdog {
		r.Stats.AddOutage(gap)
	}
	r.lastSeen, r.aliveAt = d.At, d.At
	r.Health.Packet(d.At)
	r.Stats.Packets.Add(1)
	r.Stats.Bytes.Add(uint64(len(b)))
	if !r.reorder.Push(r.pkt.SequenceNumber, d, d.At) {
		r.Release(d)
	}
	r.flush(d.At)
}

// allowed reports whether the configuration admits a sender at all.
func (r *Receiver) allowed(ssrc uint32, from netip.AddrPort) bool {
	switch {
	case r.SSRC != 0 && ssrc != r.SSRC:
		return false
	case r.Sender.Addr().IsValid() && (from.Addr().Unmap() != r.Sender.Addr().Unmap() || r.Sender.Port() != 0 && from.Port() != r.Sender.Port()):
		return false
	case r.LockAddr && r.firstAddr.IsValid() && from.Addr().Unmap() != r.firstAddr:
		return false
	}
	return true
}

// foreign counts and logs (once per episode) a packet of a sender the stream does not take.
func (r *Receiver) foreign(ssrc uint32, from netip.AddrPort, now time.Time, why string) {
	r.Stats.Foreign.Add(1)
	who := fmt.Sprintf("SSRC 0x%08x (%d) from %v", ssrc, ssrc, from)
	r.Health.Foreign(who)
	newEpisode := who != r.foreignKey || now.Sub(r.foreignAt) >= foreignLogEvery
	r.foreignKey, r.foreignAt = who, now
	if newEpisode && now.Sub(r.foreignLog) >= time.Second {
		r.foreignLog = now
		if why == "" {
			why = "not the configured SSRC or sender"
		}
		attrs := []any{"sender_ssrc", fmt.Sprintf("0x%08x", ssrc), "from", from.String(), "why", why, "foreign_packets", r.Stats.Foreign.Load()}
		if r.locked {
			attrs = append(attrs, "locked_ssrc", fmt.Sprintf("0x%08x", r.ssrc), "locked_from", r.from.String())
		}
		if r.SSRC != 0 {
			attrs = append(attrs, "configured_ssrc", fmt.Sprintf("0x%08x", r.SSRC))
		}
		r.Logger.Warn("RTP packets of an unexpected sender dropped", attrs...)
	}
}

func (r *Receiver) lock(ssrc uint32, from netip.AddrPort, now time.Time) {
	if r.everLock {
		changed := []any{"sender_ssrc", fmt.Sprintf("0x%08x", ssrc), "from", from.String(),
			"old_sender_ssrc", fmt.Sprintf("0x%08x", r.ssrc), "old_from", r.from.String(), "silent_for", now.Sub(r.lastSeen).Round(time.Millisecond)}
		if ssrc != r.ssrc {
			r.Stats.SSRCChanges.Add(1)
		}
		if from != r.from {
			r.Stats.SenderChanges.Add(1)
		}
		if ssrc != r.ssrc || from != r.from {
			r.Logger.Warn("RTP sender changed", changed...)
		}
		r.Handler.Restart()
		if r.Wallclock != nil {
			r.Wallclock.Reset()
		}
		r.reorder.Drain(r.Release)
	} else {
		r.Logger.Info("RTP sender", "sender_ssrc", fmt.Sprintf("0x%08x", ssrc), "from", from.String())
		r.firstAddr = from.Addr().Unmap()
	}
	r.locked, r.everLock = true, true
	r.ssrc, r.from = ssrc, from
	// Senders such as FFmpeg send their first report just before their first RTP packet.
	if sr := r.early; sr != nil && sr.SSRC == ssrc && r.Wallclock != nil {
		r.Wallclock.Update(sr.NTPTime, sr.RTPTime)
		r.Stats.SenderReports.Add(1)
	}
	r.early = nil
}

// flush hands the packets that are ready at now to Handler.
func (r *Receiver) flush(now time.Time) {
	for {
		d, lost, ok := r.reorder.Pop(now)
		if !ok {
			return
		}
		if lost > 0 {
			r.Handler.Loss()
		}
		if err := r.pkt.Unmarshal(d.Bytes()); err == nil {
			r.Handler.Push(&r.pkt, d.At)
		}
		r.Release(d)
	}
}

// RTCP takes an RTCP compound packet: the sender reports of the selected SSRC go to Wallclock.
// A report that arrives before any stream is selected is kept and applied when its SSRC is.
func (r *Receiver) RTCP(b []byte) {
	if r.Wallclock == nil {
		return
	}
	pkts, err := rtcp.Unmarshal(b)
	if err != nil {
		r.Stats.Garbage.Add(1)
		return
	}
	for _, p := range pkts {
		sr, ok := p.(*rtcp.SenderReport)
		if ok && !r.locked && (r.SSRC == 0 || sr.SSRC == r.SSRC) {
			r.early = sr
			continue
		}
		if ok && r.locked && sr.SSRC == r.ssrc {
			r.Wallclock.Update(sr.NTPTime, sr.RTPTime)
			r.Stats.SenderReports.Add(1)
		}
	}
}

// Tick gives up on missing packets whose wait is over at now.
func (r *Receiver) Tick(now time.Time) { r.flush(now) }

// Stalled reports that no packet was accepted for the watchdog period.
func (r *Receiver) Stalled(now time.Time) bool { return now.Sub(r.aliveAt) >= r.Watchdog }

// Locked reports that a stream (SSRC and sender) is selected.
func (r *Receiver) Locked() bool { return r.locked }

// Reset drops held packets and the stream selection: the next packet may come from another
// SSRC or sender (as Sender and LockAddr allow) and starts a new session (Handler.Restart).
// The watchdog restarts at now.
func (r *Receiver) Reset(now time.Time) {
	r.reorder.Drain(r.Release)
	r.locked = false
	r.aliveAt = now
}

// Wake returns when Tick or the watchdog needs to run next.
func (r *Receiver) Wake() time.Time {
	w := r.aliveAt.Add(r.Watchdog)
	if d, ok := r.reorder.Deadline(); ok && d.Before(w) {
		return d
	}
	return w
}
