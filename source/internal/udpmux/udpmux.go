// Package udpmux lets several RTP streams share one UDP port, told apart by SSRC (RFC 3550
// §8): a port's socket is opened by its first subscriber, read by one goroutine that routes each
// datagram to the subscriber of its SSRC, and closed with its last subscriber. RTCP sender
// reports are routed by their sender SSRC, also when RTCP is multiplexed on the RTP port
// (RFC 5761 §4). Datagram buffers are recycled per subscriber: no allocation in steady state.
package udpmux

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// QueueLen is the number of datagrams a subscriber may have in flight; more are dropped and
// counted as overflow (a burst of a large key frame is a few hundred packets).
const QueueLen = 1024

// ReadBufferSize is the socket receive buffer asked for; Linux caps it at net.core.rmem_max.
const ReadBufferSize = 4 << 20

// maxDatagram is the largest UDP payload.
const maxDatagram = 65535

// Datagram is one received UDP payload. It belongs to the subscriber until Release.
type Datagram struct {
	buf []byte
	// From is the sender's address.
	From netip.AddrPort
	// At is the arrival time.
	At time.Time
	// RTCP reports an RTCP packet (payload type 200-204 in the second byte).
	RTCP bool
	// Unmatched reports a packet of an SSRC that no subscriber of the port asked for, handed
	// to the port's first subscriber so that it is counted and logged, not lost silently.
	Unmatched bool
}

// Bytes returns the payload.
func (d *Datagram) Bytes() []byte { return d.buf }

// SetBytes copies b into d, reusing its buffer.
func (d *Datagram) SetBytes(b []byte) { d.buf = append(d.buf[:0], b...) }

// Pool is a fixed set of reusable datagrams, for readers other than a Sub (RFC 4571 TCP).
type Pool struct{ free chan *Datagram }

// NewPool returns a pool of n datagrams.
func NewPool(n int) *Pool {
	p := &Pool{free: make(chan *Datagram, n)}
	for range n {
		p.free <- &Datagram{}
	}
	return p
}

// Get returns a free datagram, or nil when all are in use.
func (p *Pool) Get() *Datagram {
	select {
	case d := <-p.free:
		return d
	default:
		return nil
	}
}

// Wait returns a free datagram, waiting for one; nil when done is closed first.
func (p *Pool) Wait(done <-chan struct{}) *Datagram {
	select {
	case d := <-p.free:
		return d
	case <-done:
		return nil
	}
}

// Put recycles d.
func (p *Pool) Put(d *Datagram) {
	d.buf = d.buf[:0]
	select {
	case p.free <- d:
	default:
	}
}

// Sub receives the datagrams of one SSRC (or of every SSRC nobody else subscribed to).
type Sub struct {
	// C delivers datagrams; hand each back with Release.
	C <-chan *Datagram

	c        chan *Datagram
	pool     *Pool
	port     *port
	ssrc     uint32
	any      bool
	owner    string
	rtcp     bool
	overflow atomic.Uint64
	garbage  atomic.Uint64
	closed   sync.Once
}

// Release recycles d.
func (s *Sub) Release(d *Datagram) { s.pool.Put(d) }

// Overflow returns the datagrams dropped because the subscriber was QueueLen behind.
func (s *Sub) Overflow() uint64 { return s.overflow.Load() }

// Garbage returns the datagrams of the port that were neither RTP nor RTCP. They are
// attributed to the catch-all subscriber, else to the port's first subscriber.
func (s *Sub) Garbage() uint64 { return s.garbage.Load() }

// Addr returns the local address of the port.
func (s *Sub) Addr() netip.AddrPort { return s.port.conn.LocalAddr().(*net.UDPAddr).AddrPort() }

// Close ends the subscription; the port closes with its last subscriber. Safe to call twice.
func (s *Sub) Close() {
	s.closed.Do(func() { s.port.remove(s) })
}

type port struct {
	key  string
	conn *net.UDPConn
	mu   sync.RWMutex
	subs map[uint32]*Sub
	any  *Sub
	all  []*Sub // in subscription order
}

var (
	portsMu sync.Mutex
	ports   = map[string]*port{}
)

// ErrTaken is returned when the SSRC (or the catch-all) of a port already has a subscriber.
var ErrTaken = errors.New("udpmux: port taken")

// Subscribe receives the RTP and RTCP datagrams of SSRC ssrc arriving on UDP address addr
// (host:port, e.g. ":5004"); ssrc 0 receives those of every SSRC no other subscriber of the
// port asked for. It returns an error when the port cannot be opened or when the SSRC (or the
// catch-all) is taken.
func Subscribe(addr string, ssrc uint32) (*Sub, error) { return SubscribeAs(addr, ssrc, "", false) }

