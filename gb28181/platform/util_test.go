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
