package cluster_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// builtBinary is the vinfer binary both tests run, built once.
var builtBinary struct {
	once sync.Once
	path string
	err  error
	out  []byte
}

// TestMain removes the built binary after the tests.
func TestMain(m *testing.M) {
	code := m.Run()
	if builtBinary.path != "" {
		os.RemoveAll(filepath.Dir(builtBinary.path))
	}
	os.Exit(code)
}

// fixture is an embedded nats-server with JetStream and a configuration of n RTP-listener
// streams in cluster mode; start runs one `vinfer run` node on it. Nodes get SIGTERM (SIGKILL
// after 20 s) at the test's end, and their logs are printed when it failed.
type fixture struct {
	t       *testing.T
	root    string
	bin     string
	cfgPath string
	tmp     string
	procs   []*proc
}

func newFixture(t *testing.T, streams int) *fixture {
	if testing.Short() {
		t.Skip("-short")
	}
	root := repoRoot(t)
	model := filepath.Join(root, "assets", "models", "yolox_nano_416.onnx")
	if _, err := os.Stat(model); err != nil {
		t.Skipf("assets not set up (scripts/setup.sh): %v", err)
	}
	builtBinary.once.Do(func() {
		dir, err := os.MkdirTemp("", "vinfer-cluster-test")
		if err != nil {
			builtBinary.err = err
			return
		}
		builtBinary.path = filepath.Join(dir, "vinfer")
		build := exec.Command("go", "build", "-o", builtBinary.path, "./cmd/vinfer")
		build.Dir = root
		builtBinary.out, builtBinary.err = build.CombinedOutput()
	})
	if builtBinary.err != nil {
		t.Fatalf("go build: %v\n%s", builtBinary.err, builtBinary.out)
	}
	f := &fixture{t: t, root: root, bin: builtBinary.path, tmp: t.TempDir()}

	ns, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true,
		StoreDir: filepath.Join(f.tmp, "nats"), NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	go ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats-server not ready")
	}
	t.Cleanup(ns.Shutdown)

	var cfg strings.Builder
	fmt.Fprintf(&cfg, "models:\n  - {name: yolox, path: %s, intra_op_threads: 1, max_batch: 1}\nstreams:\n", model)
	for i := range streams {
		fmt.Fprintf(&cfg, "  - {id: cam-%02d, source: \"rtp://127.0.0.1:%d?codec=h264\", model: yolox}\n", i, freeUDP(t))
	}
	fmt.Fprintf(&cfg, "output: {jsonl: none}\ncluster: {nats: %q, lease: %s}\n", ns.ClientURL(), lease)
	f.cfgPath = filepath.Join(f.tmp, "config.yaml")
	if err := os.WriteFile(f.cfgPath, []byte(cfg.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.stopAll) // before ns.Shutdown (cleanups run last first)
	return f
}

// start runs node name with its API on a free port.
func (f *fixture) start(name string) *proc {
	t := f.t
	port := freeTCP(t)
	p := &proc{name: name, url: fmt.Sprintf("http://127.0.0.1:%d", port), log: filepath.Join(f.tmp, name+".log"), done: make(chan struct{})}
	lf, err := os.Create(p.log)
	if err != nil {
		t.Fatal(err)
	}
	p.cmd = exec.Command(f.bin, "run", "--config", f.cfgPath, "--http", fmt.Sprintf("127.0.0.1:%d", port), "--node-name", name)
	p.cmd.Stdout, p.cmd.Stderr = lf, lf
	p.cmd.Env = append(os.Environ(), "VINFER_ORT_LIB="+filepath.Join(f.root, "third_party", "ort", "lib", "libonnxruntime.so.1"))
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.cmd.Wait(); lf.Close(); close(p.done) }()
	f.procs = append(f.procs, p)
	return p
}

func (f *fixture) stopAll() {
	for _, p := range f.procs {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
	}
	for _, p := range f.procs {
		select {
		case <-p.done:
		case <-time.After(20 * time.Second):
			_ = p.cmd.Process.Kill()
		}
		if f.t.Failed() {
			b, _ := os.ReadFile(p.log)
			f.t.Logf("--- %s:\n%s", p.name, tail(string(b), 4000))
		}
	}
}

// Waits scale to the lease, not to the wall clock: a loaded machine makes the cluster slow,
// not stuck (issue 29 item 1).
const (
	// lease is the nodes' cluster.lease.
	lease = 2 * time.Second
	// stallLeases is how many leases a wait allows without progress.
	stallLeases = 10
	// startupLimit bounds a node's start (loading its model) while its process lives.
	startupLimit = 5 * time.Minute
)

// waitProgress polls cond every 100 ms until it holds; cond also returns the state it saw
// (placement, counts). It fails when that state stays the same for stallLeases leases, or
// flaps for 100 times that long.
func waitProgress(t *testing.T, what string, cond func() (bool, string)) time.Duration {
	t.Helper()
	t0, changed := time.Now(), time.Now()
	var last string
	for {
		ok, state := cond()
		if ok {
			return time.Since(t0)
		}
		if state != last {
			last, changed = state, time.Now()
		}
		if time.Since(changed) > stallLeases*lease || time.Since(t0) > 100*stallLeases*lease {
			t.Fatalf("%s: no progress for %s (of %s): %s", what, time.Since(changed).Round(time.Second), time.Since(t0).Round(time.Second), last)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitUp waits until each node's API answers. Starting takes what it takes on a loaded
// machine; a node whose process exited fails at once.
func (f *fixture) waitUp(ps ...*proc) {
	t := f.t
	t.Helper()
	t0 := time.Now()
	for _, p := range ps {
		for {
			if _, err := listStreams(p.url); err == nil {
				break
			}
			select {
			case <-p.done:
				b, _ := os.ReadFile(p.log)
				t.Fatalf("%s exited while starting: %v\n%s", p.name, p.cmd.ProcessState, tail(string(b), 4000))
			case <-time.After(200 * time.Millisecond):
			}
			if time.Since(t0) > startupLimit {
				t.Fatalf("%s: API not up after %s", p.name, startupLimit)
			}
		}
	}
}
