package main

import (
	"context"
	"io"
	"log/slog"
	"net"

	"github.com/vinfer/vinfer/api"
	"github.com/vinfer/vinfer/app"
	"github.com/vinfer/vinfer/metrics"
)

// startAPI serves the HTTP API, /metrics, /debug and the web page on addr (api.DefaultAddr,
// 127.0.0.1:8080, when empty) until ctx ends or the returned Closer is closed. With a token,
// requests must carry it as a bearer token.
func startAPI(ctx context.Context, a *app.App, m *metrics.Metrics, addr, token string, log *slog.Logger) (io.Closer, error) {
	s := &api.Server{App: a, Metrics: m, Addr: addr, Token: token, Log: log}
	if err := s.Start(); err != nil {
		return nil, err
	}
	if token == "" && !loopback(s.URL()[len("http://"):]) {
		log.Warn("api: serving beyond loopback without a token: whoever reaches it can add sources and watch the video; set output.token in the config")
	}
	go func() {
		<-ctx.Done() // SIGINT: end event streams at once, before the pipeline drains
		s.Close()
	}()
	return s, nil
}

// loopback reports whether a listen address only accepts local connections.
func loopback(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return host == "localhost" || (ip != nil && ip.IsLoopback())
}
