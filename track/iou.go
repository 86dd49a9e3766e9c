package track

// iou returns the intersection over union of boxes [x1 y1 x2 y2] with ByteTrack's pixel-inclusive
// convention (cython_bbox: a box spans x2−x1+1 by y2−y1+1 pixels).
func iou(a, b [4]float64) float64 {
	iw := min(a[2], b[2]) - max(a[0], b[0]) + 1
	if iw <= 0 {
		return 0
	}
	ih := min(a[3], b[3]) - max(a[1], b[1]) + 1
	if ih <= 0 {
		return 0
	}
	inter := iw * ih
	return inter / ((a[2]-a[0]+1)*(a[3]-a[1]+1) + (b[2]-b[0]+1)*(b[3]-b[1]+1) - inter)
}
