package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vinfer/vinfer/internal/testutil"
)

// TestStopWithNativeSignalHandlers: one of six 32-stream runs on a GPU died on SIGINT with
// "fatal error: non-Go code set up signal handler without SA_ONSTACK flag" and no summary
// (issue 29, item 2): a native library had installed, when loaded, handlers that chain to Go's
// without SA_ONSTACK, so a signal landing on a thread running Go code ran Go's handler on the
// goroutine's stack. Here such a library (testdata/sigshim.c: SIGINT, SIGTERM, SIGSEGV) is loaded
// the way ONNX Runtime is (VINFER_ORT_LIB; it passes OrtGetApiBase on to the real library).
// While a looping file stream keeps the threads busy, every thread of the process gets 100
// rounds of SIGWINCH (which Go ignores: the shim hooks it too, so each one takes the path a
// SIGINT would, without stopping vinfer), then rounds of SIGINT and SIGTERM until vinfer logs
// that it is stopping. It must stop with exit status 0 and its summary, after logging at debug
// which handlers it moved onto the signal stack, and from which library.
func TestStopWithNativeSignalHandlers(t *testing.T) {
	a := assets(t)
	ortLib := filepath.Join(filepath.Dir(a), "third_party", "ort", "lib", "libonnxruntime.so.1")
	if _, err := os.Stat(ortLib); err != nil {
		t.Skipf("ONNX Runtime not set up (scripts/setup.sh): %v", err)
	}
	cc, err := exec.LookPath("gcc")
	if err != nil {
		t.Skip("needs gcc")
	}
	dir := t.TempDir()
	shim := filepath.Join(dir, "libsigshim.so")
	if out, err := exec.Command(cc, "-shared", "-fPIC", "-O2", "-o", shim, "testdata/sigshim.c", "-ldl").CombinedOutput(); err != nil {
		t.Fatalf("building the shim: %v\n%s", err, out)
	}
	port := testutil.FreePort(t)
	cfg := filepath.Join(dir, "run.yaml")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, `models: [{name: yolox, path: %s, intra_op_threads: 1}]
streams:
  - {id: loop, source: %s, model: yolox, loop: true}
output: {jsonl: none, http: "127.0.0.1:%d"}
`, filepath.Join(a, "models/yolox_nano_416.onnx"), filepath.Join(a, "videos/car-detection.mp4"), port), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "run", "--config", cfg, "--log-level", "debug")
	cmd.Env = append(os.Environ(), "VINFER_ORT_LIB="+shim, "SIGSHIM_ORT="+ortLib)
	var stderr testutil.LogBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	done := false
	t.Cleanup(func() {
		if !done {
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("vinfer's stderr:\n%s", stderr.String())
		}
	})

	url := fmt.Sprintf("http://127.0.0.1:%d/api/streams/loop", port)
	testutil.Eventually(t, 2*time.Minute, "the stream inferring", func() bool {
		select {
		case err := <-exited:
			done = true
			t.Fatalf("vinfer exited before the signals: %v", err)
		default:
		}
		resp, err := (&http.Client{Timeout: 5 * time.Second}).Get(url)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		var v struct{ Inferred int64 }
		_ = json.NewDecoder(resp.Body).Decode(&v)
		return v.Inferred > 0
	})

	pid := cmd.Process.Pid
	signalAll := func(sig syscall.Signal) {
		tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
		for _, task := range tasks {
			if tid, err := strconv.Atoi(task.Name()); err == nil {
				_ = syscall.Tgkill(pid, tid, sig)
			}
		}
	}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	alive := func(what string, round int) {
		t.Helper()
		select {
		case err := <-exited:
			done = true
			t.Fatalf("vinfer exited during the %s (round %d): %v", what, round, err)
		case <-tick.C:
		}
	}
	// SIGWINCH: the shim's handler, then Go's, which ignores it.
	for round := 0; round < 100; round++ {
		alive("SIGWINCH rounds", round)
		signalAll(syscall.SIGWINCH)
	}
	// Rounds of SIGINT, then SIGTERM, until vinfer says it is stopping (later ones would meet
	// the default action once its handlers are reset at the end).
	rounds := 0
	deadline := time.After(time.Minute)
	for !strings.Contains(stderr.String(), "stopping: draining") {
		select {
		case <-deadline:
			t.Fatalf("no \"stopping\" log line within a minute of signals (%d rounds)", rounds)
		default:
		}
		alive("SIGINT and SIGTERM rounds", rounds)
		sig := syscall.SIGINT
		if rounds%2 == 1 {
			sig = syscall.SIGTERM
		}
		signalAll(sig)
		rounds++
	}
	err = testutil.Within(t, 2*time.Minute, "vinfer to stop", exited)
	done = true
	logs := stderr.String()
	if err != nil || strings.Contains(logs, "fatal error") {
		t.Fatalf("vinfer ended with %v after %d rounds of signals", err, rounds)
	}
	for _, want := range []string{"sigshim: chained 02", "sigshim: chained 28", "summary:"} {
		if !strings.Contains(logs, want) {
			t.Errorf("stderr lacks %q", want)
		}
	}
	// The debug lines name each signal moved and the library whose handler it was.
	for _, sig := range []string{"signal=2 ", "signal=15 ", "signal=11 ", "signal=28 "} {
		found := false
		for _, line := range strings.Split(logs, "\n") {
			if strings.Contains(line, "moved onto the signal stack") && strings.Contains(line, sig) &&
				strings.Contains(line, "library="+shim) {
				found = true
			}
		}
		if !found {
			t.Errorf("no debug line says the handler of %sfrom %s was moved onto the signal stack", sig, shim)
		}
	}
	t.Logf("100 rounds of SIGWINCH, %d of SIGINT and SIGTERM", rounds)
}
