package track

import (
	"testing"
	"time"
)

// TestGroupTracksOneObject: one object moving right, detected as class 2 (car) on most frames
// and class 7 (truck) on two frames in six. Grouped, it is one track named by the score-weighted vote;
// without the group, the two classes make two tracks.
func TestGroupTracksOneObject(t *testing.T) {
	run := func(group int) (ids map[int64]bool, last Track) {
		tr := &Tracker{}
		if err := tr.Init(); err != nil {
			t.Fatal(err)
		}
		ids = map[int64]bool{}
		var out []Track
		for f := range 30 {
			x := float32(100 + 5*f)
			d := Detection{Box: [4]float32{x, 100, x + 80, 160}, Score: 0.9, ClassID: 2, Group: group}
			if f%6 >= 4 { // two frames in six
				d.ClassID, d.Score = 7, 0.8
			}
			var err error
			out, err = tr.Update(time.Duration(f)*time.Second/30, []Detection{d}, out[:0])
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range out {
				ids[o.TrackID] = true
				last = o
			}
		}
		return ids, last
	}
	ids, last := run(1)
	if len(ids) != 1 || last.ClassID != 2 {
		t.Fatalf("grouped: tracks %v, last class %d; want one track of class 2", ids, last.ClassID)
	}
	if ids, _ := run(0); len(ids) < 2 {
		t.Fatalf("ungrouped: tracks %v; want one per class", ids)
	}
}

// TestVotes: the class with the most score summed wins, the first seen on a tie; NaN and
// out-of-range scores weigh nothing; classes past maxVotes have no say.
func TestVotes(t *testing.T) {
	var v votes
	v.add(3, 0.5)
	v.add(4, 0.3)
	v.add(4, 0.3)
	if w := v.winner(); w != 4 {
		t.Fatalf("winner %d, want 4", w)
	}
	v.add(3, float32(nan()))
	v.add(3, 5)
	if w := v.winner(); w != 4 {
		t.Fatalf("winner %d after bad scores, want 4", w)
	}
	for c := 10; c < 30; c++ {
		v.add(c, 1)
	}
	if v.n != maxVotes {
		t.Fatalf("%d classes remembered", v.n)
	}
}

func nan() float64 { z := 0.0; return z / z }
