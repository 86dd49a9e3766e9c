package deliver_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/vinfer/vinfer/internal/testutil"
)

// buildVinfer builds cmd/vinfer into a test temporary folder.
func buildVinfer(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "vinfer")
	build := exec.Command("go", "build", "-o", bin, "./cmd/vinfer")
	build.Dir = testutil.Root(t)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// proc is a running `vinfer run`; its output goes to a log file, printed when the test fails.
type proc struct {
	cmd  *exec.Cmd
	log  string
	done chan struct{} // closed once it has exited
}

// start runs `vinfer run --config cfg --http none`; a process still running at the test's end
// is killed.
func start(t *testing.T, bin, cfg string) *proc {
	t.Helper()
	p := &proc{log: cfg + ".log", done: make(chan struct{})}
	lf, err := os.Create(p.log)
	if err != nil {
		t.Fatal(err)
	}
	p.cmd = exec.Command(bin, "run", "--config", cfg, "--http", "none")
	p.cmd.Stdout, p.cmd.Stderr = lf, lf
	p.cmd.Env = append(os.Environ(), "VINFER_ORT_LIB="+filepath.Join(testutil.Root(t), "third_party", "ort", "lib", "libonnxruntime.so.1"))
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.cmd.Wait(); lf.Close(); close(p.done) }()
	t.Cleanup(func() {
		if !p.exited() {
			p.cmd.Process.Signal(syscall.SIGKILL)
			<-p.done
		}
		if t.Failed() {
			t.Logf("%s:\n%s", p.log, p.logTail())
		}
	})
	return p
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// logTail returns the last 4 KiB of the process's output.
func (p *proc) logTail() string {
	b, _ := os.ReadFile(p.log)
	return string(b[max(0, len(b)-4096):])
}
