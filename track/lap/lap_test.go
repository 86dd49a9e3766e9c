package lap

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
)

// objective is what Solve minimizes: assigned costs plus limit/2 per unassigned row and column.
func objective(cost []float64, rows, cols int, limit float64, rowSol []int) float64 {
	total, assigned := 0.0, 0
	for i, j := range rowSol {
		if j >= 0 {
			total += cost[i*cols+j]
			assigned++
		}
	}
	if math.IsInf(limit, 1) {
		return total
	}
	return total + limit/2*float64(rows+cols-2*assigned)
}

// bruteForce returns the least objective over all partial assignments (pairs with cost ≥ limit
// excluded; with an infinite limit, only assignments of min(rows, cols) pairs).
func bruteForce(cost []float64, rows, cols int, limit float64) float64 {
	usedCol := make([]bool, cols)
	best := math.Inf(1)
	var rec func(i int, acc float64, assigned int)
	rec = func(i int, acc float64, assigned int) {
		if i == rows {
			if math.IsInf(limit, 1) {
				if assigned == min(rows, cols) {
					best = min(best, acc)
				}
				return
			}
			best = min(best, acc+limit/2*float64(rows+cols-2*assigned))
			return
		}
		rec(i+1, acc, assigned)
		for j := range cols {
			if !usedCol[j] && cost[i*cols+j] < limit {
				usedCol[j] = true
				rec(i+1, acc+cost[i*cols+j], assigned+1)
				usedCol[j] = false
			}
		}
	}
	rec(0, 0, 0)
	return best
}

func checkConsistent(t *testing.T, cost []float64, cols int, limit float64, rowSol, colSol []int) {
	t.Helper()
	for i, j := range rowSol {
		if j >= 0 {
			if colSol[j] != i {
				t.Fatalf("rowSol[%d]=%d but colSol[%d]=%d", i, j, j, colSol[j])
			}
			if cost[i*cols+j] >= limit {
				t.Fatalf("pair (%d,%d) cost %v ≥ limit %v assigned", i, j, cost[i*cols+j], limit)
			}
		}
	}
	for j, i := range colSol {
		if i >= 0 && rowSol[i] != j {
			t.Fatalf("colSol[%d]=%d but rowSol[%d]=%d", j, i, i, rowSol[i])
		}
	}
}

func TestSolveCases(t *testing.T) {
	inf := math.Inf(1)
	cases := []struct {
		name       string
		cost       []float64
		rows, cols int
		limit      float64
		rowSol     []int
	}{
		{"empty", nil, 0, 3, 0.5, []int{}},
		{"one under limit", []float64{0.3}, 1, 1, 0.5, []int{0}},
		{"one at limit", []float64{0.5}, 1, 1, 0.5, []int{-1}},
		{"one over limit", []float64{0.9}, 1, 1, 0.5, []int{-1}},
		{"diagonal", []float64{0.1, 0.9, 0.9, 0.1}, 2, 2, 0.8, []int{0, 1}},
		{"anti-diagonal", []float64{0.9, 0.1, 0.1, 0.9}, 2, 2, 0.8, []int{1, 0}},
		// Greedy would take (0,0)=0.1 and leave row 1 out; the optimum takes two pairs.
		{"not greedy", []float64{0.1, 0.2, 0.3, 0.95}, 2, 2, 0.8, []int{1, 0}},
		// Two pairs at 0.75 each cost more than one pair at 0.1 plus one row and column left out (0.8).
		{"limit trades pairs", []float64{0.1, 0.75, 0.75, 0.99}, 2, 2, 0.8, []int{0, -1}},
		{"wide", []float64{0.5, 0.2, 0.7}, 1, 3, 0.8, []int{1}},
		{"tall", []float64{0.5, 0.2, 0.7}, 3, 1, 0.8, []int{-1, 0, -1}},
		{"no limit forces pairs", []float64{5, 9, 9, 100}, 2, 2, inf, []int{1, 0}},
		{"infinite cost never assigned", []float64{inf, 0.1, 0.2, inf}, 2, 2, 1, []int{1, 0}},
		{"negative costs, limit 0", []float64{-3, -1, 0, -2}, 2, 2, 0, []int{0, 1}},
	}
	var s Solver
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rowSol, colSol, err := s.Solve(c.cost, c.rows, c.cols, c.limit)
			if err != nil {
				t.Fatal(err)
			}
			if len(rowSol) != c.rows || len(colSol) != c.cols {
				t.Fatalf("lengths %d, %d", len(rowSol), len(colSol))
			}
			for i := range c.rowSol {
				if rowSol[i] != c.rowSol[i] {
					t.Fatalf("rowSol %v, want %v", rowSol, c.rowSol)
				}
			}
			checkConsistent(t, c.cost, c.cols, c.limit, rowSol, colSol)
		})
	}
}

