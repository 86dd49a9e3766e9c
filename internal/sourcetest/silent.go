package sourcetest

import (
	"net"
	"os"
	"sync"
	"sync/atomic"
	"testing"
)

// SilentTCP accepts connections on 127.0.0.1 and never answers: the peer that parks a reader
// without a timeout forever. Connections stay open until the test ends.
type SilentTCP struct {
	ln       net.Listener
	accepted atomic.Int64
	open     atomic.Int64
	peak     atomic.Int64
	mu       sync.Mutex
	conns    []net.Conn
}

// NewSilentTCP starts a SilentTCP, closed at the end of the test.
func NewSilentTCP(t testing.TB) *SilentTCP {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &SilentTCP{ln: ln}
	go p.serve()
	t.Cleanup(func() {
		ln.Close()
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, c := range p.conns {
			c.Close()
		}
	})
	return p
}

func (p *SilentTCP) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.accepted.Add(1)
		if n := p.open.Add(1); n > p.peak.Load() {
			p.peak.Store(n)
		}
		p.mu.Lock()
		p.conns = append(p.conns, c)
		p.mu.Unlock()
		go func() { // count the client's close
			var b [512]byte
			for {
				if _, err := c.Read(b[:]); err != nil {
					p.open.Add(-1)
					return
				}
			}
		}()
	}
}

// Addr is the listen address, host:port.
func (p *SilentTCP) Addr() string { return p.ln.Addr().String() }

// Accepted counts the connections so far.
func (p *SilentTCP) Accepted() int { return int(p.accepted.Load()) }

// Peak is the most connections open at once.
func (p *SilentTCP) Peak() int { return int(p.peak.Load()) }

// OpenFDs counts the process's open file descriptors (Linux /proc/self/fd).
func OpenFDs(t testing.TB) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd:", err)
	}
	return len(ents)
}
