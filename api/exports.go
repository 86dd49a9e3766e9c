package api

import (
	"net/http"
	"strconv"
	"sync/atomic"
)

// MaxExports bounds the recording and results exports answered at once (export.mp4 and
// results): each walks files and holds a fragment in memory while its client reads, for up to
// the 10-minute write deadline. One more is answered 429 with Retry-After.
const MaxExports = 4

// exportRetry is the Retry-After of a refused export, in seconds.
const exportRetry = 5

// exportSlots counts the exports being answered (the zero value: none).
type exportSlots struct{ n atomic.Int32 }

// bound serves h while fewer than MaxExports exports are under way, else answers 429.
func (e *exportSlots) bound(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if e.n.Add(1) > MaxExports {
			e.n.Add(-1)
			w.Header().Set("Retry-After", strconv.Itoa(exportRetry))
			writeError(w, http.StatusTooManyRequests, "%d exports are under way (at most %d at once): retry later", MaxExports, MaxExports)
			return
		}
		defer e.n.Add(-1)
		h(w, r)
	}
}
