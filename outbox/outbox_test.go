package outbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/vinfer/vinfer/internal/testutil"
	"log/slog"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// open returns an initialized outbox on dir (FsyncNever unless set), closed at the end of
// the test.
func open(t testing.TB, dir string, set func(o *Outbox)) (*Outbox, *testutil.LogBuffer) {
	t.Helper()
	logs := &testutil.LogBuffer{}
	o := &Outbox{Dir: dir, Fsync: FsyncNever, Logger: slog.New(slog.NewTextHandler(logs, nil))}
	if set != nil {
		set(o)
	}
	if err := o.Init(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { o.Close() })
	return o, logs
}

func payload(seq uint64) []byte {
	return []byte(fmt.Sprintf(`{"id":"ev-%d","pad":"%s"}`, seq, strings.Repeat("x", int(seq%97))))
}

func appendN(t testing.TB, o *Outbox, n int) []uint64 {
	t.Helper()
	var seqs []uint64
	for range n {
		seq, err := o.Append(payload(o.Stats().NextSeq))
		if err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, seq)
	}
	return seqs
}

// readAll reads n records from c, checking their payloads.
func readAll(t testing.TB, c *Consumer, n int) []Record {
	t.Helper()
	recs := readN(t, c, n)
	for _, r := range recs {
		if !bytes.Equal(r.Data, payload(r.Seq)) {
			t.Fatalf("record %d: payload %q", r.Seq, r.Data)
		}
	}
	return recs
}

// readN reads n records from c.
func readN(t testing.TB, c *Consumer, n int) []Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out []Record
	for len(out) < n {
		recs, err := c.Read(ctx, min(50, n-len(out)), 4096)
		if err != nil {
			t.Fatalf("after %d records: %v", len(out), err)
		}
		out = append(out, recs...)
	}
	return out
}

func segFiles(t testing.TB, dir string) []string {
	m, err := filepath.Glob(filepath.Join(dir, "*"+segExt))
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(m)
	return m
}

func TestInitValidation(t *testing.T) {
	for _, o := range []*Outbox{
		{},
		{Dir: t.TempDir(), MaxBytes: 1000, SegmentSize: 600},
		{Dir: t.TempDir(), SegmentSize: 10},
		{Dir: t.TempDir(), SegmentSize: 4096, MaxRecordSize: 4096},
		{Dir: t.TempDir(), MaxRecordSize: MaxRecordLimit + 1},
		{Dir: t.TempDir(), MaxAge: -1},
	} {
		if err := o.Init(); err == nil {
			t.Errorf("%+v accepted", o)
			o.Close()
		}
	}
}

func TestAppendReadAck(t *testing.T) {
	dir := t.TempDir()
	o, _ := open(t, dir, func(o *Outbox) { o.SegmentSize = 4096; o.MaxBytes = 1 << 20; o.CursorEvery = -1 })
	c, err := o.Consumer("sink")
	if err != nil {
		t.Fatal(err)
	}
	seqs := appendN(t, o, 500)
	if seqs[0] != 1 || seqs[499] != 500 {
		t.Fatalf("sequence numbers %d..%d", seqs[0], seqs[499])
	}
	if n := len(segFiles(t, dir)); n < 10 {
		t.Fatalf("%d segments, want many", n)
	}
	if _, err := o.Append(make([]byte, o.MaxRecordSize+1)); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("large record: %v", err)
	}
	recs := readAll(t, c, 200)
	for i, r := range recs {
		if r.Seq != uint64(i+1) {
			t.Fatalf("record %d has seq %d", i, r.Seq)
		}
	}
	if err := c.Ack(201); !errors.Is(err, ErrAckAhead) {
		t.Fatalf("ack ahead: %v", err)
	}
	st := c.Stats()
	if st.Records != 500 || st.Oldest.IsZero() {
		t.Fatalf("before ack: %+v", st)
	}
	if err := c.Ack(150); err != nil {
		t.Fatal(err)
	}
	st = c.Stats()
	var bytes500 int64
	for s := uint64(151); s <= 500; s++ {
		bytes500 += encodedSize(len(payload(s)))
	}
	if st.Records != 350 || st.Persisted != 150 || st.Bytes != bytes500 {
		t.Fatalf("after ack 150: %+v, want 350 records, %d bytes", st, bytes500)
	}
	// Segments wholly acknowledged are gone; the one holding record 151 stays.
	if first := o.FirstSeq(); first > 151 || first < 100 {
		t.Fatalf("first retained %d", first)
	}
	// Rewind reads again from 151.
	c.Rewind()
	if r := readAll(t, c, 1); r[0].Seq != 151 {
		t.Fatalf("after rewind: %d", r[0].Seq)
	}
	readAll(t, c, 349)
	if err := c.Ack(500); err != nil {
		t.Fatal(err)
	}
	if st := c.Stats(); st.Records != 0 || st.Bytes != 0 || !st.Oldest.IsZero() {
		t.Fatalf("all acked: %+v", st)
	}
	if len(segFiles(t, dir)) != 1 {
		t.Fatalf("segments left: %v", segFiles(t, dir))
	}
}

