package api

import (
	"net"
	"net/http"
	"sync"
	"time"
)

// Lookups of event ids that name no node (each asks every peer): legacyLookupRate a second per
// client (its address without the port), in bursts of legacyLookupBurst, so that one client
// flooding them does not use up another's; and legacyLookupTotal a second over all clients,
// in bursts of twice that, which bounds the requests to the peers. Clients are remembered up
// to maxLookupClients (those whose bucket is full again forgotten first, then all).
const (
	legacyLookupRate  = 4
	legacyLookupBurst = 8
	legacyLookupTotal = 16
	maxLookupClients  = 1024
)

// lookupBucket is a token bucket.
type lookupBucket struct {
	tokens float64
	last   time.Time
}

// take takes a token at now from a bucket of rate tokens a second holding at most burst,
// false when there is none.
func (b *lookupBucket) take(now time.Time, rate, burst float64) bool {
	if b.last.IsZero() {
		b.tokens = burst
	} else {
		b.tokens = min(burst, b.tokens+max(0, now.Sub(b.last).Seconds())*rate)
	}
	b.last = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// lookupLimit holds the buckets of the lookups of ids that name no node.
type lookupLimit struct {
	mu       sync.Mutex
	all      lookupBucket
	byClient map[string]*lookupBucket
}

// allow takes a lookup for the client of r at now, false beyond its rate or the total.
func (l *lookupLimit) allow(r *http.Request, now time.Time) bool {
	client, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		client = r.RemoteAddr
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.byClient == nil {
		l.byClient = map[string]*lookupBucket{}
	}
	b := l.byClient[client]
	if b == nil {
		if len(l.byClient) >= maxLookupClients {
			full := time.Duration(legacyLookupBurst * float64(time.Second) / legacyLookupRate)
			for k, c := range l.byClient {
				if now.Sub(c.last) >= full {
					delete(l.byClient, k)
				}
			}
			if len(l.byClient) >= maxLookupClients {
				clear(l.byClient)
			}
		}
		b = &lookupBucket{}
		l.byClient[client] = b
	}
	if !b.take(now, legacyLookupRate, legacyLookupBurst) {
		return false
	}
	if !l.all.take(now, legacyLookupTotal, 2*legacyLookupTotal) {
		b.tokens++ // not this client's doing
		return false
	}
	return true
}
