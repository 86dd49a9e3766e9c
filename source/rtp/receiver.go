package rtp

import (
	"net/netip"
	"time"

	"github.com/pion/rtcp"
	pionrtp "github.com/pion/rtp"

	"github.com/vinfer/vinfer/source/internal/udpmux"
	"github.com/vinfer/vinfer/source/live"
	"github.com/vinfer/vinfer/source/timestamp"
)

// DefaultWatchdog is how long a live source waits for an access unit before it acts: an RTSP
// or active TCP source reconnects, a listening source releases its SSRC so that a restarted
// sender with a new SSRC is accepted.
const DefaultWatchdog = 10 * time.Second

// Handler consumes the RTP packets of one stream in sequence order.
type Handler interface {
	// Push hands over the next packet, received at arrival; it is not kept after the call.
	Push(pkt *pionrtp.Packet, arrival time.Time)
	// Loss reports that packets are missing before the next one pushed.
	Loss()
	// Restart reports that the next packet starts a new session (new SSRC, sender restart).
	Restart()
}

// Receiver is the receiving half shared by the RTP and GB28181 sources: it accepts the packets
// of one SSRC from one sender (the first to arrive unless SSRC is set), counts and drops the
// others, puts packets back in order (Reorderer), feeds RTCP sender reports to Wallclock, and
// hands ordered packets to Handler. All methods are called from the source's one goroutine.
type Receiver struct {
	// SSRC selects the stream; 0 takes the first SSRC that arrives.
	SSRC uint32
	// PayloadType selects the RTP payload type; 0 accepts any.
	PayloadType uint8
	// ReorderWindow and ReorderDelay configure the Reorderer (1 for TCP: loss counting only).
	ReorderWindow int
	ReorderDelay  time.Duration
	// Watchdog is the longest time without an access unit before Stalled reports true;
	// 0 means DefaultWatchdog.
	Watchdog time.Duration
	// Stats receives the packet counters; nil for private counters.
	Stats *live.Counters
	// Wallclock receives the sender reports of the selected SSRC; nil to ignore RTCP.
	Wallclock *timestamp.Wallclock
	// Handler consumes the ordered packets.
	Handler Handler
	// Release recycles a datagram once the Receiver is done with it.
	Release func(*udpmux.Datagram)

	reorder  Reorderer[*udpmux.Datagram]
	pkt      pionrtp.Packet
	locked   bool
	ssrc     uint32
	from     netip.AddrPort
	everLock bool
	lastSSRC uint32
	lastFrom netip.AddrPort
	aliveAt  time.Time          // last access unit, or last Reset
	early    *rtcp.SenderReport // the last report received before any stream was selected
}

// Init checks the configuration.
func (r *Receiver) Init(now time.Time) error {
	if r.Stats == nil {
		r.Stats = new(live.Counters)
	}
	if r.Watchdog <= 0 {
		r.Watchdog = DefaultWatchdog
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
		r.RTCP(d.Bytes())
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
	if r.SSRC != 0 && r.pkt.SSRC != r.SSRC {
		r.Stats.Foreign.Add(1)
		r.Release(d)
		return
	}
	if !r.locked {
		r.lock(r.pkt.SSRC, d.From)
	} else if r.pkt.SSRC != r.ssrc || d.From != r.from {
		r.Stats.Foreign.Add(1)
		r.Release(d)
		return
	}
	r.Stats.Packets.Add(1)
	r.Stats.Bytes.Add(uint64(len(b)))
	if !r.reorder.Push(r.pkt.SequenceNumber, d, d.At) {
		r.Release(d)
	}
	r.flush(d.At)
}

func (r *Receiver) lock(ssrc uint32, from netip.AddrPort) {
	if r.everLock && (ssrc != r.lastSSRC || from != r.lastFrom) {
		r.Stats.SSRCChanges.Add(1)
	}
	if r.everLock {
		r.Handler.Restart()
		if r.Wallclock != nil {
			r.Wallclock.Reset()
		}
	}
	r.locked, r.everLock = true, true
	r.ssrc, r.from = ssrc, from
	r.lastSSRC, r.lastFrom = ssrc, from
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

// Alive records that an access unit was delivered at now (resets the watchdog).
func (r *Receiver) Alive(now time.Time) { r.aliveAt = now }

// Stalled reports that no access unit was delivered for the watchdog period.
func (r *Receiver) Stalled(now time.Time) bool { return now.Sub(r.aliveAt) >= r.Watchdog }

// Locked reports that a stream (SSRC and sender) is selected.
func (r *Receiver) Locked() bool { return r.locked }

// Reset drops held packets and the stream selection: the next packet may come from another
// SSRC or sender and starts a new session (Handler.Restart). The watchdog restarts at now.
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
