package timestamp

import (
	"sync"
	"time"
)

// ntpEpochOffset is the number of seconds from the NTP epoch (1900-01-01) to the Unix epoch.
const ntpEpochOffset = 2208988800

// NTPTime converts a 64-bit NTP timestamp (RFC 5905 §6: 32-bit seconds since 1900, 32-bit
// fraction), as carried in RTCP sender reports, into a time.Time.
func NTPTime(v uint64) time.Time {
	secs := int64(v>>32) - ntpEpochOffset
	nanos := int64((v & 0xFFFFFFFF) * uint64(time.Second) >> 32)
	return time.Unix(secs, nanos)
}

// NTP converts t into a 64-bit NTP timestamp, the inverse of NTPTime (to the nanosecond).
func NTP(t time.Time) uint64 {
	secs := uint64(t.Unix() + ntpEpochOffset)
	frac := (uint64(t.Nanosecond())<<32 + uint64(time.Second) - 1) / uint64(time.Second)
	return secs<<32 | frac
}

// Wallclock maps the media timestamps of one stream to the capture wall-clock time of the
// sender, from the (NTP, RTP) timestamp pair of its latest RTCP sender report (RFC 3550 §6.4.1).
// Cameras whose clocks are NTP-synchronised thereby give times that align across cameras.
//
// Wallclock is safe for concurrent use: RTCP usually arrives on another socket than RTP.
type Wallclock struct {
	// Rate is the RTP clock rate in ticks per second (90000 for video).
	Rate int

	mu      sync.Mutex
	have    bool
	ntp     time.Time
	rtp     uint32
	reports uint64
}

// Update records a sender report: the sender's wall-clock time ntp (64-bit NTP format) matches
// media timestamp rtp.
func (w *Wallclock) Update(ntp uint64, rtp uint32) {
	t := NTPTime(ntp)
	w.mu.Lock()
	w.have, w.ntp, w.rtp = true, t, rtp
	w.reports++
	w.mu.Unlock()
}

// At returns the capture time of media timestamp ts; ok is false before the first sender report.
func (w *Wallclock) At(ts uint32) (t time.Time, ok bool) {
	w.mu.Lock()
	have, base, rtp := w.have, w.ntp, w.rtp
	w.mu.Unlock()
	if !have || w.Rate <= 0 {
		return time.Time{}, false
	}
	return base.Add(Duration(int64(int32(ts-rtp)), w.Rate)), true
}

// Reset forgets the last sender report (the stream restarted with another clock).
func (w *Wallclock) Reset() {
	w.mu.Lock()
	w.have = false
	w.mu.Unlock()
}

// Reports returns how many sender reports were recorded.
func (w *Wallclock) Reports() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.reports
}
