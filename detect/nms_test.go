package detect

import (
	"math"
	"slices"
	"testing"
)

func TestIoU(t *testing.T) {
	for _, tc := range []struct {
		a, b [4]float32
		want float32
	}{
		{[4]float32{0, 0, 10, 10}, [4]float32{0, 0, 10, 10}, 1},
		{[4]float32{0, 0, 10, 10}, [4]float32{5, 0, 15, 10}, 50.0 / 150},
		{[4]float32{0, 0, 10, 10}, [4]float32{10, 0, 20, 10}, 0}, // touching
		{[4]float32{0, 0, 10, 10}, [4]float32{20, 20, 30, 30}, 0},
		{[4]float32{0, 0, 10, 10}, [4]float32{2, 2, 4, 4}, 4.0 / 100},
		{[4]float32{0, 0, 0, 0}, [4]float32{0, 0, 0, 0}, 0}, // no area
		{[4]float32{0, 0, 10, 10}, [4]float32{float32(math.NaN()), 0, 5, 5}, 0},
	} {
		if got := IoU(tc.a, tc.b); math.Abs(float64(got-tc.want)) > 1e-6 {
			t.Errorf("IoU(%v, %v) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
		if IoU(tc.a, tc.b) != IoU(tc.b, tc.a) {
			t.Errorf("IoU(%v, %v) is not symmetric", tc.a, tc.b)
		}
	}
}

// nmsCases are shared with FuzzNMS as seeds.
var nmsCases = []struct {
	name       string
	dets       []Detection
	iou        float32
	classAware bool
	want       []float32 // kept scores, in order
}{
	{"empty", nil, 0.5, true, nil},
	{"sorts", []Detection{
		{Score: 0.2, Box: [4]float32{0, 0, 10, 10}},
		{Score: 0.9, Box: [4]float32{20, 0, 30, 10}},
		{Score: 0.5, Box: [4]float32{40, 0, 50, 10}},
	}, 0.5, true, []float32{0.9, 0.5, 0.2}},
	{"suppresses", []Detection{
		{Score: 0.8, Box: [4]float32{1, 0, 11, 10}},
		{Score: 0.9, Box: [4]float32{0, 0, 10, 10}},
		{Score: 0.7, Box: [4]float32{50, 50, 60, 60}},
	}, 0.5, true, []float32{0.9, 0.7}},
	{"iou at the threshold stays", []Detection{
		{Score: 0.9, Box: [4]float32{0, 0, 10, 10}},
		{Score: 0.8, Box: [4]float32{5, 0, 15, 10}}, // IoU 1/3
	}, 1.0 / 3, true, []float32{0.9, 0.8}},
	{"class aware", []Detection{
		{ClassID: 0, Score: 0.9, Box: [4]float32{0, 0, 10, 10}},
		{ClassID: 1, Score: 0.8, Box: [4]float32{0, 0, 10, 10}},
		{ClassID: 1, Score: 0.7, Box: [4]float32{0, 0, 10, 10}},
	}, 0.5, true, []float32{0.9, 0.8}},
	{"class agnostic", []Detection{
		{ClassID: 0, Score: 0.9, Box: [4]float32{0, 0, 10, 10}},
		{ClassID: 1, Score: 0.8, Box: [4]float32{0, 0, 10, 10}},
	}, 0.5, false, []float32{0.9}},
	{"suppressed boxes do not suppress", []Detection{ // B is dropped by A, so C (overlapping B only) stays
		{Score: 0.9, Box: [4]float32{0, 0, 10, 10}},
		{Score: 0.8, Box: [4]float32{4, 0, 14, 10}},
		{Score: 0.7, Box: [4]float32{10, 0, 20, 10}},
	}, 0.3, true, []float32{0.9, 0.7}},
}

func TestNMS(t *testing.T) {
	for _, tc := range nmsCases {
		t.Run(tc.name, func(t *testing.T) {
			dets := slices.Clone(tc.dets)
			got := NMS(dets, tc.iou, tc.classAware)
			var scores []float32
			for _, d := range got {
				scores = append(scores, d.Score)
			}
			if !slices.Equal(scores, tc.want) {
				t.Errorf("kept %v, want %v", scores, tc.want)
			}
		})
	}
}

func TestNMSStableAndLimit(t *testing.T) {
	dets := []Detection{
		{ClassID: 1, Score: 0.5, Box: [4]float32{0, 0, 1, 1}},
		{ClassID: 2, Score: 0.5, Box: [4]float32{5, 5, 6, 6}},
		{ClassID: 3, Score: 0.6, Box: [4]float32{9, 9, 10, 10}},
	}
	got := nms(dets, 0.5, true, 2)
	if len(got) != 2 || got[0].ClassID != 3 || got[1].ClassID != 1 {
		t.Errorf("%+v", got)
	}
}

func TestNMSZeroAllocs(t *testing.T) {
	dets := make([]Detection, 500)
	work := make([]Detection, len(dets))
	for i := range dets {
		x := float32(i % 50 * 7)
		dets[i] = Detection{ClassID: i % 3, Score: float32(i%97) / 97, Box: [4]float32{x, x, x + 20, x + 20}}
	}
	if a := testing.AllocsPerRun(10, func() {
		copy(work, dets)
		NMS(work, 0.45, true)
	}); a != 0 {
		t.Errorf("%v allocations per NMS", a)
	}
}