// SubscribeAs is Subscribe naming the subscriber (owner: "stream cam1") and what it receives
// there (rtcp: the port is its RTCP port), so that a clash names who holds the port and why.
func SubscribeAs(addr string, ssrc uint32, owner string, rtcp bool) (*Sub, error) {
	ua, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return nil, fmt.Errorf("udpmux: listen address %q: %w", addr, err)
	}
	portsMu.Lock()
	defer portsMu.Unlock()
	key := ua.String()
	p := ports[key]
	if p == nil {
		conn, err := net.ListenUDP("udp", ua)
		if err != nil {
			return nil, fmt.Errorf("udpmux: %w", err)
		}
		_ = conn.SetReadBuffer(ReadBufferSize)
		p = &port{key: key, conn: conn, subs: map[uint32]*Sub{}}
		if ua.Port == 0 { // an ephemeral port is never shared
			key = conn.LocalAddr().String()
			p.key = key
		}
		ports[key] = p
		go p.run()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if (ssrc == 0 && p.any != nil) || (ssrc != 0 && p.subs[ssrc] != nil) {
		if len(p.all) == 0 {
			p.close()
		}
		holder := p.any
		if ssrc != 0 {
			holder = p.subs[ssrc]
		}
		return nil, taken(addr, ssrc, holder)
	}
	c := make(chan *Datagram, QueueLen)
	s := &Sub{C: c, c: c, pool: NewPool(QueueLen), port: p, ssrc: ssrc, any: ssrc == 0, owner: owner, rtcp: rtcp}
	if ssrc == 0 {
		p.any = s
	} else {
		p.subs[ssrc] = s
	}
	p.all = append(p.all, s)
	return s, nil
}

// taken describes a clash with holder: who holds the port, for what, and the way out.
func taken(addr string, ssrc uint32, holder *Sub) error {
	what := "every SSRC"
	if ssrc != 0 {
		what = fmt.Sprintf("SSRC %d", ssrc)
	}
	who := holder.owner
	if who == "" {
		who = "another source"
	}
	if holder.rtcp {
		return fmt.Errorf("%w: %s (%s) is the RTCP port of %s (an RTP or GB28181 stream also takes the port after its own, for RTCP): give this stream a port two further on", ErrTaken, addr, what, who)
	}
	return fmt.Errorf("%w: %s (%s) is taken by %s: streams share a port only with an ssrc= each", ErrTaken, addr, what, who)
}

func (p *port) remove(s *Sub) {
	portsMu.Lock()
	defer portsMu.Unlock()
	p.mu.Lock()
	defer p.mu.Unlock()
	if s.any {
		p.any = nil
	} else {
		delete(p.subs, s.ssrc)
	}
	for i, o := range p.all {
		if o == s {
			p.all = append(p.all[:i], p.all[i+1:]...)
			break
		}
	}
	if len(p.all) == 0 {
		p.close()
	}
}

// close is called with portsMu held.
func (p *port) close() {
	delete(ports, p.key)
	p.conn.Close()
}

func (p *port) run() {
	buf := make([]byte, maxDatagram)
	for {
		n, from, err := p.conn.ReadFromUDPAddrPort(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue // e.g. ICMP port unreachable reflected on Linux
		}
		p.route(buf[:n], from, time.Now())
	}
}

func (p *port) route(b []byte, from netip.AddrPort, now time.Time) {
	ssrc, rtcp, ok := classify(b)
	unmatched := false
	p.mu.RLock()
	defer p.mu.RUnlock()
	var s *Sub
	switch {
	case !ok:
		s = p.any
		if s == nil && len(p.all) > 0 {
			s = p.all[0]
		}
		if s != nil {
			s.garbage.Add(1)
		}
		return
	case p.subs[ssrc] != nil:
		s = p.subs[ssrc]
	case p.any != nil:
		s = p.any
	case len(p.all) > 0:
		s, unmatched = p.all[0], true
	default:
		return
	}
	d := s.pool.Get()
	if d == nil {
		s.overflow.Add(1)
		return
	}
	d.SetBytes(b)
	d.From, d.At, d.RTCP, d.Unmatched = from, now, rtcp, unmatched
	select {
	case s.c <- d:
	default:
		s.overflow.Add(1)
		s.pool.Put(d)
	}
}

// IsRTCP reports whether b looks like an RTCP packet rather than RTP (RFC 5761 §4: payload
// types 200-204 in the second byte), for transports that carry both on one channel.
func IsRTCP(b []byte) bool { return len(b) >= 2 && b[1] >= 200 && b[1] <= 204 }

// classify returns the SSRC of an RTP packet, or the sender SSRC of an RTCP packet (RFC 3550
// §6.4.1), and ok false for anything that is neither (version other than 2, too short).
func classify(b []byte) (ssrc uint32, rtcp, ok bool) {
	if len(b) < 8 || b[0]>>6 != 2 {
		return 0, false, false
	}
	if IsRTCP(b) { // SR, RR, SDES, BYE, APP
		return binary.BigEndian.Uint32(b[4:8]), true, true
	}
	if len(b) < 12 {
		return 0, false, false
	}
	return binary.BigEndian.Uint32(b[8:12]), false, true
}
