package mot

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/vinfer/vinfer/track/lap"
)

// MatchIoU is the least IoU at which a tracker box matches a ground-truth box.
const MatchIoU = 0.5

// ErrDuplicateID is returned when an identity appears twice in one frame.
var ErrDuplicateID = errors.New("mot: identity twice in one frame")

// Metrics are the scores of one sequence. Rates are fractions (MOTA 0.627 is the 62.7 printed by
// the devkit).
type Metrics struct {
	GT, Pred         int // ground-truth boxes (not ignored), tracker boxes
	GTTracks         int // ground-truth identities
	TP, FP, FN, IDSW int // matches, unmatched tracker boxes, unmatched ground truth, identity switches
	Frag             int // fragmentations: a ground-truth trajectory's matched run interrupted
	MT, PT, ML       int // trajectories matched ≥ 80 %, between, < 20 % of their frames
	MOTA             float64
	MOTP             float64 // mean IoU of the matches
	IDTP, IDFP, IDFN int
	IDF1, IDP, IDR   float64
}

// String formats m on one line, rates in percent.
func (m Metrics) String() string {
	return fmt.Sprintf("MOTA %.1f IDF1 %.1f MOTP %.1f IDP %.1f IDR %.1f FP %d FN %d IDsw %d Frag %d MT %d PT %d ML %d GT %d",
		100*m.MOTA, 100*m.IDF1, 100*m.MOTP, 100*m.IDP, 100*m.IDR, m.FP, m.FN, m.IDSW, m.Frag, m.MT, m.PT, m.ML, m.GTTracks)
}

// frameBoxes are the boxes of one frame, with their identities as dense indices.
type frameBoxes struct {
	id  []int
	box [][4]float64 // x, y, w, h
}

// index groups rows by frame (1..frames) and numbers their identities densely (in order of first
// appearance); it skips rows with Conf 0 when ignoreZero is set.
func index(rows []Row, frames int, ignoreZero bool) ([]frameBoxes, int, int, error) {
	byFrame := make([]frameBoxes, frames+1)
	ids := map[int64]int{}
	n := 0
	for _, r := range rows {
		if ignoreZero && r.Conf == 0 {
			continue
		}
		k, ok := ids[r.ID]
		if !ok {
			k = len(ids)
			ids[r.ID] = k
		}
		f := &byFrame[r.Frame]
		if slices.Contains(f.id, k) {
			return nil, 0, 0, fmt.Errorf("%w: frame %d id %d", ErrDuplicateID, r.Frame, r.ID)
		}
		f.id = append(f.id, k)
		f.box = append(f.box, [4]float64{r.X, r.Y, r.W, r.H})
		n++
	}
	return byFrame, len(ids), n, nil
}

// iou is the intersection over union of boxes x, y, w, h.
func iou(a, b [4]float64) float64 {
	iw := min(a[0]+a[2], b[0]+b[2]) - max(a[0], b[0])
	ih := min(a[1]+a[3], b[1]+b[3]) - max(a[1], b[1])
	if iw <= 0 || ih <= 0 {
		return 0
	}
	inter := iw * ih
	return inter / (a[2]*a[3] + b[2]*b[3] - inter)
}

