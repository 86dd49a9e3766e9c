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
	now := r.now()
	r.mu.Lock()
	if r.last == nil {
		r.last, r.skipped = map[string]time.Time{}, map[string]uint64{}
	}
	if t, ok := r.last[key]; ok && now.Sub(t) < r.every {
		r.skipped[key]++
		r.mu.Unlock()
		return
	}
	n := r.skipped[key]
	r.last[key], r.skipped[key] = now, 0
	r.mu.Unlock()
	r.logger.Warn(msg, append(args, "unlogged_since_last", n)...)
}
