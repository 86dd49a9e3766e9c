package objects

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/vinfer/vinfer/analytics"
	"github.com/vinfer/vinfer/detect"
)

// BenchmarkApply runs a stream's rules (a group of 4 classes, 2 filters, 2 masks) on 100
// detections of 8 classes on a 1920×1080 frame, half of them in the group, highest score first.
func BenchmarkApply(b *testing.B) {
	s, err := Compile(Rules{
		Groups:  map[string][]string{"vehicle": {"car", "truck", "bus", "motorbike"}},
		Filters: []Filter{{Classes: []string{"vehicle"}, MinArea: 0.0005, Normalized: true}, {Classes: []string{"person"}, MaxAspect: 1.2}},
		Masks: []Mask{{Polygon: []analytics.Point{{0, 0}, {0.2, 0}, {0.2, 0.15}, {0, 0.15}}, Normalized: true},
			{Polygon: []analytics.Point{{1500, 0}, {1920, 0}, {1920, 200}}, Classes: []string{"kite"}}},
	})
	if err != nil {
		b.Fatal(err)
	}
	labels := []string{"car", "truck", "bus", "motorbike", "person", "dog", "kite", "bicycle"}
	r := rand.New(rand.NewPCG(1, 2))
	dets := make([]detect.Detection, 100)
	for i := range dets {
		x, y := r.Float32()*1800, r.Float32()*1000
		w, h := 20+r.Float32()*200, 20+r.Float32()*200
		dets[i] = detect.Detection{Label: labels[r.IntN(len(labels))], Score: r.Float32(), Box: [4]float32{x, y, x + w, y + h}}
	}
	slices.SortFunc(dets, func(a, b detect.Detection) int { return cmp.Compare(b.Score, a.Score) }) // as decoders give them
	work := make([]detect.Detection, len(dets))
	b.ReportAllocs()
	for b.Loop() {
		copy(work, dets)
		s.Apply(work, 1920, 1080)
	}
}
