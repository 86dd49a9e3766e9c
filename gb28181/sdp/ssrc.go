package sdp

import (
	"errors"
	"fmt"
	"strconv"
	"sync"
)

// ErrSSRCExhausted is returned when all 9999 stream numbers of a kind are in use.
var ErrSSRCExhausted = errors.New("sdp: every SSRC of the domain is in use")

// SSRC is a GB28181 SSRC (GB/T 28181-2016 Annex F, "y=" field): ten decimal digits, the first
// 0 for live and 1 for playback, the next five the 4th–8th digits of the 20-digit SIP domain
// ID (digits 4–8 of the 10-digit domain, e.g. 3402000000 → 20000), the last four a stream
// number within the domain.
type SSRC uint32

// String is the 10-digit y= form.
func (s SSRC) String() string { return fmt.Sprintf("%010d", uint32(s)) }

// SSRCAllocator hands out live-stream SSRCs of one domain, each once until released.
type SSRCAllocator struct {
	// Domain is the 10-digit SIP domain (config.GB28181.Domain).
	Domain string

	mu     sync.Mutex
	inUse  map[uint32]bool
	next   uint32
	prefix uint32
}

// Init checks Domain.
func (a *SSRCAllocator) Init() error {
	if len(a.Domain) != 10 {
		return fmt.Errorf("sdp: domain %q must be 10 digits", a.Domain)
	}
	d, err := strconv.ParseUint(a.Domain[3:8], 10, 32)
	if err != nil {
		return fmt.Errorf("sdp: domain %q must be 10 digits", a.Domain)
	}
	a.prefix = uint32(d) * 10000 // live: first digit 0
	a.inUse = map[uint32]bool{}
	return nil
}

// Live returns an unused live SSRC.
func (a *SSRCAllocator) Live() (SSRC, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for range 9999 {
		a.next = a.next%9999 + 1 // 1..9999
		if !a.inUse[a.next] {
			a.inUse[a.next] = true
			return SSRC(a.prefix + a.next), nil
		}
	}
	return 0, ErrSSRCExhausted
}

// Release returns an SSRC to the pool.
func (a *SSRCAllocator) Release(s SSRC) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.inUse, uint32(s)%10000)
}