// Evaluate scores tracker rows res against ground-truth rows gt of one sequence; ground-truth rows
// with Conf 0 are ignored. Each frame, a ground-truth object keeps the tracker identity it matched
// in the previous frame while their IoU stays ≥ MatchIoU; the others are matched by a maximum
// matching of least total 1 − IoU among pairs with IoU ≥ MatchIoU. A ground-truth object matched
// to another identity than at its previous match is an identity switch. It returns
// ErrDuplicateID when an identity appears twice in a frame.
func Evaluate(gt, res []Row) (Metrics, error) {
	frames := 0
	for _, r := range gt {
		frames = max(frames, r.Frame)
	}
	for _, r := range res {
		frames = max(frames, r.Frame)
	}
	g, ng, gtBoxes, err := index(gt, frames, true)
	if err != nil {
		return Metrics{}, err
	}
	p, np, predBoxes, err := index(res, frames, false)
	if err != nil {
		return Metrics{}, err
	}
	m := Metrics{GT: gtBoxes, Pred: predBoxes, GTTracks: ng}

	var solver lap.Solver
	last := make([]int, ng)     // tracker identity of the last match, or -1
	lastF := make([]int, ng)    // frame of the last match
	seen := make([]int, ng)     // frames present
	matched := make([]int, ng)  // frames matched
	overlap := map[[2]int]int{} // (gt, tracker) → frames with IoU ≥ MatchIoU
	for k := range ng {
		last[k] = -1
	}
	var cur []int
	var pused []bool
	var cost []float64
	const big = 1e6
	for f := 1; f <= frames; f++ {
		gf, pf := &g[f], &p[f]
		cur = slices.Grow(cur[:0], len(gf.id))[:len(gf.id)]
		pused = slices.Grow(pused[:0], len(pf.id))[:len(pf.id)]
		clear(pused)
		for a, gid := range gf.id {
			cur[a] = -1
			seen[gid]++
			for b, pid := range pf.id {
				if iou(gf.box[a], pf.box[b]) >= MatchIoU {
					overlap[[2]int{gid, pid}]++
				}
			}
			if lastF[gid] != f-1 || last[gid] < 0 {
				continue
			}
			for b, pid := range pf.id {
				if pid == last[gid] && iou(gf.box[a], pf.box[b]) >= MatchIoU {
					cur[a] = b
					pused[b] = true
				}
			}
		}
		// The rest: maximum matching, then least total distance.
		nr, nc := len(gf.id), len(pf.id)
		cost = slices.Grow(cost[:0], nr*nc)[:nr*nc]
		for a := range nr {
			for b := range nc {
				cost[a*nc+b] = math.Inf(1)
				if cur[a] < 0 && !pused[b] {
					if v := iou(gf.box[a], pf.box[b]); v >= MatchIoU {
						cost[a*nc+b] = 1 - v
					}
				}
			}
		}
		rowSol, _, err := solver.Solve(cost, nr, nc, big)
		if err != nil {
			return Metrics{}, err
		}
		for a := range nr {
			if cur[a] < 0 && rowSol[a] >= 0 {
				cur[a] = rowSol[a]
			}
		}
		for a, gid := range gf.id {
			b := cur[a]
			if b < 0 {
				m.FN++
				continue
			}
			pid := pf.id[b]
			m.TP++
			m.MOTP += iou(gf.box[a], pf.box[b])
			if last[gid] >= 0 && last[gid] != pid {
				m.IDSW++
			}
			if matched[gid] > 0 && lastF[gid] != f-1 {
				m.Frag++
			}
			last[gid] = pid
			matched[gid]++
			lastF[gid] = f
		}
		m.FP += nc - countMatched(cur)
	}
	for k := range ng {
		r := float64(matched[k]) / float64(seen[k])
		switch {
		case r >= 0.8:
			m.MT++
		case r < 0.2:
			m.ML++
		default:
			m.PT++
		}
	}
	if m.GT > 0 {
		m.MOTA = 1 - float64(m.FN+m.FP+m.IDSW)/float64(m.GT)
	}
	if m.TP > 0 {
		m.MOTP /= float64(m.TP)
	}
	if err := m.identity(overlap, ng, np, &solver); err != nil {
		return Metrics{}, err
	}
	return m, nil
}

func countMatched(cur []int) int {
	n := 0
	for _, b := range cur {
		if b >= 0 {
			n++
		}
	}
	return n
}

// identity computes IDF1, IDP and IDR: the one-to-one matching of ground-truth and tracker
// identities that maximizes the frames they share at IoU ≥ MatchIoU (IDTP); IDFN = GT − IDTP,
// IDFP = Pred − IDTP.
func (m *Metrics) identity(overlap map[[2]int]int, ng, np int, s *lap.Solver) error {
	cost := make([]float64, ng*np)
	for k, n := range overlap {
		cost[k[0]*np+k[1]] = -float64(n)
	}
	rowSol, _, err := s.Solve(cost, ng, np, 0)
	if err != nil {
		return err
	}
	for i, j := range rowSol {
		if j >= 0 {
			m.IDTP += overlap[[2]int{i, j}]
		}
	}
	m.IDFN, m.IDFP = m.GT-m.IDTP, m.Pred-m.IDTP
	if m.GT+m.Pred > 0 {
		m.IDF1 = 2 * float64(m.IDTP) / float64(m.GT+m.Pred)
	}
	if m.Pred > 0 {
		m.IDP = float64(m.IDTP) / float64(m.Pred)
	}
	if m.GT > 0 {
		m.IDR = float64(m.IDTP) / float64(m.GT)
	}
	return nil
}
