package platform

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/emiago/sipgo/sip"
)

// maxSIPLogValue bounds a string attribute of a line sipgo logs (bytes, quoted beyond it).
const maxSIPLogValue = 128

// sipLogHandler is the handler of sipgo's own log (warnings and errors): a peer can make sipgo
// log at will (every SIP TCP connection that sends something unparsable ends with "failed to
// parse" and the bytes it sent), so each message is logged at most once per logEvery, with
// the number left unlogged since, and string values are cut to maxSIPLogValue bytes, quoted.
// A "failed to parse" counts as malformed.
type sipLogHandler struct {
	h   slog.Handler
	srv *Server
}

func (f sipLogHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelWarn && f.h.Enabled(ctx, l)
}

func (f sipLogHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == "failed to parse" {
		f.srv.Counters.Malformed.Add(1)
	}
	n, ok := f.srv.limited.allow("sip: " + r.Message)
	if !ok {
		return nil
	}
	out := slog.NewRecord(r.Time, r.Level, r.Message, r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(boundAttr(a))
		return true
	})
	out.AddAttrs(slog.Uint64("unlogged_since_last", n))
	return f.h.Handle(ctx, out)
}

func (f sipLogHandler) WithAttrs(a []slog.Attr) slog.Handler {
	b := make([]slog.Attr, len(a))
	for i := range a {
		b[i] = boundAttr(a[i])
	}
	return sipLogHandler{f.h.WithAttrs(b), f.srv}
}

func (f sipLogHandler) WithGroup(n string) slog.Handler {
	return sipLogHandler{f.h.WithGroup(n), f.srv}
}

// boundAttr cuts a long string (or error, or Stringer) value to maxSIPLogValue bytes, quoted,
// with its full length.
func boundAttr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	var s string
	switch v.Kind() {
	case slog.KindString:
		s = v.String()
	case slog.KindAny:
		switch x := v.Any().(type) {
		case error:
			s = x.Error()
		case fmt.Stringer:
			s = x.String()
		default:
			return a
		}
	default:
		return a
	}
	if len(s) <= maxSIPLogValue {
		return slog.String(a.Key, s)
	}
	return slog.String(a.Key, fmt.Sprintf("%q… (%d bytes)", s[:maxSIPLogValue], len(s)))
}

// onStrayResponse drops a SIP response that answers no transaction of the platform (a late
// retransmission, or anyone's datagram): counted (stray_responses), logged once a minute
// (sipgo would log each at info level).
func (s *Server) onStrayResponse(r *sip.Response) {
	s.Counters.StrayResponses.Add(1)
	s.limited.log("stray_response", "SIP responses matching no transaction dropped", "status", r.StatusCode, "from", r.Source())
}
