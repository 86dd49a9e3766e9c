package platform

import (
	"log/slog"
	"sync"
	"time"
)

// logEvery is how often a refusal of one kind is logged at most; the rest are counted.
const logEvery = time.Minute

// rateLog logs a warning of each kind (key) at most once per every, with the number of the
// same kind left unlogged since the last line: input an attacker controls cannot flood the log.
type rateLog struct {
	logger *slog.Logger
	every  time.Duration
	now    func() time.Time

	mu      sync.Mutex
	last    map[string]time.Time
	skipped map[string]uint64
}

func (r *rateLog) log(key, msg string, args ...any) {
	if n, ok := r.allow(key); ok {
		r.logger.Warn(msg, append(args, "unlogged_since_last", n)...)
	}
}

// allow reports whether a line of kind key may be logged now, and how many of the kind went
// unlogged since the last; a refusal is counted for the next.
func (r *rateLog) allow(key string) (uint64, bool) {
	now := r.now()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.last == nil {
		r.last, r.skipped = map[string]time.Time{}, map[string]uint64{}
	}
	if t, ok := r.last[key]; ok && now.Sub(t) < r.every {
		r.skipped[key]++
		return 0, false
	}
	n := r.skipped[key]
	r.last[key], r.skipped[key] = now, 0
	return n, true
}
