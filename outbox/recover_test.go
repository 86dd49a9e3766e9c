package outbox

import (
	"bytes"
	"errors"
	"os"
	"testing"
)

func TestLock(t *testing.T) {
	dir := t.TempDir()
	open(t, dir, nil)
	o := &Outbox{Dir: dir}
	if err := o.Init(); !errors.Is(err, ErrLocked) {
		t.Fatalf("second Init: %v", err)
	}
}

func TestTornTail(t *testing.T) {
	for _, tc := range []struct {
		name   string
		damage func(path string, size int64)
		keep   uint64
	}{
		{"truncated mid-record", func(p string, size int64) { os.Truncate(p, size-7) }, 99},
		{"truncated mid-header", func(p string, size int64) {
			os.Truncate(p, size-encodedSize(len(payload(100)))+10)
		}, 99},
		{"flipped byte in last record", func(p string, size int64) { flipFile(p, size-3) }, 99},
		{"flipped byte in record 50", func(p string, size int64) { flipFile(p, recordOffset(50)+30) }, 49},
		{"garbage appended", func(p string, size int64) {
			f, _ := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
			f.Write(bytes.Repeat([]byte{0xa5}, 1000))
			f.Close()
		}, 100},
		{"header torn", func(p string, size int64) { os.Truncate(p, 9) }, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			o, _ := open(t, dir, nil)
			appendN(t, o, 100)
			o.Close()
			files := segFiles(t, dir)
			fi, _ := os.Stat(files[0])
			tc.damage(files[0], fi.Size())

			o, logs := open(t, dir, nil)
			st := o.Stats()
			if st.Records != tc.keep || st.Truncations != 1 || logs.Count("segment cut") != 1 {
				t.Fatalf("kept %d records, %d truncations, log %q", st.Records, st.Truncations, logs.String())
			}
			// Appends continue after the valid prefix, reads return every kept record.
			seq, err := o.Append(payload(tc.keep + 1))
			if err != nil || seq != tc.keep+1 {
				t.Fatalf("append after recovery: %d %v", seq, err)
			}
			c, _ := o.Consumer("c")
			recs := readAll(t, c, int(tc.keep)+1)
			if recs[len(recs)-1].Seq != tc.keep+1 {
				t.Fatal("order")
			}
			o.Close()
			// The cut is durable: a third open finds nothing to cut.
			o, _ = open(t, dir, nil)
			if st := o.Stats(); st.Truncations != 0 || st.Records != tc.keep+1 {
				t.Fatalf("third open: %+v", st)
			}
		})
	}
}

// recordOffset is the offset of record seq in the first segment of appendN's log.
func recordOffset(seq uint64) int64 {
	off := int64(segHeaderSize)
	for s := uint64(1); s < seq; s++ {
		off += encodedSize(len(payload(s)))
	}
	return off
}

func flipFile(path string, off int64) {
	f, _ := os.OpenFile(path, os.O_RDWR, 0)
	defer f.Close()
	b := make([]byte, 1)
	f.ReadAt(b, off)
	b[0] ^= 0x08
	f.WriteAt(b, off)
}

func TestSeqAboveCursors(t *testing.T) {
	// A consumer acknowledged records whose segment was then lost (not yet synced at a crash):
	// new records must get sequence numbers above its cursor.
	dir := t.TempDir()
	o, _ := open(t, dir, nil)
	c, _ := o.Consumer("c")
	appendN(t, o, 10)
	readAll(t, c, 10)
	c.Ack(10)
	o.Close()
	for _, f := range segFiles(t, dir) {
		os.Remove(f)
	}
	o, _ = open(t, dir, nil)
	if seq, _ := o.Append([]byte("x")); seq != 11 {
		t.Fatalf("seq %d, want 11", seq)
	}
}