func TestRestartResumes(t *testing.T) {
	dir := t.TempDir()
	set := func(o *Outbox) { o.SegmentSize = 2048; o.MaxBytes = 1 << 20 }
	o, _ := open(t, dir, set)
	a, _ := o.Consumer("a")
	b, _ := o.Consumer("b")
	appendN(t, o, 300)
	readAll(t, a, 120)
	a.Ack(120)
	readAll(t, b, 40)
	b.Ack(40)
	if err := o.Close(); err != nil {
		t.Fatal(err)
	}

	o, _ = open(t, dir, set)
	if st := o.Stats(); st.NextSeq != 301 || st.FirstSeq > 41 {
		t.Fatalf("after restart: %+v", st)
	}
	a, _ = o.Consumer("a")
	if r := readAll(t, a, 1); r[0].Seq != 121 {
		t.Fatalf("a resumes at %d", r[0].Seq)
	}
	// b is known from its cursor file although not opened: it holds its records.
	readAll(t, a, 179)
	a.Ack(300)
	a.Flush()
	if o.FirstSeq() > 41 {
		t.Fatalf("records of the unopened consumer b deleted: first %d", o.FirstSeq())
	}
	if _, err := o.Consumer("a"); !errors.Is(err, ErrConsumerBusy) {
		t.Fatalf("second open: %v", err)
	}
	if err := o.RemoveConsumer("b"); err != nil {
		t.Fatal(err)
	}
	if st := o.Stats(); st.FirstSeq != 301 || st.Segments != 0 {
		t.Fatalf("b removed: %+v", st)
	}
	// A new consumer starts at the oldest retained record.
	appendN(t, o, 1)
	n, _ := o.Consumer("new")
	if r := readAll(t, n, 1); r[0].Seq != 301 {
		t.Fatalf("new consumer starts at %d", r[0].Seq)
	}
}

// eventually waits for cond, checked every millisecond, failing after a minute.
func eventually(t testing.TB, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within a minute")
		}
		time.Sleep(time.Millisecond)
	}
}

func TestClosed(t *testing.T) {
	o, _ := open(t, t.TempDir(), nil)
	c, _ := o.Consumer("c")
	o.Close()
	if _, err := o.Append(nil); !errors.Is(err, ErrClosed) {
		t.Fatal(err)
	}
	if _, err := c.Read(context.Background(), 1, 1); !errors.Is(err, ErrClosed) {
		t.Fatal(err)
	}
	if _, err := o.Consumer("d"); !errors.Is(err, ErrClosed) {
		t.Fatal(err)
	}
	if err := o.Close(); !errors.Is(err, ErrClosed) {
		t.Fatal(err)
	}
}
