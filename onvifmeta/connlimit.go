package onvifmeta

import (
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// maxConns is the RTSP connections open at once for maxClients playing sessions: each session
// holds one (RTP over TCP) and a client may open another for DESCRIBE, plus a few for
// OPTIONS probes. Connections beyond it are closed on accept, counted (Counters.ConnsRefused).
func maxConns(maxClients int) int { return 2*maxClients + 8 }

// maxConnsPerAddr is the connections one remote address may hold at once: every session a
// client may play (one NVR taking all of them) plus a few probes, so that one address alone
// cannot take every place from the others.
func maxConnsPerAddr(maxClients int) int { return maxClients + 4 }

// connLimit bounds the connections open at once (an attacker opening thousands would run the
// process out of file descriptors before authenticating: RTSP asks for credentials only in
// the first request). An accept error other than the listener's closing (EMFILE) is retried
// after a pause (5 ms, doubling up to 1 s): gortsplib would stop serving on it.
type connLimit struct {
	net.Listener
	max, perAddr int
	refused      *atomic.Uint64

	mu     sync.Mutex
	open   int
	byAddr map[string]int // open connections per remote IP address; at most max entries
	closed chan struct{}
	once   sync.Once
}

func newConnLimit(ln net.Listener, max, perAddr int, refused *atomic.Uint64) *connLimit {
	return &connLimit{Listener: ln, max: max, perAddr: perAddr, refused: refused,
		byAddr: map[string]int{}, closed: make(chan struct{})}
}

// remoteIP is c's remote IP address as text (the whole address where it has no port).
func remoteIP(c net.Conn) string {
	a := c.RemoteAddr().String()
	if host, _, err := net.SplitHostPort(a); err == nil {
		return host
	}
	return a
}

func (l *connLimit) Accept() (net.Conn, error) {
	var pause time.Duration
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil, err
			}
			pause = min(max(2*pause, 5*time.Millisecond), time.Second)
			t := time.NewTimer(pause)
			select {
			case <-t.C:
			case <-l.closed:
				t.Stop()
				return nil, net.ErrClosed
			}
			continue
		}
		pause = 0
		ip := remoteIP(c)
		l.mu.Lock()
		ok := l.open < l.max && l.byAddr[ip] < l.perAddr
		if ok {
			l.open++
			l.byAddr[ip]++
		}
		l.mu.Unlock()
		if !ok {
			l.refused.Add(1)
			_ = c.Close()
			continue
		}
		lc := &limitedConn{Conn: c, l: l, ip: ip, accepted: time.Now()}
		_ = lc.SetReadDeadline(time.Time{})
		return lc, nil
	}
}

func (l *connLimit) Close() error {
	l.once.Do(func() { close(l.closed) })
	return l.Listener.Close()
}

// firstRequestTimeout bounds the wait for a connection's first bytes: gortsplib waits its
// idle timeout (60 s) before each request, so silent connections held the places of
// clients for a minute each.
const firstRequestTimeout = 10 * time.Second

// limitedConn gives its place back on its first Close; until it has read something, no read
// deadline is later than firstRequestTimeout after it was accepted.
type limitedConn struct {
	net.Conn
	l        *connLimit
	ip       string
	once     sync.Once
	accepted time.Time
	spoke    atomic.Bool
}

func (c *limitedConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 {
		c.spoke.Store(true)
	}
	return n, err
}

func (c *limitedConn) SetReadDeadline(t time.Time) error {
	if !c.spoke.Load() {
		if first := c.accepted.Add(firstRequestTimeout); t.IsZero() || t.After(first) {
			t = first
		}
	}
	return c.Conn.SetReadDeadline(t)
}

func (c *limitedConn) SetDeadline(t time.Time) error {
	if err := c.Conn.SetWriteDeadline(t); err != nil {
		return err
	}
	return c.SetReadDeadline(t)
}

func (c *limitedConn) Close() error {
	c.once.Do(func() {
		c.l.mu.Lock()
		c.l.open--
		if c.l.byAddr[c.ip]--; c.l.byAddr[c.ip] <= 0 {
			delete(c.l.byAddr, c.ip)
		}
		c.l.mu.Unlock()
	})
	return c.Conn.Close()
}
