package reslog_test

import (
	"testing"

	"github.com/vinfer/vinfer/internal/testutil"
)

// A full disk drops the blocks that do not fit (counted), leaves no partial block behind, and
// logging resumes once there is room.
func TestDiskFullDropsBlocks(t *testing.T) {
	dir := testutil.SmallFS(t, 64<<10)
	l := open(t, dir)
	s := newScene("cam1", 40)
	for range 25 * 120 {
		l.Write(s.next())
	}
	l.Flush()
	st := l.Stats()
	if st.Dropped == 0 {
		t.Fatalf("nothing dropped on a 64 KiB file system: %+v", st)
	}
	got := all(t, l, "cam1")
	if int64(len(got)) != st.Frames-st.Dropped {
		t.Errorf("%d frames read back, want the %d logged less the %d dropped", len(got), st.Frames, st.Dropped)
	}
	l.Close()
	l2 := open(t, dir)
	if n := l2.Stats().Torn; n != 0 {
		t.Errorf("a failed write left a partial block (%d torn tails at open)", n)
	}
}
