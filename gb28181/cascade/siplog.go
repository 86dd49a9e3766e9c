package cascade

import (
	"context"
	"log/slog"
	"time"

	"github.com/emiago/sipgo/sip"
)

// debugHandler writes sipgo's own log lines at Debug level: anyone can make sipgo warn (a
// datagram that does not parse), so its lines never reach the default Info log.
type debugHandler struct{ h slog.Handler }

func (d debugHandler) Enabled(ctx context.Context, _ slog.Level) bool {
	return d.h.Enabled(ctx, slog.LevelDebug)
}

func (d debugHandler) Handle(ctx context.Context, r slog.Record) error {
	r.Level = slog.LevelDebug
	return d.h.Handle(ctx, r)
}

func (d debugHandler) WithAttrs(a []slog.Attr) slog.Handler { return debugHandler{d.h.WithAttrs(a)} }
func (d debugHandler) WithGroup(n string) slog.Handler      { return debugHandler{d.h.WithGroup(n)} }

// onStrayResponse drops a SIP response that matches no transaction (a retransmission, or one
// forged from anywhere: a response carries no proof of its origin), counted, logged at most
// once a minute (sipgo logs each at Info on the default logger).
func (u *Upstream) onStrayResponse(r *sip.Response) {
	n := u.Counters.StrayResponses.Add(1)
	now := time.Now().UnixNano()
	last := u.strayLogged.Load()
	if now-last < int64(time.Minute) || !u.strayLogged.CompareAndSwap(last, now) {
		return
	}
	u.log.Warn("GB28181 upstream: SIP responses matching no transaction dropped (logged at most once a minute)",
		"status", r.StatusCode, "from", r.Source(), "stray_responses", n)
}
