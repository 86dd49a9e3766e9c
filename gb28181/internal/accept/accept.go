// Package accept is the accept loop the GB28181 SIP TCP listeners share.
package accept

import (
	"errors"
	"net"
	"time"
)

// Retry returns ln's next connection. An accept error other than the listener's closing (out
// of descriptors: EMFILE, ENFILE; an aborted connection) goes to onErr (if not nil) and is
// retried after a pause, 5 ms doubling up to 1 s, for sipgo would stop serving TCP on it.
// Errors: net.ErrClosed when ln is closed or done closes during a pause.
func Retry(ln net.Listener, done <-chan struct{}, onErr func(error)) (net.Conn, error) {
	var pause time.Duration
	for {
		c, err := ln.Accept()
		if err == nil {
			return c, nil
		}
		if errors.Is(err, net.ErrClosed) {
			return nil, err
		}
		if onErr != nil {
			onErr(err)
		}
		pause = min(max(2*pause, 5*time.Millisecond), time.Second)
		t := time.NewTimer(pause)
		select {
		case <-t.C:
		case <-done:
			t.Stop()
			return nil, net.ErrClosed
		}
	}
}
