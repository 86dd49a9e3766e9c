package cascade

import (
	"context"
	"log/slog"
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
