package track

import "slices"

// keyed is a detection (its position in the association's list) with its x1, for sorting.
type keyed struct {
	x float64
	j int32
}

// edge is a candidate pair of an association: track i, detection j, cost c below the gate.
type edge struct {
	i, j int32
	c    float64
}

// associate matches tracks ts with detections ds (indices into the frame's detections) of the same
// class, at cost 1 − IoU (1 − IoU·score with fuse), pairs costing gate or more excluded, with the
// least total cost as lap.lapjv with cost_limit=gate chooses (package lap). On return t.rowSol[i]
// is the position in ds matched to ts[i] or -1, and t.colSol[j] the position in ts matched to
// ds[j] or -1.
//
// The assignment is solved separately on each connected component of the candidate pairs, which
// gives the same optimum as the whole matrix at a fraction of the cost.
func (t *Tracker) associate(ts []*strack, ds []int32, gate float64, fuse bool) {
	na, nb := len(ts), len(ds)
	t.rowSol = fill(t.rowSol, na)
	t.colSol = fill(t.colSol, nb)
	if na == 0 || nb == 0 {
		return
	}
	// Candidate pairs: detections sorted by x1, so each track scans only those that can overlap it
	// horizontally (x1 within [track x1 − widest detection − 1, track x2 + 1]).
	t.byX = t.byX[:0]
	maxW := 0.0
	for j, d := range ds {
		b := t.dbox[d]
		t.byX = append(t.byX, keyed{b[0], int32(j)})
		maxW = max(maxW, b[2]-b[0])
	}
	slices.SortFunc(t.byX, func(a, b keyed) int {
		switch {
		case a.x < b.x:
			return -1
		case a.x > b.x:
			return 1
		}
		return 0
	})
	t.edges = t.edges[:0]
	for i, s := range ts {
		r := s.rect
		lo := lowerBound(t.byX, r[0]-1-maxW)
		for _, k := range t.byX[lo:] {
			if k.x > r[2]+1 {
				break
			}
			d := ds[k.j]
			b := t.dbox[d]
			if t.dclass[d] != s.class || r[0] > b[2]+1 || b[1] > r[3]+1 || r[1] > b[3]+1 {
				continue
			}
			v := iou(r, b)
			if fuse {
				v *= float64(t.dscore[d])
			}
			if c := 1 - v; c < gate {
				t.edges = append(t.edges, edge{int32(i), k.j, c})
			}
		}
	}
	if len(t.edges) == 0 {
		return
	}

	// Connected components: union-find over tracks 0..na-1 and detections na..na+nb-1.
	n := na + nb
	t.parent = grow(t.parent, n)
	for k := range t.parent {
		t.parent[k] = int32(k)
	}
	for _, e := range t.edges {
		a, b := t.root(e.i), t.root(int32(na)+e.j)
		if a != b {
			t.parent[a] = b
		}
	}
	// Bucket the edges by component (counting sort on the root).
	t.count = grow(t.count, n+1)
	for k := range t.count {
		t.count[k] = 0
	}
	for _, e := range t.edges {
		t.count[t.root(e.i)+1]++
	}
	for k := 1; k <= n; k++ {
		t.count[k] += t.count[k-1]
	}
	t.sorted = growEdges(t.sorted, len(t.edges))
	for _, e := range t.edges {
		r := t.root(e.i)
		t.sorted[t.count[r]] = e
		t.count[r]++
	}
	// t.count[r] is now the end of component r's edges; components appear in root order.
	start := int32(0)
	for r := range n {
		end := t.count[r]
		if end == start {
			continue
		}
		t.solveComponent(t.sorted[start:end], gate)
		start = end
	}
}

// solveComponent assigns the tracks and detections of one connected component.
func (t *Tracker) solveComponent(es []edge, gate float64) {
	if len(es) == 1 {
		t.rowSol[es[0].i] = int(es[0].j)
		t.colSol[es[0].j] = int(es[0].i)
		return
	}
	// Local row and column numbers, in the order of the tracks and detections.
	t.rows, t.cols = t.rows[:0], t.cols[:0]
	for _, e := range es {
		if t.rowSol[e.i] == -1 {
			t.rowSol[e.i] = -2
			t.rows = append(t.rows, e.i)
		}
		if t.colSol[e.j] == -1 {
			t.colSol[e.j] = -2
			t.cols = append(t.cols, e.j)
		}
	}
	sortInt32(t.rows)
	sortInt32(t.cols)
	for k, i := range t.rows {
		t.rowSol[i] = -3 - k
	}
	for k, j := range t.cols {
		t.colSol[j] = -3 - k
	}
	nr, nc := len(t.rows), len(t.cols)
	t.cost = growF(t.cost, nr*nc)
	for k := range t.cost {
		t.cost[k] = gate
	}
	for _, e := range es {
		t.cost[(-3-t.rowSol[e.i])*nc+(-3-t.colSol[e.j])] = e.c
	}
	rowSol, _, err := t.solver.Solve(t.cost, nr, nc, gate)
	for _, i := range t.rows {
		t.rowSol[i] = -1
	}
	for _, j := range t.cols {
		t.colSol[j] = -1
	}
	if err != nil { // not reached: costs are finite and the shape is right
		return
	}
	for k, c := range rowSol {
		if c >= 0 {
			i, j := t.rows[k], t.cols[c]
			t.rowSol[i] = int(j)
			t.colSol[j] = int(i)
		}
	}
}

func (t *Tracker) root(k int32) int32 {
	for t.parent[k] != k {
		t.parent[k] = t.parent[t.parent[k]]
		k = t.parent[k]
	}
	return k
}

// lowerBound returns the first position in a (sorted by x) with x ≥ v.
func lowerBound(a []keyed, v float64) int {
	lo, hi := 0, len(a)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if a[m].x < v {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// sortInt32 sorts a short slice in place (insertion sort: no allocation).
func sortInt32(a []int32) {
	for i := 1; i < len(a); i++ {
		for j := i; j > 0 && a[j] < a[j-1]; j-- {
			a[j], a[j-1] = a[j-1], a[j]
		}
	}
}

func fill(b []int, n int) []int {
	if cap(b) < n {
		b = make([]int, n)
	}
	b = b[:n]
	for k := range b {
		b[k] = -1
	}
	return b
}

func grow(b []int32, n int) []int32 {
	if cap(b) < n {
		return make([]int32, n)
	}
	return b[:n]
}

func growF(b []float64, n int) []float64 {
	if cap(b) < n {
		return make([]float64, n)
	}
	return b[:n]
}

func growEdges(b []edge, n int) []edge {
	if cap(b) < n {
		return make([]edge, n)
	}
	return b[:n]
}
