package track

import (
	"math"
	"testing"
)

func TestIoU(t *testing.T) {
	cases := []struct {
		name string
		a, b [4]float64
		want float64
	}{
		// 10×10 pixels each (0..9 inclusive), shifted by 5: 5·10 / (100 + 100 − 50).
		{"half shifted", [4]float64{0, 0, 9, 9}, [4]float64{5, 0, 14, 9}, 50.0 / 150},
		{"same", [4]float64{3, 4, 20, 30}, [4]float64{3, 4, 20, 30}, 1},
		{"inside", [4]float64{0, 0, 9, 9}, [4]float64{0, 0, 4, 4}, 25.0 / 100},
		{"touching pixels", [4]float64{0, 0, 9, 9}, [4]float64{9, 0, 18, 9}, 10.0 / 190},
		{"apart", [4]float64{0, 0, 9, 9}, [4]float64{11, 0, 20, 9}, 0},
		{"apart vertically", [4]float64{0, 0, 9, 9}, [4]float64{0, 10, 9, 19}, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := iou(c.a, c.b); math.Abs(got-c.want) > 1e-12 {
				t.Fatalf("iou = %v, want %v", got, c.want)
			}
			if got := iou(c.b, c.a); math.Abs(got-c.want) > 1e-12 {
				t.Fatalf("iou reversed = %v, want %v", got, c.want)
			}
		})
	}
}
