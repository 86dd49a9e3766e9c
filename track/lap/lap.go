// Package lap solves linear assignment problems with the shortest augmenting path method of
// Jonker and Volgenant ("A shortest augmenting path algorithm for dense and sparse linear
// assignment problems", Computing 38, 1987): column reduction with reduction transfer, two
// rounds of augmenting row reduction, then Dijkstra-like augmentation for the remaining free rows.
//
// Rectangular problems with a cost limit are solved the way lap.lapjv(extend_cost=True,
// cost_limit=L) does it (the solver ByteTrack and SORT use): the rows×cols matrix is extended to a
// square one of side rows+cols in which every row and every column may stay unassigned at a cost
// of L/2, so a pair is assigned only when that lowers the total cost.
package lap

import (
	"errors"
	"math"
)

// ErrShape is returned when the cost slice does not hold rows×cols values.
var ErrShape = errors.New("lap: cost matrix size does not match rows×cols")

// ErrCost is returned when a cost is NaN, or infinite while the limit is infinite.
var ErrCost = errors.New("lap: cost is NaN or infinite")

// Solver solves assignment problems, reusing its memory: once it has seen the largest problem,
// Solve does not allocate. The zero value is ready. A Solver is not safe for concurrent use.
type Solver struct {
	ext            []float64 // extended square matrix, row-major
	x, y           []int     // row → column, column → row of the square problem
	v, d           []float64 // column duals, shortest path lengths
	free, cols     []int
	pred           []int
	rowSol, colSol []int
}

// Solve assigns rows to columns. cost is row-major, rows×cols. limit is the cost of leaving a row
// and a column unassigned together (L/2 each): a pair with cost ≥ limit is never assigned, and among
// the rest the assignment minimizes Σ assigned costs + (limit/2)·(unassigned rows + unassigned
// columns). With limit = +Inf every row or every column is assigned (min(rows, cols) pairs) at the
// least total cost. Infinite costs are allowed only with a finite limit (they mean "never").
//
// rowSol[i] is the column assigned to row i or -1, colSol[j] the row assigned to column j or -1.
// Both slices belong to the Solver and stay valid until the next call.
func (s *Solver) Solve(cost []float64, rows, cols int, limit float64) (rowSol, colSol []int, err error) {
	if rows < 0 || cols < 0 || len(cost) != rows*cols {
		return nil, nil, ErrShape
	}
	if math.IsNaN(limit) {
		return nil, nil, ErrCost
	}
	s.rowSol = grow(s.rowSol, rows)
	s.colSol = grow(s.colSol, cols)
	for i := range s.rowSol {
		s.rowSol[i] = -1
	}
	for j := range s.colSol {
		s.colSol[j] = -1
	}
	if rows == 0 || cols == 0 {
		return s.rowSol, s.colSol, nil
	}

	// Extended matrix: [C D; D' 0] where D holds the price of staying unassigned.
	n := rows + cols
	s.ext = growf(s.ext, n*n)
	ext := s.ext
	pad := limit / 2
	if math.IsInf(limit, 1) {
		maxc := math.Inf(-1)
		for _, c := range cost {
			if math.IsNaN(c) || math.IsInf(c, 0) {
				return nil, nil, ErrCost
			}
			maxc = max(maxc, c)
		}
		pad = maxc + 1
	}
	for i := range n {
		row := ext[i*n : (i+1)*n]
		for j := range row {
			row[j] = pad
		}
		if i >= rows {
			for j := cols; j < n; j++ {
				row[j] = 0
			}
			continue
		}
		for j, c := range cost[i*cols : (i+1)*cols] {
			if math.IsNaN(c) || math.IsInf(c, -1) {
				return nil, nil, ErrCost
			}
			if c > limit { // never better than leaving both unassigned; keeps the arithmetic finite
				c = limit
			}
			row[j] = c
		}
	}
	s.square(n)
	for i := range rows {
		if j := s.x[i]; j < cols && cost[i*cols+j] < limit {
			s.rowSol[i] = j
			s.colSol[j] = i
		}
	}
	return s.rowSol, s.colSol, nil
}

// square solves the n×n problem in s.ext, leaving the assignment in s.x and s.y.
func (s *Solver) square(n int) {
	s.x = grow(s.x, n)
	s.y = grow(s.y, n)
	s.v = growf(s.v, n)
	s.d = growf(s.d, n)
	s.free = grow(s.free, n)
	s.cols = grow(s.cols, n)
	s.pred = grow(s.pred, n)
	nfree := s.columnReduction(n)
	for range 2 {
		if nfree == 0 {
			break
		}
		nfree = s.rowReduction(n, nfree)
	}
	for _, f := range s.free[:nfree] {
		s.augment(n, f)
	}
}

