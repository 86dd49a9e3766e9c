package platform

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/vinfer/vinfer/gb28181/internal/accept"
)

// maxSIPHeader bounds a SIP message's header on TCP; a longer one closes the connection.
const maxSIPHeader = 64 << 10

// tcpListener bounds SIP over TCP (RFC 3261 §18.3): connections beyond maxConns, or beyond
// maxPerHost from one IP address, are closed on accept; an accepted connection is closed when
// it receives nothing for idle, or a message begun on it is not complete within msgTimeout.
// Refusals and closings are counted, and logged at most once a minute.
type tcpListener struct {
	net.Listener
	srv                  *Server
	maxConns, maxPerHost int
	idle, msgTimeout     time.Duration
	done                 <-chan struct{} // closed when the server stops

	mu     sync.Mutex
	total  int
	byHost map[string]int
}

// Accept returns the next connection within the limits. An accept error other than the
// listener's closing (out of descriptors: EMFILE, ENFILE; an aborted connection) is counted
// and retried after a pause (5 ms, doubling up to 1 s): sipgo would stop serving TCP on it.
func (l *tcpListener) Accept() (net.Conn, error) {
	for {
		c, err := accept.Retry(l.Listener, l.done, func(err error) {
			l.srv.Counters.TCPAcceptErrors.Add(1)
			l.srv.limited.log("tcp_accept_error", "SIP TCP accept failed, retrying", "err", err)
		})
		if err != nil {
			return nil, err
		}
		host, _, _ := net.SplitHostPort(c.RemoteAddr().String())
		l.mu.Lock()
		ok := l.total < l.maxConns && l.byHost[host] < l.maxPerHost
		if ok {
			l.total++
			l.byHost[host]++
		}
		total, here := l.total, l.byHost[host]
		l.mu.Unlock()
		if !ok {
			l.srv.Counters.TCPRefused.Add(1) // before the peer can see the close
			c.Close()
			l.srv.limited.log("tcp_refused", "SIP TCP connection refused: max_tcp_conns or max_tcp_conns_per_host reached",
				"from", c.RemoteAddr().String(), "open", total, "open_from_host", here)
			continue
		}
		return &tcpConn{Conn: c, l: l, host: host, last: time.Now()}, nil
	}
}

func (l *tcpListener) release(host string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.total--
	if l.byHost[host]--; l.byHost[host] <= 0 {
		delete(l.byHost, host)
	}
}

// tcpConn is an accepted connection with its deadlines. It follows the SIP framing (CRLF
// keepalives between messages, a header up to its blank line, Content-Length bytes of body)
// only to know whether a message is under way and since when. Only sipgo's reading goroutine
// calls Read.
type tcpConn struct {
	net.Conn
	l      *tcpListener
	host   string
	closer sync.Once

	last    time.Time    // the last read that returned data
	started time.Time    // the first byte of the message under way; zero between messages
	head    bytes.Buffer // the header read so far
	body    int          // body bytes still to come, once the header is complete
}

var errHeaderTooLarge = errors.New("SIP header over 64 KiB")

// Read reads with a deadline: idle after the last data, or msgTimeout after the first byte of
// an incomplete message. A connection past it is closed and reads io.EOF (sipgo logs other
// errors at ERROR, once per connection).
func (c *tcpConn) Read(b []byte) (int, error) {
	deadline := c.last.Add(c.l.idle)
	if !c.started.IsZero() {
		if m := c.started.Add(c.l.msgTimeout); m.Before(deadline) {
			deadline = m
		}
	}
	c.Conn.SetReadDeadline(deadline)
	n, err := c.Conn.Read(b)
	if n > 0 {
		c.last = time.Now()
		if ferr := c.frame(b[:n], c.last); ferr != nil {
			err = ferr
		}
	}
	if errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, errHeaderTooLarge) {
		c.l.srv.Counters.TCPTimeouts.Add(1)
		why := "idle for tcp_idle_timeout"
		if !c.started.IsZero() {
			why = "message not complete within tcp_message_timeout"
		}
		if errors.Is(err, errHeaderTooLarge) {
			why = err.Error()
		}
		c.l.srv.limited.log("tcp_timeout", "SIP TCP connection closed", "from", c.RemoteAddr().String(), "why", why)
		c.Close()
		return 0, io.EOF
	}
	return n, err
}

// frame follows the message boundaries through p.
func (c *tcpConn) frame(p []byte, now time.Time) error {
	for len(p) > 0 {
		switch {
		case c.body > 0: // in a body
			k := min(c.body, len(p))
			c.body -= k
			p = p[k:]
			if c.body == 0 {
				c.started = time.Time{}
			}
		case c.started.IsZero() && (p[0] == '\r' || p[0] == '\n'): // keepalive between messages
			p = p[1:]
		default: // in a header
			if c.started.IsZero() {
				c.started = now
			}
			i := bytes.IndexByte(p, '\n')
			if i < 0 {
				c.head.Write(p)
				p = nil
			} else {
				c.head.Write(p[:i+1])
				p = p[i+1:]
				if h := c.head.Bytes(); bytes.HasSuffix(h, []byte("\n\r\n")) || bytes.HasSuffix(h, []byte("\n\n")) {
					c.body = contentLength(h)
					c.head.Reset()
					if c.body == 0 {
						c.started = time.Time{}
					}
				}
			}
			if c.head.Len() > maxSIPHeader {
				return errHeaderTooLarge
			}
		}
	}
	return nil
}

// contentLength reads Content-Length (or its compact form l) from a header; 0 when absent.
func contentLength(h []byte) int {
	for line := range bytes.Lines(h) {
		k, v, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			continue
		}
		k = bytes.TrimSpace(k)
		if bytes.EqualFold(k, []byte("Content-Length")) || bytes.Equal(k, []byte("l")) || bytes.Equal(k, []byte("L")) {
			n, err := strconv.Atoi(string(bytes.TrimSpace(v)))
			if err == nil && n > 0 {
				return n
			}
		}
	}
	return 0
}

// Close closes the connection and frees its place.
func (c *tcpConn) Close() error {
	err := c.Conn.Close()
	c.closer.Do(func() { c.l.release(c.host) })
	return err
}
