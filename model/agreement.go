package model

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/vinfer/vinfer/detect"
)

// Agreement of two detection lists of the same pictures (float32's, and float16's): each of the
// reference's detections is matched greedily to the other's detection of the same class with
// the highest IoU, which is then used up; a match counts when IoU ≥ AgreeIoU and the scores
// differ by at most AgreeScore (issue 28's rule, scripts/gpu/compare_dets.py).
type Agreement struct {
	// Boxes are the reference's detections; Matched those matched by the rule.
	Boxes, Matched int
	// WorstScore is the largest score difference of a pair at IoU ≥ AgreeIoU.
	WorstScore float64
	// Ref and Got count the detections per label in each list.
	Ref, Got map[string]int
}

// The match rule of Agreement.
const (
	AgreeIoU   = 0.9
	AgreeScore = 0.02
)

// Add matches one picture's detections got against the reference ref.
func (a *Agreement) Add(ref, got []detect.Detection) {
	if a.Ref == nil {
		a.Ref, a.Got = map[string]int{}, map[string]int{}
	}
	left := slices.Clone(got)
	for _, d := range got {
		a.Got[d.Label]++
	}
	for _, r := range ref {
		a.Ref[r.Label]++
		a.Boxes++
		best, bi := 0.0, -1
		for i, g := range left {
			if g.Label == r.Label {
				if v := boxIoU(r.Box, g.Box); v > best {
					best, bi = v, i
				}
			}
		}
		if bi < 0 || best < AgreeIoU {
			continue
		}
		ds := math.Abs(float64(r.Score - left[bi].Score))
		a.WorstScore = max(a.WorstScore, ds)
		if ds <= AgreeScore {
			a.Matched++
		}
		left = slices.Delete(left, bi, bi+1)
	}
}

// Share is Matched / Boxes (1 for no boxes).
func (a *Agreement) Share() float64 {
	if a.Boxes == 0 {
		return 1
	}
	return float64(a.Matched) / float64(a.Boxes)
}

// SameCounts reports whether both lists hold as many detections of each label.
func (a *Agreement) SameCounts() bool { return maps.Equal(a.Ref, a.Got) }

func (a *Agreement) String() string {
	s := fmt.Sprintf("%d of %d boxes matched (%.1f %%), worst score difference %.3f", a.Matched, a.Boxes, 100*a.Share(), a.WorstScore)
	if !a.SameCounts() {
		var diff []string
		for _, l := range slices.Sorted(maps.Keys(a.Ref)) {
			if a.Ref[l] != a.Got[l] {
				diff = append(diff, fmt.Sprintf("%s %d → %d", l, a.Ref[l], a.Got[l]))
			}
		}
		for _, l := range slices.Sorted(maps.Keys(a.Got)) {
			if _, ok := a.Ref[l]; !ok {
				diff = append(diff, fmt.Sprintf("%s 0 → %d", l, a.Got[l]))
			}
		}
		s += "; counts " + strings.Join(diff, ", ")
	}
	return s
}

// boxIoU is the intersection over union of two [x1,y1,x2,y2] boxes (0 for empty ones).
func boxIoU(a, b [4]float32) float64 {
	x1, y1 := max(a[0], b[0]), max(a[1], b[1])
	x2, y2 := min(a[2], b[2]), min(a[3], b[3])
	in := float64(max(0, x2-x1)) * float64(max(0, y2-y1))
	u := float64((a[2]-a[0])*(a[3]-a[1])) + float64((b[2]-b[0])*(b[3]-b[1])) - in
	if u <= 0 {
		return 0
	}
	return in / u
}
