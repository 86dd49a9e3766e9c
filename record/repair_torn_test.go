package record_test

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/vinfer/vinfer/record"
)

// TestCrashTornLargeSize: a segment a crash left open whose tail is a fragment's moof and an
// mdat header with a 64-bit size past any file (2^63-16: beyond the file's end once added to
// its offset, which wrapped negative) is cut back to its whole fragments at start, not
// removed with them (before: the wrapped end made the cut fail and the segment was deleted).
func TestCrashTornLargeSize(t *testing.T) {
	units := readUnits(t, sample, 10*time.Second)
	dir := t.TempDir()
	r := newRecorder(t, dir, func(r *record.Recorder) { r.Segment = time.Hour })
	o := r.Observer("cam1")
	feed(t, r, o, units)
	r.Close()
	segs, _ := r.Segments("cam1", time.Time{}, time.Time{})
	if len(segs) != 1 {
		t.Fatalf("%d segments, want 1", len(segs))
	}
	whole, _ := os.ReadFile(filepath.Join(dir, "cam1", segs[0].Name))
	os.Remove(filepath.Join(dir, "cam1", segs[0].Name))
	last := bytes.LastIndex(whole, []byte("moof")) - 4
	moof := whole[last : last+int(binary.BigEndian.Uint32(whole[last:]))]
	torn := append(bytes.Clone(whole), moof...)
	torn = binary.BigEndian.AppendUint32(torn, 1)
	torn = append(torn, "mdat"...)
	torn = binary.BigEndian.AppendUint64(torn, 1<<63-16)
	torn = append(torn, make([]byte, 100)...)
	os.WriteFile(filepath.Join(dir, "cam1", "001796522400000.part"), torn, 0o644)

	r2 := newRecorder(t, dir, nil)
	defer r2.Close()
	if st := r2.Stats(); st.Repaired != 1 || st.Removed != 0 {
		t.Errorf("repaired %d, removed %d segments at start, want 1 and 0", st.Repaired, st.Removed)
	}
	segs, _ = r2.Segments("cam1", time.Time{}, time.Time{})
	if len(segs) != 1 {
		t.Fatalf("%d segments after the repair, want 1: %v", len(segs), segs)
	}
	p := filepath.Join(dir, "cam1", segs[0].Name)
	if fi, err := os.Stat(p); err != nil || fi.Size() != int64(len(whole)) {
		t.Fatalf("the repaired segment: %v, want its %d bytes of whole fragments", err, len(whole))
	}
	decodes(t, p)
}
