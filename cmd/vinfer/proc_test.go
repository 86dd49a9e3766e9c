package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vinfer/vinfer/internal/testutil"
)

// proc is `vinfer run --http 127.0.0.1:0` running in the background with the configuration
// given; its stderr (logs, progress, summary) collects in logs.
type proc struct {
	t    *testing.T
	cmd  *exec.Cmd
	logs *testutil.LogBuffer
	url  string
	done chan struct{}
	code int
}

func startRun(t *testing.T, cfg string) *proc {
	t.Helper()
	path := filepath.Join(t.TempDir(), "run.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	p := &proc{t: t, logs: &testutil.LogBuffer{}, done: make(chan struct{})}
	p.cmd = exec.Command(bin, "run", "--config", path, "--http", "127.0.0.1:0")
	p.cmd.Stdout, p.cmd.Stderr = io.Discard, p.logs
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(p.done)
		if err := p.cmd.Wait(); err != nil {
			if ee, ok := err.(*exec.ExitError); ok {
				p.code = ee.ExitCode()
			} else {
				p.code = -1
			}
		}
	}()
	t.Cleanup(func() { p.stop() })
	served := regexp.MustCompile(`msg="api: serving" url=(\S+)`)
	testutil.Eventually(t, 2*time.Minute, "the API to serve", func() bool {
		select {
		case <-p.done:
			t.Fatalf("vinfer run ended (status %d):\n%s", p.code, p.logs.String())
		default:
		}
		m := served.FindStringSubmatch(p.logs.String())
		if m != nil {
			p.url = m[1]
		}
		return m != nil
	})
	return p
}

// get answers GET path: the status and the body.
func (p *proc) get(path string) (int, []byte) {
	p.t.Helper()
	c := http.Client{Timeout: 30 * time.Second}
	resp, err := c.Get(p.url + path)
	if err != nil {
		p.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		p.t.Fatal(err)
	}
	return resp.StatusCode, b
}

// getJSON decodes GET path's body into v and returns the status.
func (p *proc) getJSON(path string, v any) int {
	p.t.Helper()
	code, b := p.get(path)
	if err := json.Unmarshal(b, v); err != nil {
		p.t.Fatalf("GET %s: %v: %s", path, err, b)
	}
	return code
}

// stop sends SIGINT and waits for the summary (2 minutes at most, then SIGKILL); it returns
// the exit status.
func (p *proc) stop() int {
	select {
	case <-p.done:
		return p.code
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-p.done:
	case <-time.After(2 * time.Minute):
		_ = p.cmd.Process.Kill()
		<-p.done
		p.t.Errorf("vinfer run did not stop on SIGINT within 2 minutes:\n%s", p.logs.String())
	}
	return p.code
}

// summaryLine is the run summary's line of stream id.
func (p *proc) summaryLine(id string) string {
	out := p.logs.String()
	i := strings.Index(out, "summary:")
	if i < 0 {
		return ""
	}
	for _, l := range strings.Split(out[i:], "\n") {
		if f := strings.Fields(l); len(f) > 0 && f[0] == id {
			return l
		}
	}
	return ""
}

// startSend runs `vinfer send FILE URL` (the file looped in real time, a test camera) until the
// function returned is called, or the test ends.
func startSend(t *testing.T, file, url string, args ...string) (stop func()) {
	t.Helper()
	cmd := exec.Command(bin, append(append([]string{"send"}, args...), file, url)...)
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	stop = func() {
		select {
		case <-done:
			return
		default:
		}
		_ = cmd.Process.Kill()
		<-done
	}
	t.Cleanup(stop)
	return stop
}
