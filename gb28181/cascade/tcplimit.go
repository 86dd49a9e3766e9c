package cascade

import (
	"net"
	"sync"
	"time"

	"github.com/vinfer/vinfer/gb28181/internal/accept"
)

// Limits of the SIP TCP listener an upper platform may connect to (RFC 3261 §18.3).
const (
	maxTCPConns = 8               // connections open at once from the upper platform's address
	tcpIdle     = 5 * time.Minute // an accepted connection receiving nothing this long is closed
)

// tcpListener admits only the upper platform: a connection from another address is closed on
// accept, as is one beyond maxTCPConns from its address; an admitted connection is closed when
// it receives nothing for tcpIdle. Refusals are counted (Counters.TCPRefused) and logged. An
// accept error other than the listener's closing (out of descriptors: EMFILE) is retried after
// a pause (5 ms, doubling up to 1 s): sipgo would stop serving TCP on it.
type tcpListener struct {
	net.Listener
	u    *Upstream
	done <-chan struct{} // closed when the upstream stops

	mu     sync.Mutex
	open   int
	logged time.Time // the last refusal logged: at most one a minute
}

func (l *tcpListener) Accept() (net.Conn, error) {
	for {
		c, err := accept.Retry(l.Listener, l.done, nil)
		if err != nil {
			return nil, err
		}
		host, _, _ := net.SplitHostPort(c.RemoteAddr().String())
		ip := net.ParseIP(host)
		peer := ip != nil && ip.Equal(l.u.peerIP)
		l.mu.Lock()
		ok := peer && l.open < maxTCPConns
		if ok {
			l.open++
		}
		now := time.Now()
		logIt := !ok && now.Sub(l.logged) >= time.Minute
		if logIt {
			l.logged = now
		}
		l.mu.Unlock()
		if !ok {
			l.u.Counters.TCPRefused.Add(1) // before the peer can see the close
			c.Close()
			if !logIt {
				continue
			}
			why := "not the upper platform's address"
			if peer {
				why = "too many connections from the upper platform"
			}
			l.u.log.Warn("GB28181 upstream: SIP TCP connection refused (logged at most once a minute)", "from", c.RemoteAddr().String(), "why", why,
				"refused", l.u.Counters.TCPRefused.Load())
			continue
		}
		return &tcpConn{Conn: c, l: l}, nil
	}
}

// tcpConn is an admitted connection whose reads time out after tcpIdle without data.
type tcpConn struct {
	net.Conn
	l    *tcpListener
	once sync.Once
}

func (c *tcpConn) Read(b []byte) (int, error) {
	c.Conn.SetReadDeadline(time.Now().Add(tcpIdle))
	return c.Conn.Read(b)
}

func (c *tcpConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.l.mu.Lock()
		c.l.open--
		c.l.mu.Unlock()
	})
	return err
}
