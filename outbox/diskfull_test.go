package outbox

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/vinfer/vinfer/internal/testutil"
)

// appendUntilFull appends records until Append reports ErrDiskFull, then more more, and returns
// how many Append calls were made and the last sequence number written.
func appendUntilFull(t *testing.T, o *Outbox, more int, cause error) (calls, last uint64) {
	t.Helper()
	for full := 0; full <= more; calls++ {
		seq, err := o.Append(payload(o.Stats().NextSeq))
		switch {
		case err == nil:
			if full > 0 {
				t.Fatalf("Append succeeded on a full file system after %d failures", full)
			}
			last = seq
		case errors.Is(err, ErrDiskFull) && errors.Is(err, cause):
			full++
		default:
			t.Fatalf("after %d records: %v", calls, err)
		}
		if calls > 1e6 {
			t.Fatal("the file system never filled up")
		}
	}
	return calls, last
}

// TestDiskFull fills a real 1 MiB file system (a tmpfs the test mounts, as root) with an outbox
// whose consumer does not acknowledge (its broker is down): every record Append cannot write is
// counted dropped (disk_full) for the outbox and the consumer, the state says so with one log
// line, acknowledged + dropped + pending = records offered at every step, and writing resumes by
// itself when space returns: first when the consumer acknowledges (its cursor is overwritten in
// place on the full file system and the delivered segment is deleted), then when another file
// that filled the file system is removed.
func TestDiskFull(t *testing.T) {
	dir := testutil.SmallFS(t, 1<<20)
	o, logs := open(t, dir, func(o *Outbox) { o.CursorEvery = -1 })
	c, err := o.Consumer("sink")
	if err != nil {
		t.Fatal(err)
	}
	offered, last := appendUntilFull(t, o, 100, syscall.ENOSPC)
	st := o.Stats()
	if st.Dropped[ReasonDiskFull] != 101 || st.DiskFullSince.IsZero() || st.Appended != last {
		t.Fatalf("full: %+v", st)
	}
	if cs := checkAccounts(t, c, 0, offered); cs.Dropped[ReasonDiskFull] != 101 || cs.Records != last {
		t.Fatalf("consumer: %+v", cs)
	}
	if n := logs.Count("outbox: disk full"); n != 1 {
		t.Fatalf("%d disk-full lines, want 1:\n%s", n, logs)
	}

	// The broker is back: the consumer reads everything and acknowledges it.
	recs := readAll(t, c, int(last))
	if err := c.Ack(recs[len(recs)-1].Seq); err != nil {
		t.Fatalf("ack on a full file system: %v", err)
	}
	if cs := c.Stats(); cs.Persisted != last {
		t.Fatalf("cursor not persisted on a full file system: %+v", cs)
	}
	seq, err := o.Append(payload(o.Stats().NextSeq))
	if err != nil {
		t.Fatalf("Append after the delivered records were acknowledged: %v", err)
	}
	offered++
	if st := o.Stats(); !st.DiskFullSince.IsZero() || logs.Count("outbox: writing records again") != 1 {
		t.Fatalf("not writable again: %+v\n%s", st, logs)
	}
	checkAccounts(t, c, last, offered)
	if r := readAll(t, c, 1); r[0].Seq != seq {
		t.Fatalf("read %d, want %d", r[0].Seq, seq)
	}

	// Another file fills the file system, then goes.
	fill := filepath.Join(dir, "fill")
	f, err := os.Create(fill)
	if err != nil {
		t.Fatal(err)
	}
	for _, err = f.Write(make([]byte, 64<<10)); err == nil; _, err = f.Write(make([]byte, 4<<10)) {
	}
	f.Close()
	n, last2 := appendUntilFull(t, o, 10, syscall.ENOSPC)
	offered += n
	if st := o.Stats(); st.Dropped[ReasonDiskFull] != 112 || logs.Count("outbox: disk full") != 2 {
		t.Fatalf("second episode: %+v\n%s", st, logs)
	}
	checkAccounts(t, c, last, offered)
	os.Remove(fill)
	if _, err := o.Append(payload(o.Stats().NextSeq)); err != nil {
		t.Fatalf("Append once space returned: %v", err)
	}
	offered++
	if logs.Count("outbox: writing records again") != 2 {
		t.Fatalf("want a second writing-again line:\n%s", logs)
	}
	// Pending: the record read and not acknowledged, and those written since.
	cs := checkAccounts(t, c, last, offered)
	if got := readAll(t, c, int(cs.Records)-1); got[len(got)-1].Seq != max(last2, seq)+1 {
		t.Fatalf("last record read %d", got[len(got)-1].Seq)
	}
}

// TestDiskFullFileSizeLimit needs no mount: the file size limit (RLIMIT_FSIZE; Go ignores
// SIGXFSZ, so writes past it fail with EFBIG) stops the active segment's growth. That record is
// counted dropped (disk_full), the segment sealed, and the next Append writes to a new segment.
func TestDiskFullFileSizeLimit(t *testing.T) {
	dir := t.TempDir()
	o, logs := open(t, dir, func(o *Outbox) { o.CursorEvery = -1 })
	c, err := o.Consumer("sink")
	if err != nil {
		t.Fatal(err)
	}
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &old); err != nil {
		t.Fatal(err)
	}
	lim := syscall.Rlimit{Cur: 64 << 10, Max: old.Max}
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &lim); err != nil {
		t.Skipf("cannot set RLIMIT_FSIZE: %v", err)
	}
	offered, last := appendUntilFull(t, o, 0, syscall.EFBIG)
	seq, err := o.Append(payload(o.Stats().NextSeq))
	syscall.Setrlimit(syscall.RLIMIT_FSIZE, &old)
	if err != nil {
		t.Fatalf("Append to a new segment: %v", err)
	}
	offered++
	st := o.Stats()
	if st.Dropped[ReasonDiskFull] != 1 || !st.DiskFullSince.IsZero() || st.Segments != 2 || seq != last+1 {
		t.Fatalf("%+v, seq %d after %d", st, seq, last)
	}
	if logs.Count("outbox: disk full") != 1 || logs.Count("outbox: writing records again") != 1 {
		t.Fatalf("want one line per change of state:\n%s", logs)
	}
	checkAccounts(t, c, 0, offered)
	// The first segment holds exactly the records written (the partial one was given back).
	if fi, err := os.Stat(segFiles(t, dir)[0]); err != nil || fi.Size() > 64<<10 {
		t.Fatalf("first segment: %v %v", fi, err)
	}
	recs := readAll(t, c, int(last)+1)
	if recs[len(recs)-1].Seq != seq {
		t.Fatalf("read up to %d, want %d", recs[len(recs)-1].Seq, seq)
	}
}
