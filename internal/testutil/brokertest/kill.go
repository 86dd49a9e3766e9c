package brokertest

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/vinfer/vinfer/sink/brokered"
)

// Crash tests: a parent test starts the test binary again as a child running one test that
// writes to a broker sink until killed with SIGKILL, twice, then once more to drain the
// outbox, and checks that every event whose Write returned reached the broker.
//
// The child learns what to do from an environment variable: "<arg>|<outbox dir>|<mode>",
// mode "write" or "drain".

// Child returns the broker argument, outbox directory and mode the parent passed in the
// environment variable env; ok is false when this process is not a child (the test skips).
func Child(env string) (arg, dir, mode string, ok bool) {
	parts := strings.SplitN(os.Getenv(env), "|", 3)
	if len(parts) != 3 {
		return "", "", "", false
	}
	return parts[0], parts[1], parts[2], true
}

// RunChild is the child's part, on the sink k it opened on the outbox dir: in mode "write" it
// writes results of one event each, printing "ID <event id>" on stdout once each Write
// returned, until the process is killed; in mode "drain" it closes k (give the sink a long
// drain_timeout) and fails unless the outbox was emptied.
func RunChild(t testing.TB, k *brokered.Sink, mode string) {
	if mode == "drain" {
		if err := k.Close(); err != nil {
			t.Fatal(err)
		}
		if st := k.Stats(); st.Depth != 0 {
			t.Fatalf("drained with %d records left (stats %+v)", st.Depth, st)
		}
		return
	}
	out := bufio.NewWriter(os.Stdout)
	for i := 0; ; i++ {
		r := Result("cam1", int64(i), 1)
		if err := k.Write(r); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintln(out, "ID", r.Events[0].ID)
		out.Flush()
	}
}

// Kill runs test (a name, anchored) of this test binary as a child with env set to
// "arg|<a fresh outbox dir>|write", kills it with SIGKILL once it reported 500 written
// events, starts it again on the same outbox and kills it after 1200 more, then runs it to
// completion with mode "drain". It returns the ids of the events written (whose Write
// returned) before each kill; the child's stderr goes to the test's. The three runs together
// are bounded by 3×Timeout.
func Kill(t *testing.T, test, env, arg string) map[string]bool {
	t.Helper()
	if testing.Short() {
		t.Skip("short")
	}
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*Timeout) // a child that hangs is killed
	defer cancel()
	child := func(mode string) *exec.Cmd {
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^"+test+"$", "-test.count=1")
		cmd.Env = append(os.Environ(), env+"="+arg+"|"+dir+"|"+mode)
		cmd.Stderr = os.Stderr
		return cmd
	}
	written := map[string]bool{}
	for round, after := range []int{500, 1200} {
		cmd := child("write")
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(out)
		n := 0
		for n < after && sc.Scan() {
			if id, ok := strings.CutPrefix(sc.Text(), "ID "); ok {
				written[id] = true
				n++
			}
		}
		cmd.Process.Signal(syscall.SIGKILL)
		for sc.Scan() { // ids printed before the kill landed
			if id, ok := strings.CutPrefix(sc.Text(), "ID "); ok {
				written[id] = true
				n++
			}
		}
		cmd.Wait()
		if n < after {
			t.Fatalf("round %d: the child reported %d events before it ended, want %d", round, n, after)
		}
	}
	cmd := child("drain")
	cmd.Stdout = os.Stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("drain: %v", err)
	}
	return written
}

// Lost returns how many of written seen lacks.
func Lost(written map[string]bool, seen *Seen) int {
	lost := 0
	for id := range written {
		if !seen.Has(id) {
			lost++
		}
	}
	return lost
}
