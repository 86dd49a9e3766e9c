package api

import (
	"errors"
	"net"
	"net/http"
	"time"
)

// ErrInsecure: listening beyond loopback without a token.
var ErrInsecure = errors.New("refusing to serve beyond loopback without a token")

// Loopback reports whether a listen address only accepts local connections.
func Loopback(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return host == "localhost" || (ip != nil && ip.IsLoopback())
}

// deadlines bound each request: its body must arrive within BodyTimeout (a client trickling
// bytes is cut off), its response be written within WriteTimeout. Event streams set their own
// per-write deadlines (sse, websocket).
func (s *Server) deadlines(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		now := time.Now()
		if r.ContentLength != 0 && r.Body != http.NoBody {
			_ = rc.SetReadDeadline(now.Add(s.BodyTimeout))
			if !takesBody(r) {
				// Nothing reads this body: close the connection after the answer rather than
				// drain the body first (event streams clear the read deadline, and a client
				// that stops sending would hold the drain for ever).
				w.Header().Set("Connection", "close")
			}
		}
		_ = rc.SetWriteDeadline(now.Add(s.WriteTimeout))
		h.ServeHTTP(w, r)
	})
}

// takesBody reports the requests whose handlers read a body.
func takesBody(r *http.Request) bool {
	return r.Method == http.MethodPost || r.Method == http.MethodPut
}

// streamDeadlines prepares a long-lived response (SSE, WebSocket): no read deadline (the
// connection is watched for its close) and no whole-response write deadline; writes then set
// their own.
func streamDeadlines(w http.ResponseWriter) {
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Time{})
	_ = rc.SetWriteDeadline(time.Time{})
}

// audit logs a state-changing call: who (the label of the token shown, "unauthenticated"
// for none or a wrong one, "anonymous" when the server has no tokens), from where, what
// (method, route, status); never the body or the secret.
func (s *Server) audit(r *http.Request, status int, label string) {
	who := "anonymous"
	switch {
	case label != "":
		who = label
	case len(s.creds) > 0:
		who = "unauthenticated"
	}
	remote := r.RemoteAddr
	if h, _, err := net.SplitHostPort(remote); err == nil {
		remote = h
	}
	s.Log.Info("api: audit", "who", who, "remote", remote, "method", r.Method, "path", r.URL.Path, "status", status)
}
