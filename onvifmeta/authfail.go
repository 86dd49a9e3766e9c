package onvifmeta

import (
	"strings"
	"sync"
	"time"

	"github.com/bluenviron/gortsplib/v5"
	"github.com/bluenviron/gortsplib/v5/pkg/base"
)

// authFailDelay holds the answer to wrong credentials (RFC 2617 digest or basic): one
// connection tries one password at a time and gortsplib closes it after a wrong one, so with
// at most maxConns connections a guesser tries at most maxConns passwords a second (without
// it: 10,500 a second from one client over fresh connections).
const authFailDelay = time.Second

// authLogEvery is the least time between two log lines about refused credentials: a guesser
// cannot fill the log (the others are counted in the next line's "since").
const authLogEvery = 10 * time.Second

// AuthReason says why a request's credentials were refused (RFC 2326 §D.2, RFC 2617): the
// values of vinfer_rtsp_auth_failures_total's reason label.
type AuthReason int

const (
	// AuthMissing: no Authorization header; answered 401 with the challenge at once (every
	// client's first DESCRIBE of a protected path counts once here).
	AuthMissing AuthReason = iota
	// AuthWrong: Basic or Digest credentials that match no user; answered after authFailDelay.
	AuthWrong
	// AuthMethod: an Authorization scheme the server does not offer (neither Basic nor
	// Digest); answered after authFailDelay.
	AuthMethod
	authReasons
)

// String is the reason's label value: missing, wrong, method.
func (r AuthReason) String() string {
	switch r {
	case AuthMissing:
		return "missing"
	case AuthWrong:
		return "wrong"
	case AuthMethod:
		return "method"
	}
	return "unknown"
}

// AuthFailures are refused requests by reason (index AuthReason).
type AuthFailures [authReasons]uint64

// authReason classifies a refused request by its Authorization header.
func authReason(req *base.Request) AuthReason {
	v, ok := req.Header["Authorization"]
	if !ok || len(v) == 0 {
		return AuthMissing
	}
	scheme, _, _ := strings.Cut(strings.TrimSpace(v[0]), " ")
	if strings.EqualFold(scheme, "Basic") || strings.EqualFold(scheme, "Digest") {
		return AuthWrong
	}
	return AuthMethod
}

// authLog rate-limits the log lines about refused credentials.
type authLog struct {
	mu         sync.Mutex
	last       time.Time
	suppressed uint64
}

// authFailed counts a refused request by reason; with credentials given (wrong or method) it
// logs the peer (at most one line per authLogEvery) and waits authFailDelay, or until Close.
func (s *Server) authFailed(c *gortsplib.ServerConn, req *base.Request) {
	r := authReason(req)
	s.authFails[r].Add(1)
	if r == AuthMissing {
		return
	}
	s.authLog.mu.Lock()
	now := time.Now()
	logIt := now.Sub(s.authLog.last) >= authLogEvery
	var since uint64
	if logIt {
		s.authLog.last, since, s.authLog.suppressed = now, s.authLog.suppressed, 0
	} else {
		s.authLog.suppressed++
	}
	s.authLog.mu.Unlock()
	if logIt {
		s.log.Warn("rtsp credentials refused", "peer", c.NetConn().RemoteAddr().String(), "reason", r.String(),
			"unlogged_since", since)
	}
	t := time.NewTimer(authFailDelay)
	defer t.Stop()
	select {
	case <-t.C:
	case <-s.stop:
	}
}
