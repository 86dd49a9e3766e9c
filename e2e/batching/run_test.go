// Package batching checks end to end that `vinfer run` batches a model exported with a fixed
// batch of 1 (the bundled YOLOX-Nano) across streams, with no step outside vinfer.
package batching

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vinfer/vinfer/internal/testutil"
)

func freeTCP(t *testing.T) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

type modelView struct {
	Name     string `json:"name"`
	Loaded   bool   `json:"loaded"`
	MaxBatch int    `json:"max_batch"`
	Batch    string `json:"batch"`
	Batches  int64  `json:"batches"`
	Frames   int64  `json:"frames"`
}

func models(url string) ([]modelView, error) {
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(url + "/api/models")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var v struct {
		Models []modelView `json:"models"`
	}
	return v.Models, json.NewDecoder(resp.Body).Decode(&v)
}

// batchHistogram reads vinfer_batch_size's count and its le="1" bucket for model.
func batchHistogram(url, model string) (runs, ofOne float64, err error) {
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(url + "/metrics")
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for sc.Scan() {
		l := sc.Text()
		if !strings.Contains(l, `model="`+model+`"`) {
			continue
		}
		f := strings.Fields(l)
		v, _ := strconv.ParseFloat(f[len(f)-1], 64)
		switch {
		case strings.HasPrefix(l, "vinfer_batch_size_count"):
			runs = v
		case strings.HasPrefix(l, "vinfer_batch_size_bucket") && strings.Contains(l, `le="1"`):
			ofOne = v
		}
	}
	return runs, ofOne, sc.Err()
}

// TestRunBatchesFixedBatchModel: `vinfer run` with 4 file streams of the bundled sample on the
// bundled YOLOX-Nano (batch fixed at 1) declared with max_batch 4 rewrites the model at load
// and forms batches of more than one frame on the CPU: /api/models reports "dynamic
// (rewritten from 1)" and fewer runs than frames, and the batch size histogram has runs above 1.
func TestRunBatchesFixedBatchModel(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	root := testutil.Root(t)
	model := testutil.Asset(t, "models/yolox_nano_416.onnx")
	clip := testutil.Asset(t, "videos/one-by-one-person-detection.mp4")
	tmp := t.TempDir()
	bin := filepath.Join(tmp, "vinfer")
	build := exec.Command("go", "build", "-o", bin, "./cmd/vinfer")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	var cfg strings.Builder
	fmt.Fprintf(&cfg, "models:\n  - {name: yolox, path: %s, max_batch: 4, max_delay: 20ms, preload: true}\nstreams:\n", model)
	for i := range 4 {
		fmt.Fprintf(&cfg, "  - {id: cam-%d, source: %s, model: yolox, tracker: none}\n", i, clip)
	}
	cfg.WriteString("output: {jsonl: none}\n")
	cfgPath := filepath.Join(tmp, "config.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	url := fmt.Sprintf("http://127.0.0.1:%d", freeTCP(t))
	logPath := filepath.Join(tmp, "vinfer.log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "run", "--config", cfgPath, "--http", strings.TrimPrefix(url, "http://"))
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+filepath.Join(tmp, "cache"), // a cold cache: the rewrite runs
		"VINFER_ORT_LIB="+filepath.Join(root, "third_party", "ort", "lib", "libonnxruntime.so.1"))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait(); logf.Close() }()
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGINT)
		select {
		case <-done:
		case <-time.After(60 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			t.Logf("vinfer log:\n%s", b)
		}
	}()

	var m modelView
	testutil.Eventually(t, 5*time.Minute, "200 frames inferred", func() bool {
		select {
		case err := <-done:
			done <- err
			t.Fatalf("vinfer run exited: %v", err)
		default:
		}
		ms, err := models(url)
		if err != nil || len(ms) != 1 {
			return false
		}
		m = ms[0]
		return m.Frames >= 200
	})
	if m.Batch != "dynamic (rewritten from 1)" || m.MaxBatch != 4 {
		t.Errorf("model: batch %q, max_batch %d; want dynamic (rewritten from 1), 4", m.Batch, m.MaxBatch)
	}
	if !(m.Batches < m.Frames) {
		t.Errorf("%d frames in %d runs: no batch of more than one frame", m.Frames, m.Batches)
	}
	runs, ofOne, err := batchHistogram(url, "yolox")
	if err != nil {
		t.Fatal(err)
	}
	if !(runs > ofOne) {
		t.Errorf("vinfer_batch_size: %v runs, %v of one frame: no batch above 1", runs, ofOne)
	}
	t.Logf("%d frames in %d runs (%.2f frames per run); histogram: %v runs, %v of one frame",
		m.Frames, m.Batches, float64(m.Frames)/float64(m.Batches), runs, ofOne)
	b, _ := os.ReadFile(logPath)
	if !strings.Contains(string(b), "batch: dynamic (rewritten from 1)") {
		t.Errorf("the log does not say the model was rewritten:\n%s", b)
	}

	// SIGINT mid-run: vinfer drains the frames in flight, and its summary accounts for every
	// decoded frame, inferred or dropped with a reason.
	_ = cmd.Process.Signal(syscall.SIGINT)
	select {
	case err := <-done:
		done <- err // for the deferred stop
	case <-time.After(2 * time.Minute):
		t.Fatal("vinfer run still running 2 min after SIGINT")
	}
	b, _ = os.ReadFile(logPath)
	checkSummary(t, string(b), 4)
}

// summaryLine is a stream's line of vinfer run's summary: decoded, inferred, then "reason N" drops.
var summaryLine = regexp.MustCompile(`(?m)^  (\S+)\s+model .*? decoded\s+(\d+)\s+inferred\s+(\d+)\s.*?ms((?:  [a-z_]+ \d+)*)`)

// checkSummary checks that each of the summary's n stream lines has decoded = inferred + drops.
func checkSummary(t *testing.T, log string, n int) {
	t.Helper()
	lines := summaryLine.FindAllStringSubmatch(log, -1)
	if len(lines) != n {
		t.Fatalf("%d stream lines in the summary, want %d:\n%s", len(lines), n, log)
	}
	for _, m := range lines {
		decoded, _ := strconv.Atoi(m[2])
		accounted, _ := strconv.Atoi(m[3])
		for _, f := range regexp.MustCompile(`[a-z_]+ (\d+)`).FindAllStringSubmatch(m[4], -1) {
			c, _ := strconv.Atoi(f[1])
			accounted += c
		}
		if decoded != accounted {
			t.Errorf("stream %s: decoded %d, inferred + dropped %d: %q", m[1], decoded, accounted, m[0])
		}
	}
}
