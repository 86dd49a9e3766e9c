package onvifmeta

import (
	"time"

	"github.com/bluenviron/gortsplib/v5"
)

// authFailDelay holds the answer to wrong credentials (RFC 2617 digest or basic): one
// connection tries one password at a time and gortsplib closes it after a wrong one, so with
// at most maxConns connections a guesser tries at most maxConns passwords a second (without
// it: 10,500 a second from one client over fresh connections).
const authFailDelay = time.Second

// authFailed counts wrong credentials (Counters.AuthFailed) and waits authFailDelay, or until
// Close.
func (s *Server) authFailed(_ *gortsplib.ServerConn) {
	s.authFails.Add(1)
	t := time.NewTimer(authFailDelay)
	defer t.Stop()
	select {
	case <-t.C:
	case <-s.stop:
	}
}
