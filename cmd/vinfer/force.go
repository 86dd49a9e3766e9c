package main

import (
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// forceAfter is how long after the first signal a SIGINT or SIGTERM ends the drain at once: a
// burst of signals (one per thread, a process manager's repeats) stays one request to stop.
const forceAfter = time.Second

// forceOnSignal, called when the drain starts, ends the process (status 128+signal, without the
// summary) on a SIGINT or SIGTERM that comes forceAfter or later: the drain waits on frames in
// flight and sinks' drain_timeout, which under load took 30-54 s. The function returned stops
// listening.
func forceOnSignal(log *slog.Logger) (stop func()) {
	again := make(chan os.Signal, 4)
	signal.Notify(again, os.Interrupt, syscall.SIGTERM)
	first := time.Now()
	go func() {
		for sig := range again {
			if time.Since(first) < forceAfter {
				continue
			}
			log.Warn("stopping at once: a second signal during the drain", "signal", sig.String())
			code := 130
			if sig == syscall.SIGTERM {
				code = 143
			}
			os.Exit(code)
		}
	}()
	return func() { signal.Stop(again) }
}
