package api

import (
	"net"
	"net/http"
	"strconv"
	"sync"
)

// MaxExports bounds the recording and results exports answered at once (export.mp4 and
// results): each walks files and holds a fragment in memory while its client reads, for up to
// the 10-minute write deadline. One more is answered 429 with Retry-After.
const MaxExports = 4

// exportRetry is the Retry-After of a refused export, in seconds.
const exportRetry = 5

// MaxExportsPerClient bounds the exports answered at once to one client (its address without
// the port): a client whose exports stall (it stops reading; each holds its slot up to the
// write deadline) cannot take every slot from the others. One more is answered 429.
const MaxExportsPerClient = 2

// exportSlots counts the exports being answered, in all and by client (the zero value: none).
type exportSlots struct {
	mu       sync.Mutex
	n        int
	byClient map[string]int
}

// take takes a slot for client, false when all are taken or the client has its share.
func (e *exportSlots) take(client string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.n >= MaxExports || e.byClient[client] >= MaxExportsPerClient {
		return false
	}
	if e.byClient == nil {
		e.byClient = map[string]int{}
	}
	e.n++
	e.byClient[client]++
	return true
}

// give gives client's slot back.
func (e *exportSlots) give(client string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.n--
	if e.byClient[client]--; e.byClient[client] <= 0 {
		delete(e.byClient, client)
	}
}

// bound serves h while fewer than MaxExports exports are under way and fewer than
// MaxExportsPerClient for the request's client, else answers 429.
func (e *exportSlots) bound(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		client := exportClient(r)
		if !e.take(client) {
			w.Header().Set("Retry-After", strconv.Itoa(exportRetry))
			writeError(w, http.StatusTooManyRequests, "exports under way: at most %d at once, %d for one client: retry later", MaxExports, MaxExportsPerClient)
			return
		}
		defer e.give(client)
		h(w, r)
	}
}

// exportClient names the client of r for MaxExportsPerClient: its address without the port,
// and for a request another node forwarded (X-Vinfer-Forwarded-By), that node's address with
// the client it names (X-Forwarded-For, set by the forwarding proxy): the clients of one node
// do not share a share. A client naming itself in these headers gets no more than the total.
func exportClient(r *http.Request) string {
	client, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		client = r.RemoteAddr
	}
	if r.Header.Get(forwardedHeader) != "" {
		client += " for " + r.Header.Get("X-Forwarded-For")
	}
	return client
}
