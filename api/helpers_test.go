package api_test

import (
	"encoding/json"
	"github.com/vinfer/vinfer/internal/apptest"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vinfer/vinfer/api"
	"github.com/vinfer/vinfer/app"
	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/internal/testutil"
	"github.com/vinfer/vinfer/metrics"
	"github.com/vinfer/vinfer/model"
)

func asset(t testing.TB, rel string) string { return testutil.Asset(t, rel) }

type logBuffer = testutil.LogBuffer

// env is a running app with its API server on loopback.
type env struct {
	t     testing.TB
	app   *app.App
	srv   *api.Server
	url   string
	token string
	logs  *logBuffer
}

// start runs YOLOX-Nano (declared as "yolox", preloaded) behind an API server on 127.0.0.1 with
// the given token; everything stops at the test's end. Logs, including the default logger's
// (sources log there), go to e.logs.
func start(t testing.TB, token string) *env {
	t.Helper()
	return startWith(t, token, nil, nil)
}

// startWith is start with the configuration and the server adjusted first (either may be nil).
func startWith(t testing.TB, token string, adjustConfig func(*config.Config), adjustServer func(*api.Server)) *env {
	t.Helper()
	m, err := model.Declare(asset(t, "models/yolox_nano_416.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	m.Name, m.Preload = "yolox", true
	logs := &logBuffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	prev := slog.Default()
	slog.SetDefault(log)
	mx := metrics.New()
	cfg := &config.Config{Models: []config.Model{m}}
	if adjustConfig != nil {
		adjustConfig(cfg)
	}
	a := apptest.MustApp(t, cfg, app.Options{
		Log: log, KeepLatest: true, Observer: mx})
	if err := a.Registry.Preload(false); err != nil {
		a.Stop()
		t.Fatal(err)
	}
	srv := &api.Server{App: a, Metrics: mx, Addr: "127.0.0.1:0", Token: token}
	if adjustServer != nil {
		adjustServer(srv)
	}
	if err := srv.Start(); err != nil {
		a.Stop()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := srv.Close(); err != nil {
			t.Errorf("server close: %v", err)
		}
		a.Stop()
		slog.SetDefault(prev)
	})
	return &env{t: t, app: a, srv: srv, url: srv.URL(), token: token, logs: logs}
}

// do sends a request with the env's token and returns the response and its body.
func (e *env) do(method, path, body string) (*http.Response, []byte) {
	return e.doToken(method, path, body, e.token)
}

func (e *env) doToken(method, path, body, token string) (*http.Response, []byte) {
	e.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, e.url+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	if body != "" || method == http.MethodPost {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp, b
}

// want checks the status code and decodes a JSON body into v (when not nil).
func (e *env) want(method, path, body string, code int, v any) []byte {
	e.t.Helper()
	resp, b := e.do(method, path, body)
	if resp.StatusCode != code {
		e.t.Fatalf("%s %s: %s, want %d: %s", method, path, resp.Status, code, b)
	}
	if v != nil {
		if err := json.Unmarshal(b, v); err != nil {
			e.t.Fatalf("%s %s: body is not the JSON expected: %v: %s", method, path, err, b)
		}
	}
	return b
}

// artifact writes a test artifact (screenshot, snapshot) under $VINFER_TEST_ARTIFACTS, default
// out/test-artifacts/api in the repository (git-ignored), and returns its path.
func artifact(t testing.TB, name string, data []byte) string {
	t.Helper()
	dir := os.Getenv("VINFER_TEST_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join(testutil.Root(t), "out", "test-artifacts")
	}
	dir = filepath.Join(dir, "api")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("artifact: %s", p)
	return p
}
