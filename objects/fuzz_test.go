package objects

import (
	"encoding/binary"
	"math"
	"slices"
	"testing"

	"github.com/vinfer/vinfer/analytics"
	"github.com/vinfer/vinfer/detect"
)

// fuzzLabels are the labels fuzzed detections and rules draw from.
var fuzzLabels = []string{"car", "truck", "bus", "person", "kite", "vehicle"}

// FuzzApply compiles fuzzed rules (a group, a filter and a mask whose numbers come from the
// input, NaN and infinities included) and applies them to fuzzed detections (22-byte records:
// label, a spare byte, score and box as float32). Rules that Validate refuses must not
// compile; a Stage must keep a subset of the detections, with no two of one group overlapping
// above its IoU, and count exactly what it dropped.
func FuzzApply(f *testing.F) {
	rec := func(label byte, v ...float32) []byte {
		b := []byte{label, 0}
		for _, x := range v {
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
		}
		return b
	}
	seed := append(rec(0, 0.9, 100, 100, 200, 200), rec(1, 0.8, 102, 101, 203, 198)...)
	seed = append(seed, rec(3, 0.7, 10, 10, 30, 90)...)
	f.Add(float32(0.001), float32(0), float32(0.5), float32(0.2), true, float32(0.5), seed)
	f.Add(float32(float32(math.NaN())), float32(float32(math.Inf(1))), float32(-1), float32(2), false, float32(0), seed)
	f.Fuzz(func(t *testing.T, minArea, maxAspect, maskX, maskY float32, normalized bool, iou float32, b []byte) {
		r := Rules{
			Groups:      map[string][]string{"vehicle": {"car", "truck", "bus"}},
			GroupNMSIoU: float64(iou),
			Filters:     []Filter{{Classes: []string{"vehicle"}, MinArea: float64(minArea), MaxAspect: float64(maxAspect), Normalized: normalized}},
			Masks: []Mask{{Polygon: []analytics.Point{{0, 0}, {float64(maskX), 0}, {float64(maskX), float64(maskY)}},
				Normalized: normalized, Classes: []string{"kite", "person"}}},
		}
		s, err := Compile(r)
		if verr := r.Validate(); (verr != nil) != (err != nil) {
			t.Fatalf("Validate %v, Compile %v", verr, err)
		}
		if err != nil {
			return
		}
		var dets []detect.Detection
		for ; len(b) >= 22 && len(dets) < 600; b = b[22:] {
			v := func(i int) float32 { return math.Float32frombits(binary.LittleEndian.Uint32(b[2+4*i:])) }
			dets = append(dets, detect.Detection{Label: fuzzLabels[int(b[0])%len(fuzzLabels)], Score: v(0), Box: [4]float32{v(1), v(2), v(3), v(4)}})
		}
		in := slices.Clone(dets)
		before := s.Masked.Load() + s.Filtered.Load() + s.Merged.Load()
		got := s.Apply(dets, 640, 480)
		if d := s.Masked.Load() + s.Filtered.Load() + s.Merged.Load() - before; int(d) != len(in)-len(got) {
			t.Fatalf("%d counted, %d dropped", d, len(in)-len(got))
		}
		for i, g := range got {
			if !slices.ContainsFunc(in, func(d detect.Detection) bool { return sameBits(d, g) }) {
				t.Fatalf("kept %+v not in the input", g)
			}
			gi, _ := s.Group(g.Label)
			for _, h := range got[:i] {
				if gh, _ := s.Group(h.Label); gi > 0 && gi == gh && detect.IoU(h.Box, g.Box) > s.iou {
					t.Fatalf("kept %+v and %+v of one group overlapping above %v", h, g, s.iou)
				}
			}
		}
	})
}

// sameBits reports whether a and b are the same detection, NaN fields included.
func sameBits(a, b detect.Detection) bool {
	if a.Label != b.Label || math.Float32bits(a.Score) != math.Float32bits(b.Score) {
		return false
	}
	for i := range a.Box {
		if math.Float32bits(a.Box[i]) != math.Float32bits(b.Box[i]) {
			return false
		}
	}
	return true
}