func TestSolveErrors(t *testing.T) {
	var s Solver
	cases := []struct {
		name       string
		cost       []float64
		rows, cols int
		limit      float64
		err        error
	}{
		{"short", []float64{1, 2, 3}, 2, 2, 1, ErrShape},
		{"negative rows", nil, -1, 0, 1, ErrShape},
		{"NaN cost", []float64{math.NaN()}, 1, 1, 1, ErrCost},
		{"NaN limit", []float64{1}, 1, 1, math.NaN(), ErrCost},
		{"-Inf cost", []float64{math.Inf(-1)}, 1, 1, 1, ErrCost},
		{"Inf cost without limit", []float64{math.Inf(1)}, 1, 1, math.Inf(1), ErrCost},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, _, err := s.Solve(c.cost, c.rows, c.cols, c.limit); !errors.Is(err, c.err) {
				t.Fatalf("err %v, want %v", err, c.err)
			}
		})
	}
}

// TestSolveRandom compares the objective with exhaustive search on random problems, with
// continuous costs and with small integer costs (many ties), with and without a limit.
func TestSolveRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var s Solver
	for it := range 4000 {
		rows, cols := r.IntN(6), r.IntN(6)
		cost := make([]float64, rows*cols)
		for k := range cost {
			if it%2 == 0 {
				cost[k] = r.Float64()
			} else {
				cost[k] = float64(r.IntN(4))
			}
		}
		limits := []float64{0.5, 0.8, 2, 3, math.Inf(1)}
		limit := limits[r.IntN(len(limits))]
		rowSol, colSol, err := s.Solve(cost, rows, cols, limit)
		if err != nil {
			t.Fatal(err)
		}
		checkConsistent(t, cost, cols, limit, rowSol, colSol)
		got, want := objective(cost, rows, cols, limit, rowSol), bruteForce(cost, rows, cols, limit)
		if math.Abs(got-want) > 1e-9 {
			t.Fatalf("case %d (%dx%d, limit %v, cost %v): objective %v, optimum %v (rowSol %v)",
				it, rows, cols, limit, cost, got, want, rowSol)
		}
	}
}

func TestSolveAllocs(t *testing.T) {
	var s Solver
	cost := make([]float64, 30*40)
	r := rand.New(rand.NewPCG(3, 4))
	for k := range cost {
		cost[k] = r.Float64()
	}
	if _, _, err := s.Solve(cost, 30, 40, 0.8); err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(20, func() { s.Solve(cost, 30, 40, 0.8) }); n != 0 {
		t.Fatalf("%v allocations per Solve", n)
	}
}

func BenchmarkSolve(b *testing.B) {
	for _, n := range []int{10, 50, 200} {
		b.Run(itoa(n), func(b *testing.B) {
			r := rand.New(rand.NewPCG(5, 6))
			cost := make([]float64, n*n)
			for k := range cost {
				cost[k] = 1
			}
			// Each row overlaps its own column well and a neighbour's a little, as in tracking.
			for i := range n {
				cost[i*n+i] = 0.1 * r.Float64()
				if i+1 < n {
					cost[i*n+i+1] = 0.6 + 0.3*r.Float64()
				}
			}
			var s Solver
			b.ReportAllocs()
			for b.Loop() {
				s.Solve(cost, n, n, 0.8)
			}
		})
	}
}

func itoa(n int) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}
