package liveview

import (
	"errors"
	"testing"
	"time"

	"github.com/vinfer/vinfer/internal/defs"
	"github.com/vinfer/vinfer/media"
)

func au(pts time.Duration, key bool) *media.AccessUnit {
	return &media.AccessUnit{Codec: media.CodecH264, Data: []byte{0, 0, 0, 1, 0x65, 1}, PTS: pts, DTS: pts, Key: key}
}

// TestFeedFanOut: viewers start at a key frame and share one copy of each unit; the one whose
// queue is full is dropped and counted while the others and the feed go on; max viewers refuses
// one more; the stream's end ends every viewer and refuses new ones.
func TestFeedFanOut(t *testing.T) {
	h := NewHub(2, 3)
	f := h.Feed("cam")
	if _, err := h.Join("nope"); !errors.Is(err, defs.ErrLiveNotRunning) {
		t.Fatalf("unknown stream: %v", err)
	}
	fast, err := h.Join("cam")
	if err != nil {
		t.Fatal(err)
	}
	slow, err := h.Join("cam")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Join("cam"); !errors.Is(err, defs.ErrLiveFull) {
		t.Fatalf("third viewer of 2: %v", err)
	}
	f.ObserveAccessUnit(au(0, false)) // before a key frame: nobody gets it
	f.ObserveAccessUnit(au(40*time.Millisecond, true))
	a, err := fast.Next(nil)
	if err != nil || !a.Key || a.PTS != 40*time.Millisecond {
		t.Fatalf("first unit: %+v %v", a, err)
	}
	b, _ := slow.Next(nil)
	if &a.Data[0] != &b.Data[0] {
		t.Fatal("each viewer got its own copy of the unit")
	}
	for i := range 4 { // slow reads nothing: 3 queued, the 4th drops it
		f.ObserveAccessUnit(au(time.Duration(80+40*i)*time.Millisecond, false))
		if _, err := fast.Next(nil); err != nil {
			t.Fatal(err)
		}
	}
	for {
		if _, err := slow.Next(nil); err != nil {
			if !errors.Is(err, ErrSlow) {
				t.Fatalf("slow viewer: %v", err)
			}
			break
		}
	}
	if st := h.Stats(); st.Slow != 1 || st.Viewers != 1 || st.Refused != 1 {
		t.Fatalf("stats %+v", st)
	}
	if _, err := h.Join("cam"); err != nil {
		t.Fatalf("a place freed by the slow viewer: %v", err)
	}
	f.EndOfStream()
	for {
		if _, err := fast.Next(nil); err != nil {
			if !errors.Is(err, ErrEnded) {
				t.Fatalf("after the end: %v", err)
			}
			break
		}
	}
	if _, err := h.Join("cam"); !errors.Is(err, defs.ErrLiveNotRunning) {
		t.Fatalf("ended stream: %v", err)
	}
	if h.Feed("cam") == f {
		t.Fatal("a stream added again got the ended feed")
	}
}

// TestReorders: a PTS going back (B-frames) is noticed; a key frame's restart (a loop) is not.
func TestReorders(t *testing.T) {
	h := NewHub(1, 1)
	f := h.Feed("cam")
	f.ObserveAccessUnit(au(time.Second, true))
	f.ObserveAccessUnit(au(0, true))
	if h.Reorders("cam") {
		t.Fatal("a key frame with a lower PTS is not a B-frame")
	}
	f.ObserveAccessUnit(au(200*time.Millisecond, false))
	f.ObserveAccessUnit(au(100*time.Millisecond, false))
	if !h.Reorders("cam") {
		t.Fatal("a PTS that went back not noticed")
	}
}
