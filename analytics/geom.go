package analytics

// vec is a point or vector in frame pixels.
type vec struct{ x, y float64 }

func (a vec) sub(b vec) vec { return vec{a.x - b.x, a.y - b.y} }

// cross is the z component of a×b. In image coordinates (y down) it is positive when b points
// to the right of a.
func cross(a, b vec) float64 { return a.x*b.y - a.y*b.x }

func dot(a, b vec) float64 { return a.x*b.x + a.y*b.y }

// orient is the sign of cross(b−a, c−a): +1, −1, or 0 when a, b, c are collinear.
func orient(a, b, c vec) int {
	v := cross(b.sub(a), c.sub(a))
	switch {
	case v > 0:
		return 1
	case v < 0:
		return -1
	}
	return 0
}

// within reports whether c, collinear with a and b, lies on the closed segment ab.
func within(a, b, c vec) bool {
	return min(a.x, b.x) <= c.x && c.x <= max(a.x, b.x) && min(a.y, b.y) <= c.y && c.y <= max(a.y, b.y)
}

// intersects reports whether the closed segments pq and ab share a point.
func intersects(p, q, a, b vec) bool {
	o1, o2 := orient(p, q, a), orient(p, q, b)
	o3, o4 := orient(a, b, p), orient(a, b, q)
	if o1 != o2 && o3 != o4 {
		return true
	}
	return (o1 == 0 && within(p, q, a)) || (o2 == 0 && within(p, q, b)) ||
		(o3 == 0 && within(a, b, p)) || (o4 == 0 && within(a, b, q))
}

// inPolygon reports whether p is inside the polygon (even-odd rule; points on an edge may go
// either way).
func inPolygon(poly []vec, p vec) bool {
	in := false
	j := len(poly) - 1
	for i := range poly {
		a, b := poly[i], poly[j]
		if (a.y > p.y) != (b.y > p.y) && p.x < (b.x-a.x)*(p.y-a.y)/(b.y-a.y)+a.x {
			in = !in
		}
		j = i
	}
	return in
}

// area2 is twice the polygon's signed area.
func area2(poly []vec) float64 {
	var s float64
	j := len(poly) - 1
	for i := range poly {
		s += cross(poly[j], poly[i])
		j = i
	}
	return s
}

// selfIntersection returns the indices of two edges of the closed polygon that cross (edge i
// runs from vertex i to vertex i+1), or ok false. Adjacent edges may only share their common
// vertex: one folding back over the other counts as crossing.
func selfIntersection(poly []vec) (i, j int, ok bool) {
	n := len(poly)
	for i := range n {
		a, b := poly[i], poly[(i+1)%n]
		for j := i + 1; j < n; j++ {
			c, d := poly[j], poly[(j+1)%n]
			switch {
			case j == i+1: // b == c
				if cross(b.sub(a), d.sub(c)) == 0 && dot(b.sub(a), d.sub(c)) < 0 {
					return i, j, true
				}
			case i == 0 && j == n-1: // d == a
				if cross(b.sub(a), d.sub(c)) == 0 && dot(b.sub(a), d.sub(c)) < 0 {
					return i, j, true
				}
			default:
				if intersects(a, b, c, d) {
					return i, j, true
				}
			}
		}
	}
	return 0, 0, false
}
