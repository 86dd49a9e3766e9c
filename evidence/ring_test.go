package evidence

import (
	"testing"
	"time"

	"github.com/vinfer/vinfer/media"
)

// synth makes n access units of size bytes at 10 fps with a key frame every gop.
func synth(n, gop, size int) []media.AccessUnit {
	out := make([]media.AccessUnit, n)
	for i := range out {
		pts := time.Duration(i) * 100 * time.Millisecond
		out[i] = media.AccessUnit{Codec: media.CodecH264, Data: make([]byte, size), PTS: pts, DTS: pts, Key: i%gop == 0}
		out[i].Data[0] = byte(i)
	}
	return out
}

func TestRingKeepsPreFromKeyFrame(t *testing.T) {
	r := &Ring{Pre: 2 * time.Second}
	aus := synth(100, 10, 1000)
	for i := range aus {
		r.ObserveAccessUnit(&aus[i])
	}
	r.mu.Lock()
	first := r.ents[r.head]
	r.mu.Unlock()
	newest := aus[99].PTS
	if !first.key || first.pts > newest-2*time.Second || first.pts <= newest-3*time.Second {
		t.Fatalf("oldest unit key=%v pts=%v, newest %v: want the key frame at or before newest−2s, within a GOP", first.key, first.pts, newest)
	}
	units, trunc := r.Units(newest-2*time.Second, newest)
	if trunc || len(units) == 0 || !units[0].Key || units[0].PTS != 7*time.Second {
		t.Fatalf("Units from 7.9s: first at %v key=%v truncated=%v", units[0].PTS, units[0].Key, trunc)
	}
	if units[0].Data[0] != 70 {
		t.Fatalf("unit bytes are those of unit %d, want 70", units[0].Data[0])
	}
}

func TestRingSkipsUntilKeyFrame(t *testing.T) {
	r := &Ring{Pre: time.Second}
	aus := synth(25, 10, 100)
	for i := 3; i < 25; i++ {
		r.ObserveAccessUnit(&aus[i])
	}
	st := r.Stats()
	if st.Skipped != 7 || st.Units != 15 {
		t.Fatalf("skipped %d, buffered %d: want 7 skipped before the key frame at 1 s, 15 buffered", st.Skipped, st.Units)
	}
	units, trunc := r.Units(300*time.Millisecond, 2*time.Second)
	if !trunc || units[0].PTS != time.Second {
		t.Fatalf("from 0.3 s: start %v truncated %v; want the next key frame (1 s), truncated", units[0].PTS, trunc)
	}
}

func TestRingByteCap(t *testing.T) {
	r := &Ring{Pre: time.Hour, MaxBytes: 64 << 10}
	aus := synth(500, 10, 1000)
	for i := range aus {
		r.ObserveAccessUnit(&aus[i])
		if st := r.Stats(); st.Bytes > 64<<10 || st.Capacity > 64<<10 {
			t.Fatalf("after unit %d: %d bytes in an arena of %d, cap 64 KiB", i, st.Bytes, st.Capacity)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.ents[r.head].key {
		t.Fatal("the buffer does not start at a key frame")
	}
}

func TestRingRestartsOnTimelineJump(t *testing.T) {
	r := &Ring{Pre: time.Second}
	aus := synth(30, 10, 100)
	for i := range aus {
		r.ObserveAccessUnit(&aus[i])
	}
	r.ObserveAccessUnit(&aus[0]) // a file looping without offset
	if st := r.Stats(); st.Resets != 1 || st.Units != 1 {
		t.Fatalf("resets %d units %d, want 1 and 1", st.Resets, st.Units)
	}
}

func TestRingNoAllocsSteadyState(t *testing.T) {
	r := &Ring{Pre: time.Second, MaxBytes: 1 << 20}
	aus := synth(1000, 10, 2000)
	for i := 0; i < 200; i++ {
		r.ObserveAccessUnit(&aus[i])
	}
	i := 200
	allocs := testing.AllocsPerRun(500, func() {
		r.ObserveAccessUnit(&aus[i%1000])
		i++
		if i%1000 == 0 { // the timeline restarts: keep PTS increasing instead
			for k := range aus {
				aus[k].PTS += 100 * time.Second
				aus[k].DTS += 100 * time.Second
			}
		}
	})
	if allocs != 0 {
		t.Fatalf("%.1f allocations per access unit, want 0", allocs)
	}
}

// TestRingGrowsBeforeDropping: GOPs of 2 MB (5 s at 10 fps) with Pre 2 s need two of them
// buffered; the arena grows past its first MiB towards MaxBytes instead of dropping the GOP that
// Pre still wants, and nothing is counted as an overrun.
func TestRingGrowsBeforeDropping(t *testing.T) {
	r := &Ring{Pre: 2 * time.Second, MaxBytes: 8 << 20}
	aus := synth(200, 50, 40_000)
	for i := range aus {
		r.ObserveAccessUnit(&aus[i])
		r.mu.Lock()
		first := r.ents[r.head].pts
		r.mu.Unlock()
		if newest := aus[i].PTS; newest >= 2*time.Second && first > newest-2*time.Second {
			t.Fatalf("after unit %d (%v): the buffer starts at %v, want at or before %v", i, newest, first, newest-2*time.Second)
		}
	}
	if st := r.Stats(); st.Overrun != 0 || st.Capacity <= 1<<20 || st.Capacity > 8<<20 {
		t.Fatalf("%d overruns, arena %d bytes: want none, and 1 MiB < arena ≤ 8 MiB", st.Overrun, st.Capacity)
	}
}
