package codec

import "testing"

// TestPTSOrder: stamps fed in decoding order come out sorted, one per picture; a picture lost
// silently is made up for at the next key picture; the bound drops the oldest.
func TestPTSOrder(t *testing.T) {
	var o ptsOrder
	if got := o.next(7, false); got != 7 {
		t.Fatalf("nothing outstanding: %d, want the picture's own 7", got)
	}
	// I0 P4 B1 B2 B3 in decoding order, shown I0 B1 B2 B3 P4: the pictures carry their unit's
	// stamp, shown gets the sorted ones
	for _, pts := range []int64{0, 4, 1, 2, 3} {
		o.push(pts)
	}
	for i, own := range []int64{0, 1, 2, 3, 4} {
		if got := o.next(own*10, i == 0); got != int64(i) { // own stamps need not be used
			t.Fatalf("picture %d: %d, want %d", i, got, i)
		}
	}
	// units 5..9 fed, 9 a key frame; the picture of 6 never comes out
	for _, pts := range []int64{5, 8, 6, 7, 9} {
		o.push(pts)
	}
	for _, want := range []int64{5, 6, 7} { // pictures 5, 7, 8: one stamp behind after the loss
		if got := o.next(want, false); got != want {
			t.Fatalf("got %d, want %d", got, want)
		}
	}
	if got := o.next(9, true); got != 9 || o.stale != 1 || len(o.h) != 0 {
		t.Fatalf("key picture 9: %d (stale %d, %d outstanding), want 9 after dropping stamp 8", got, o.stale, len(o.h))
	}
	// a picture lost with an error takes the next stamp
	o.push(10)
	o.push(11)
	o.lose()
	if got := o.next(11, false); got != 11 {
		t.Fatalf("after a lost picture: %d, want 11", got)
	}
	// the bound
	o.reset()
	o.stale = 0
	for pts := range int64(maxReorder + 10) {
		o.push(pts)
	}
	if len(o.h) != maxReorder || o.stale != 10 {
		t.Fatalf("%d outstanding, %d stale; want %d, 10", len(o.h), o.stale, maxReorder)
	}
	if got := o.next(10, false); got != 10 {
		t.Fatalf("after overflow: %d, want 10", got)
	}
}

func TestPTSOrderAllocs(t *testing.T) {
	var o ptsOrder
	for pts := range int64(maxReorder) {
		o.push(pts)
	}
	o.reset()
	n := testing.AllocsPerRun(100, func() {
		o.push(1)
		o.push(0)
		o.next(0, false)
		o.next(1, false)
	})
	if n != 0 {
		t.Fatalf("%v allocations a round", n)
	}
}
