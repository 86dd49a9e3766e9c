package detect

import (
	"cmp"
	"slices"
)

// IoU is the intersection over union of two [x1,y1,x2,y2] boxes (0 when either is empty).
func IoU(a, b [4]float32) float32 {
	iw := min(a[2], b[2]) - max(a[0], b[0])
	ih := min(a[3], b[3]) - max(a[1], b[1])
	if iw <= 0 || ih <= 0 {
		return 0
	}
	inter := iw * ih
	union := (a[2]-a[0])*(a[3]-a[1]) + (b[2]-b[0])*(b[3]-b[1]) - inter
	if union <= 0 {
		return 0
	}
	return inter / union
}

// NMS performs greedy non-maximum suppression in place: dets are sorted by score (highest
// first) and every box overlapping a kept box of the same class (any class when classAware is
// false) by more than iou is removed. It returns the kept prefix of dets and allocates nothing.
func NMS(dets []Detection, iou float32, classAware bool) []Detection {
	slices.SortStableFunc(dets, func(a, b Detection) int { return cmp.Compare(b.Score, a.Score) })
	n := 0
	for i := range dets {
		keep := true
		for j := 0; j < n; j++ {
			if classAware && dets[j].ClassID != dets[i].ClassID {
				continue
			}
			if IoU(dets[j].Box, dets[i].Box) > iou {
				keep = false
				break
			}
		}
		if keep {
			dets[n] = dets[i]
			n++
		}
	}
	return dets[:n]
}
