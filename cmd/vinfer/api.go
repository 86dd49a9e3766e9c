package main

import (
	"context"
	"io"
	"log/slog"
	"strings"

	"github.com/vinfer/vinfer/api"
	"github.com/vinfer/vinfer/app"
	"github.com/vinfer/vinfer/cluster"
	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/metrics"
)

// startAPI serves the HTTP API, /metrics, /debug and the web page on the output section's
// address until ctx ends or the returned Closer is closed, with its token, browser guard
// settings and TLS files.
func startAPI(ctx context.Context, a *app.App, m *metrics.Metrics, o config.Output, log *slog.Logger, node *cluster.Node) (io.Closer, error) {
	s := &api.Server{App: a, Metrics: m, Addr: o.HTTP, Token: o.Token, Tokens: o.Tokens, Log: log, Insecure: o.Insecure,
		AllowedHosts: o.AllowedHosts, AllowedOrigins: o.AllowedOrigins, TLSCert: o.TLSCert, TLSKey: o.TLSKey,
		Evidence: a.Evidence(), Live: a.Live()}
	if node != nil {
		s.Cluster = node
	}
	if err := s.Start(); err != nil {
		return nil, err
	}
	if o.Token == "" && len(o.Tokens) == 0 && !api.Loopback(s.URL()[strings.Index(s.URL(), "//")+2:]) {
		log.Warn("api: serving beyond loopback without a token (output.insecure): whoever reaches it can add sources and watch the video")
	}
	go func() {
		<-ctx.Done() // SIGINT: end event streams at once, before the pipeline drains
		s.Close()
	}()
	return s, nil
}
