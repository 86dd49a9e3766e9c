package detect

import (
	"cmp"
	"slices"
)

// IoU is the intersection over union of two [x1,y1,x2,y2] boxes: 0 when they do not overlap or
// either has no area.
func IoU(a, b [4]float32) float32 {
	iw := min(a[2], b[2]) - max(a[0], b[0])
	ih := min(a[3], b[3]) - max(a[1], b[1])
	if !(iw > 0 && ih > 0) {
		return 0
	}
	inter := iw * ih
	union := (a[2]-a[0])*(a[3]-a[1]) + (b[2]-b[0])*(b[3]-b[1]) - inter
	if !(union > 0) {
		return 0
	}
	return inter / union
}

// NMS is greedy non-maximum suppression, in place: it sorts dets by score, highest first (ties
// keep their order), then drops every box whose IoU with a higher-scored kept box exceeds iou.
// With classAware only boxes of the same ClassID suppress each other (the per-class NMS of the
// reference implementations); otherwise any two do. It returns the kept prefix of dets and
// allocates nothing. Cost: O(n log n + n·k) for n boxes of which k are kept.
func NMS(dets []Detection, iou float32, classAware bool) []Detection {
	return nms(dets, iou, classAware, len(dets))
}

// nms is NMS that stops once limit boxes are kept: the later ones score lower and would be cut.
func nms(dets []Detection, iou float32, classAware bool, limit int) []Detection {
	slices.SortStableFunc(dets, byScore)
	n := 0
	for i := 0; i < len(dets) && n < limit; i++ {
		d := &dets[i]
		keep := true
		for j := 0; j < n; j++ {
			if classAware && dets[j].ClassID != d.ClassID {
				continue
			}
			if IoU(dets[j].Box, d.Box) > iou {
				keep = false
				break
			}
		}
		if keep {
			dets[n] = *d
			n++
		}
	}
	return dets[:n]
}

func byScore(a, b Detection) int { return cmp.Compare(b.Score, a.Score) }
