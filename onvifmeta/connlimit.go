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

// connLimit bounds the connections open at once (an attacker opening thousands would run the
// process out of file descriptors before authenticating: RTSP asks for credentials only in
// the first request). An accept error other than the listener's closing (EMFILE) is retried
// after a pause (5 ms, doubling up to 1 s): gortsplib would stop serving on it.
type connLimit struct {
	net.Listener
	max     int
	refused *atomic.Uint64

	mu     sync.Mutex
	open   int
	closed chan struct{}
	once   sync.Once
}

func newConnLimit(ln net.Listener, max int, refused *atomic.Uint64) *connLimit {
	return &connLimit{Listener: ln, max: max, refused: refused, closed: make(chan struct{})}
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
		l.mu.Lock()
		ok := l.open < l.max
		if ok {
			l.open++
		}
		l.mu.Unlock()
		if !ok {
			l.refused.Add(1)
			_ = c.Close()
			continue
		}
		return &limitedConn{Conn: c, l: l}, nil
	}
}

func (l *connLimit) Close() error {
	l.once.Do(func() { close(l.closed) })
	return l.Listener.Close()
}

// limitedConn gives its place back on its first Close.
type limitedConn struct {
	net.Conn
	l    *connLimit
	once sync.Once
}

func (c *limitedConn) Close() error {
	c.once.Do(func() {
		c.l.mu.Lock()
		c.l.open--
		c.l.mu.Unlock()
	})
	return c.Conn.Close()
}
