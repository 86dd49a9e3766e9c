package live

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// States of a live source (Stats.State).
const (
	// StateConnecting: no media yet (dialling, waiting for a sender); Reason has the last
	// error or what is awaited.
	StateConnecting = "connecting"
	// StateWaitingKeyframe: packets arrive but nothing decodable was delivered yet (no key
	// frame, no parameter sets, the wrong codec); Hint says which when known.
	StateWaitingKeyframe = "waiting_keyframe"
	// StateRunning: access units are delivered.
	StateRunning = "running"
	// StateStalled: the source delivered before, but nothing arrived (or nothing decodable)
	// for the stall period; Reason says which.
	StateStalled = "stalled"
	// StateFailed: the stream cannot be played (unsupported codec); retrying cannot help.
	StateFailed = "failed"
)

// DefaultStall is how long without packets (or without access units while packets arrive) a
// source that delivered before is reported stalled when Health.Stall is 0.
const DefaultStall = 5 * time.Second

// Health tracks what a live source's state is, for Stats: when packets and access units last
// arrived, the last error, a hint at the likely cause. Packet and AccessUnit are cheap (atomic
// stores) and safe from any goroutine; the rest takes a lock. The zero value is ready.
type Health struct {
	// Stall is the silence after which a source that delivered is stalled; 0 means
	// DefaultStall.
	Stall time.Duration

	lastPacket atomic.Int64 // unix nanoseconds; 0: never
	lastAU     atomic.Int64
	mu         sync.Mutex
	err        string
	errAt      time.Time
	failed     string
	hint       string
	waiting    string // what a source with no packet waits for ("packets on udp 127.0.0.1:5004")
	foreign    string
}

// Packet records a packet accepted at now.
func (h *Health) Packet(now time.Time) { h.lastPacket.Store(now.UnixNano()) }

// AccessUnit records an access unit delivered at now.
func (h *Health) AccessUnit(now time.Time) { h.lastAU.Store(now.UnixNano()) }

// LastPacket returns when the last packet was accepted (zero: never).
func (h *Health) LastPacket() time.Time { return unix(h.lastPacket.Load()) }

// Error records the last error (nil is ignored).
func (h *Health) Error(err error) {
	if err == nil {
		return
	}
	h.mu.Lock()
	h.err, h.errAt = err.Error(), time.Now()
	h.mu.Unlock()
}

// Fail records that the stream cannot be played.
func (h *Health) Fail(err error) {
	h.Error(err)
	h.mu.Lock()
	h.failed = err.Error()
	h.mu.Unlock()
}

// Hint sets the likely cause of trouble ("" clears it).
func (h *Health) Hint(hint string) {
	h.mu.Lock()
	h.hint = hint
	h.mu.Unlock()
}

// Waiting says what a source that has no packet yet waits for.
func (h *Health) Waiting(what string) {
	h.mu.Lock()
	h.waiting = what
	h.mu.Unlock()
}

// Foreign records the last unexpected sender ("SSRC 0x… from host:port").
func (h *Health) Foreign(who string) {
	h.mu.Lock()
	h.foreign = who
	h.mu.Unlock()
}

// Fill sets st's State, Reason, Hint, LastError and LastForeign as of now.
func (h *Health) Fill(st *Stats, now time.Time) {
	stall := h.Stall
	if stall <= 0 {
		stall = DefaultStall
	}
	pkt, au := unix(h.lastPacket.Load()), unix(h.lastAU.Load())
	h.mu.Lock()
	defer h.mu.Unlock()
	st.LastError, st.LastErrorAt, st.Hint, st.LastForeign = h.err, h.errAt, h.hint, h.foreign
	if st.Hint == "" && h.foreign != "" && pkt.IsZero() {
		st.Hint = "packets from an unknown sender: " + h.foreign
	}
	switch {
	case h.failed != "":
		st.State, st.Reason = StateFailed, h.failed
	case pkt.IsZero() && au.IsZero():
		st.State = StateConnecting
		st.Reason = h.err
		if st.Reason == "" {
			st.Reason = "no packets yet"
			if h.waiting != "" {
				st.Reason = "no packets yet on " + h.waiting
			}
		}
	case now.Sub(pkt) >= stall && !au.IsZero():
		st.State, st.Reason = StateStalled, fmt.Sprintf("no packets for %v", now.Sub(pkt).Round(time.Second))
	case au.IsZero():
		st.State, st.Reason = StateWaitingKeyframe, "packets arrive, no decodable key frame yet"
		if now.Sub(pkt) >= stall {
			st.Reason = fmt.Sprintf("no packets for %v, none decodable before", now.Sub(pkt).Round(time.Second))
		}
	case now.Sub(au) >= stall:
		st.State, st.Reason = StateStalled, fmt.Sprintf("packets arrive, nothing decodable for %v", now.Sub(au).Round(time.Second))
	default:
		st.State, st.Reason = StateRunning, ""
	}
}

func unix(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}
