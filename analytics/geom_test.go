package analytics

import "testing"

func TestIntersects(t *testing.T) {
	cases := []struct {
		p, q, a, b vec
		want       bool
	}{
		{vec{0, 0}, vec{10, 10}, vec{0, 10}, vec{10, 0}, true},   // X
		{vec{0, 0}, vec{4, 4}, vec{0, 10}, vec{10, 0}, false},    // short of it
		{vec{0, 0}, vec{5, 5}, vec{0, 10}, vec{10, 0}, true},     // touches
		{vec{0, 0}, vec{10, 0}, vec{5, 0}, vec{15, 0}, true},     // collinear overlap
		{vec{0, 0}, vec{10, 0}, vec{11, 0}, vec{15, 0}, false},   // collinear apart
		{vec{0, 0}, vec{10, 0}, vec{0, 1}, vec{10, 1}, false},    // parallel
		{vec{5, -5}, vec{5, 5}, vec{0, 0}, vec{5, 0}, true},      // through an end
		{vec{5.1, -5}, vec{5.1, 5}, vec{0, 0}, vec{5, 0}, false}, // beside an end
	}
	for i, c := range cases {
		if got := intersects(c.p, c.q, c.a, c.b); got != c.want {
			t.Errorf("case %d: %v", i, got)
		}
		if got := intersects(c.a, c.b, c.p, c.q); got != c.want {
			t.Errorf("case %d swapped: %v", i, got)
		}
	}
}

func TestInPolygon(t *testing.T) {
	// A U shape: the notch is outside.
	u := []vec{{0, 0}, {30, 0}, {30, 30}, {20, 30}, {20, 10}, {10, 10}, {10, 30}, {0, 30}}
	for _, c := range []struct {
		p    vec
		want bool
	}{{vec{5, 20}, true}, {vec{15, 20}, false}, {vec{25, 20}, true}, {vec{15, 5}, true}, {vec{40, 5}, false}, {vec{-1, 5}, false}} {
		if got := inPolygon(u, c.p); got != c.want {
			t.Errorf("%v: %v", c.p, got)
		}
	}
}

func TestSelfIntersection(t *testing.T) {
	if _, _, ok := selfIntersection([]vec{{0, 0}, {30, 0}, {30, 30}, {20, 30}, {20, 10}, {10, 10}, {10, 30}, {0, 30}}); ok {
		t.Error("U shape")
	}
	// The closing edge folds back over the first one.
	if _, _, ok := selfIntersection([]vec{{5, 0}, {10, 0}, {0, 0}}); !ok {
		t.Error("fold on the closing edge")
	}
	if i, j, ok := selfIntersection([]vec{{0, 0}, {10, 10}, {10, 0}, {0, 10}}); !ok || i != 0 || j != 2 {
		t.Errorf("bow tie: %d %d %v", i, j, ok)
	}
}
