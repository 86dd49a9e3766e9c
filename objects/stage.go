package objects

import (
	"cmp"
	"slices"
	"sync/atomic"

	"github.com/vinfer/vinfer/analytics"
	"github.com/vinfer/vinfer/detect"
)

// Stage applies a stream's Rules to its detections. It keeps no per-call state: Apply may run
// on several goroutines at once.
type Stage struct {
	rules   Rules
	group   map[string]int // label → group number (1…), 0: none
	names   []string       // group number − 1 → name
	iou     float32
	filters []filter
	masks   []mask

	// Masked, Filtered and Merged count the detections dropped by a mask, by a filter, and by
	// the NMS inside a group.
	Masked, Filtered, Merged atomic.Uint64
}

type filter struct {
	Filter
	classes matcher
}

type mask struct {
	Mask
	classes matcher
	fx, fy  float64
}

// matcher matches labels and group names (empty: all).
type matcher []string

// Compile checks r (Validate) and builds its Stage; nil, nil when r has no rule.
func Compile(r Rules) (*Stage, error) {
	if err := r.Validate(); err != nil {
		return nil, err
	}
	if r.Empty() {
		return nil, nil
	}
	s := &Stage{rules: r, group: map[string]int{}, iou: float32(cmp.Or(r.GroupNMSIoU, DefaultGroupNMSIoU))}
	for i, g := range r.GroupNames() {
		s.names = append(s.names, g)
		for _, l := range r.Groups[g] {
			s.group[l] = i + 1
		}
	}
	for _, f := range r.Filters {
		s.filters = append(s.filters, filter{Filter: f, classes: f.Classes})
	}
	for _, m := range r.Masks {
		fx, fy, _ := maskAnchor(m.Anchor)
		s.masks = append(s.masks, mask{Mask: m, classes: m.Classes, fx: fx, fy: fy})
	}
	return s, nil
}

// Rules returns the rules s was compiled from.
func (s *Stage) Rules() Rules { return s.rules }

// Group returns the group of label: its number (1…, what track.Detection.Group takes) and
// name, or 0 and "" when label is in no group. A nil Stage has no group.
func (s *Stage) Group(label string) (int, string) {
	if s == nil {
		return 0, ""
	}
	if g := s.group[label]; g > 0 {
		return g, s.names[g-1]
	}
	return 0, ""
}

func (m matcher) match(label, group string) bool {
	if len(m) == 0 {
		return true
	}
	for _, c := range m {
		if c == label || (group != "" && c == group) {
			return true
		}
	}
	return false
}

// Apply drops from dets (boxes in pixels of a w×h frame) the detections a mask or a filter
// rejects, then, inside each group, the lower-scored of two detections overlapping by more
// than GroupNMSIoU, whatever their classes. It works in place, keeps the order of what it keeps
// and returns dets shortened; it does not allocate. A nil Stage returns dets as they are.
func (s *Stage) Apply(dets []detect.Detection, w, h int) []detect.Detection {
	if s == nil {
		return dets
	}
	fw, fh := float64(w), float64(h)
	n := 0
	var masked, filtered uint64
	for i := range dets {
		d := &dets[i]
		_, group := s.Group(d.Label)
		if s.masked(d, group, fw, fh) {
			masked++
			continue
		}
		if !s.passes(d, group, fw, fh) {
			filtered++
			continue
		}
		dets[n] = *d
		n++
	}
	dets = dets[:n]
	if masked > 0 {
		s.Masked.Add(masked)
	}
	if filtered > 0 {
		s.Filtered.Add(filtered)
	}
	if len(s.names) > 0 {
		before := len(dets)
		dets = s.groupNMS(dets)
		if m := before - len(dets); m > 0 {
			s.Merged.Add(uint64(m))
		}
	}
	return dets
}

func (s *Stage) masked(d *detect.Detection, group string, w, h float64) bool {
	for i := range s.masks {
		m := &s.masks[i]
		if !m.classes.match(d.Label, group) {
			continue
		}
		b := d.Box
		x := float64(b[0]) + m.fx*float64(b[2]-b[0])
		y := float64(b[1]) + m.fy*float64(b[3]-b[1])
		if m.Normalized {
			if w <= 0 || h <= 0 {
				continue
			}
			x, y = x/w, y/h
		}
		if inside(m.Polygon, x, y) {
			return true
		}
	}
	return false
}

func (s *Stage) passes(d *detect.Detection, group string, w, h float64) bool {
	bw, bh := float64(d.Box[2]-d.Box[0]), float64(d.Box[3]-d.Box[1])
	for i := range s.filters {
		f := &s.filters[i]
		if !f.classes.match(d.Label, group) {
			continue
		}
		area := bw * bh
		if f.Normalized {
			if w <= 0 || h <= 0 {
				continue
			}
			area /= w * h
		}
		if area < f.MinArea || (f.MaxArea > 0 && area > f.MaxArea) {
			return false
		}
		if f.MinAspect > 0 || f.MaxAspect > 0 {
			if !(bh > 0) {
				return false
			}
			a := bw / bh
			if a < f.MinAspect || (f.MaxAspect > 0 && a > f.MaxAspect) {
				return false
			}
		}
	}
	return true
}

// groupNMS drops, among the detections of one group, those overlapping a higher-scored one by
// more than the IoU threshold (greedy, highest score first). Detections outside groups stay.
// dets come from a decoder, highest score first; otherwise they are sorted so first. The order
// is kept.
func (s *Stage) groupNMS(dets []detect.Detection) []detect.Detection {
	byScore := func(a, b detect.Detection) int { return cmp.Compare(b.Score, a.Score) }
	if !slices.IsSortedFunc(dets, byScore) {
		slices.SortStableFunc(dets, byScore)
	}
	// The group of each kept detection, on the stack for up to len(buf) of them.
	var buf [512]uint8
	keptGroup := func(j int) int {
		if j < len(buf) {
			return int(buf[j])
		}
		g, _ := s.Group(dets[j].Label)
		return g
	}
	n := 0
	for i := range dets {
		g, _ := s.Group(dets[i].Label)
		keep := true
		for j := 0; g > 0 && j < n; j++ {
			if keptGroup(j) == g && detect.IoU(dets[j].Box, dets[i].Box) > s.iou {
				keep = false
				break
			}
		}
		if keep {
			dets[n] = dets[i]
			if n < len(buf) {
				buf[n] = uint8(g)
			}
			n++
		}
	}
	return dets[:n]
}

// inside reports whether (x,y) is inside the closed polygon (even-odd rule).
func inside(poly []analytics.Point, x, y float64) bool {
	in := false
	j := len(poly) - 1
	for i := range poly {
		a, b := poly[i], poly[j]
		if (a[1] > y) != (b[1] > y) && x < (b[0]-a[0])*(y-a[1])/(b[1]-a[1])+a[0] {
			in = !in
		}
		j = i
	}
	return in
}