// columnReduction assigns each column to its cheapest row when that row is not taken yet (columns
// scanned from the last), sets the column duals to the column minima, transfers the reduction of
// rows assigned once, and returns the number of free rows listed in s.free.
func (s *Solver) columnReduction(n int) int {
	c, x, y, v := s.ext, s.x, s.y, s.v
	for i := range n {
		x[i] = -1
	}
	for j := n - 1; j >= 0; j-- {
		best, bi := c[j], 0
		for i := 1; i < n; i++ {
			if h := c[i*n+j]; h < best {
				best, bi = h, i
			}
		}
		v[j] = best
		switch {
		case x[bi] == -1:
			x[bi] = j
			y[j] = bi
		default:
			if x[bi] >= 0 { // mark the row as assigned more than once: no transfer
				x[bi] = -2 - x[bi]
			}
			y[j] = -1
		}
	}
	nfree := 0
	for i := range n {
		switch {
		case x[i] == -1:
			s.free[nfree] = i
			nfree++
		case x[i] <= -2:
			x[i] = -2 - x[i]
		default:
			j1 := x[i]
			row := c[i*n : (i+1)*n]
			m := math.Inf(1)
			for j, h := range row {
				if j != j1 {
					m = min(m, h-v[j])
				}
			}
			if !math.IsInf(m, 1) {
				v[j1] -= m
			}
		}
	}
	return nfree
}

// rowReduction runs one round of augmenting row reduction over the nfree rows in s.free and
// returns how many are still free (listed again in s.free).
func (s *Solver) rowReduction(n, nfree int) int {
	c, x, y, v, free := s.ext, s.x, s.y, s.v, s.free
	k, next := 0, 0
	for steps := 0; k < nfree; steps++ {
		i := free[k]
		k++
		row := c[i*n : (i+1)*n]
		u1, u2 := math.Inf(1), math.Inf(1)
		j1, j2 := -1, -1
		for j, h := range row {
			h -= v[j]
			if h < u2 {
				if h >= u1 {
					u2, j2 = h, j
				} else {
					u2, j2 = u1, j1
					u1, j1 = h, j
				}
			}
		}
		i0 := y[j1]
		lowers := u1 < u2
		if steps < n*n { // bound the work when ties make rows chase each other
			if lowers {
				v[j1] -= u2 - u1
			} else if i0 >= 0 && j2 >= 0 {
				j1 = j2
				i0 = y[j2]
			}
			if i0 >= 0 {
				if lowers {
					k--
					free[k] = i0
				} else {
					free[next] = i0
					next++
				}
			}
		} else if i0 >= 0 {
			free[next] = i0
			next++
		}
		if i0 >= 0 {
			x[i0] = -1
		}
		x[i] = j1
		y[j1] = i
	}
	return next
}

// augment assigns free row f along a shortest alternating path (Dijkstra over reduced costs) and
// updates the column duals.
func (s *Solver) augment(n, f int) {
	c, x, y, v, d, cols, pred := s.ext, s.x, s.y, s.v, s.d, s.cols, s.pred
	for j := range n {
		d[j] = c[f*n+j] - v[j]
		pred[j] = f
		cols[j] = j
	}
	// cols[:lo] are scanned, cols[lo:hi] are at the current minimum distance, cols[hi:] the rest.
	lo, hi, scanned := 0, 0, 0
	end := -1
	var dmin float64
	for end < 0 {
		if lo == hi {
			scanned = lo
			dmin = d[cols[hi]]
			hi++
			for k := hi; k < n; k++ {
				j := cols[k]
				if h := d[j]; h <= dmin {
					if h < dmin {
						hi = lo
						dmin = h
					}
					cols[k], cols[hi] = cols[hi], j
					hi++
				}
			}
			for k := lo; k < hi; k++ {
				if y[cols[k]] < 0 {
					end = cols[k]
					break
				}
			}
			if end >= 0 {
				break
			}
		}
		j1 := cols[lo]
		lo++
		i := y[j1]
		row := c[i*n : (i+1)*n]
		u := row[j1] - v[j1] - dmin
		for k := hi; k < n; k++ {
			j := cols[k]
			h := row[j] - v[j] - u
			if h < d[j] {
				d[j] = h
				pred[j] = i
				if h == dmin {
					if y[j] < 0 {
						end = j
						break
					}
					cols[k], cols[hi] = cols[hi], j
					hi++
				}
			}
		}
	}
	for _, j := range cols[:scanned] {
		v[j] += d[j] - dmin
	}
	for j := end; ; {
		i := pred[j]
		y[j] = i
		j, x[i] = x[i], j
		if i == f {
			break
		}
	}
}

func grow(b []int, n int) []int {
	if cap(b) < n {
		return make([]int, n)
	}
	return b[:n]
}

func growf(b []float64, n int) []float64 {
	if cap(b) < n {
		return make([]float64, n)
	}
	return b[:n]
}
