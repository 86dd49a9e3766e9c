package platform

import (
	"context"
	"os"
	"time"
)

func contextTimeout(d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), d)
}

func init() {
	if os.Getenv("GBSIP_DEBUG") != "" {
		debugLogs = true
	}
}

var debugLogs bool

// provisional reports whether the channel's pending INVITE got a provisional answer (the
// point from which giving it up takes a CANCEL).
func (c *Channel) provisional() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pending != nil && c.pending.provisional.Load()
}
