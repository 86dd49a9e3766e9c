package outbox

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"testing"
)

const crashEnv = "OUTBOX_CRASH_DIR"

// crashPayload is the payload of appender g's n-th record in round r.
func crashPayload(r, g, n int) []byte {
	head := fmt.Sprintf("r%d-g%d-%d:", r, g, n)
	return append([]byte(head), bytes.Repeat([]byte{byte('a' + n%26)}, n%300)...)
}

// TestCrashChild is the child process of TestCrash: it appends records with FsyncAlways from
// two goroutines and writes each sequence number whose Append returned to fd 3, until killed.
func TestCrashChild(t *testing.T) {
	dir := os.Getenv(crashEnv)
	if dir == "" {
		t.Skip("child of TestCrash")
	}
	var round int
	fmt.Sscan(os.Getenv(crashEnv+"_ROUND"), &round)
	o := &Outbox{Dir: dir, Fsync: FsyncAlways, SegmentSize: 32 << 10, MaxBytes: 1 << 30}
	if err := o.Init(); err != nil {
		t.Fatal(err)
	}
	acks := os.NewFile(3, "acks")
	var mu sync.Mutex
	var wg sync.WaitGroup
	for g := range 2 {
		wg.Go(func() {
			for n := 0; ; n++ {
				seq, err := o.Append(crashPayload(round, g, n))
				if err != nil {
					panic(err)
				}
				var b [8]byte
				binary.LittleEndian.PutUint64(b[:], seq)
				mu.Lock()
				_, err = acks.Write(b[:])
				mu.Unlock()
				if err != nil {
					panic(err)
				}
			}
		})
	}
	wg.Wait()
}

// TestCrash kills a child appending with FsyncAlways (SIGKILL, at a random point) three times
// over the same directory; after each kill every record whose Append returned must be in the
// log, in order, intact.
func TestCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	dir := t.TempDir()
	acked := map[uint64]bool{}
	for round := range 3 {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), crashEnv+"="+dir, fmt.Sprintf("%s_ROUND=%d", crashEnv, round))
		cmd.ExtraFiles = []*os.File{w}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		w.Close()
		killAfter := 50 + rand.IntN(1500)
		br := bufio.NewReader(r)
		var b [8]byte
		n := 0
		for ; ; n++ {
			if n == killAfter {
				cmd.Process.Signal(syscall.SIGKILL)
			}
			if _, err := io.ReadFull(br, b[:]); err != nil {
				break // the child is dead and its end of the pipe closed
			}
			acked[binary.LittleEndian.Uint64(b[:])] = true
		}
		r.Close()
		err = cmd.Wait()
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
			t.Fatalf("round %d: child ended with %v before the kill (after %d acks)", round, err, n)
		}
		t.Logf("round %d: killed after %d acknowledged appends", round, n)
		checkCrashLog(t, dir, acked, round)
	}
}

// checkCrashLog opens the log and checks that it holds every acknowledged record, with
// consecutive sequence numbers and each appender's records in order.
func checkCrashLog(t *testing.T, dir string, acked map[uint64]bool, rounds int) {
	t.Helper()
	o, logs := open(t, dir, nil)
	defer o.Close()
	c, err := o.Consumer("check")
	if err != nil {
		t.Fatal(err)
	}
	defer o.RemoveConsumer("check")
	defer c.Close()
	total := o.Stats().Records
	recs := readN(t, c, int(total))
	next := map[[2]int]int{}
	present := map[uint64]bool{}
	for i, rec := range recs {
		if rec.Seq != uint64(i+1) {
			t.Fatalf("record %d has sequence number %d", i+1, rec.Seq)
		}
		var r, g, n int
		if _, err := fmt.Sscanf(string(rec.Data), "r%d-g%d-%d:", &r, &g, &n); err != nil ||
			!bytes.Equal(rec.Data, crashPayload(r, g, n)) {
			t.Fatalf("record %d: bad payload %q", rec.Seq, rec.Data)
		}
		if k := [2]int{r, g}; n != next[k] {
			t.Fatalf("record %d: appender %v record %d, want %d", rec.Seq, k, n, next[k])
		} else {
			next[k]++
		}
		present[rec.Seq] = true
	}
	for seq := range acked {
		if !present[seq] {
			t.Fatalf("acknowledged record %d missing (log holds %d records)", seq, len(recs))
		}
	}
	if st := o.Stats(); st.Truncations > 0 {
		t.Logf("recovery cut %d bytes: %s", st.TruncatedBytes, logs.String())
	}
}
