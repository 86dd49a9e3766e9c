package pipeline

import (
	"testing"
	"time"

	"github.com/vinfer/vinfer/detect"
	"github.com/vinfer/vinfer/frame"
	"github.com/vinfer/vinfer/preprocess"
	"github.com/vinfer/vinfer/sink"
)

// TestCascadeCropClipped: a padded box reaching past the frame is clipped to it; a crop smaller
// than min_size is skipped.
func TestCascadeCropClipped(t *testing.T) {
	c := &cascadeRunner{Cascade: Cascade{Padding: 0.5, MinSize: 20, MaxCrops: 8}}
	f := &frame.Frame{Width: 320, Height: 240}
	res := &sink.Result{Stream: "s", Detections: []detect.Detection{
		{Score: 0.9, Box: [4]float32{-40, 200, 100, 260}}, // past the left and bottom edges
		{Score: 0.9, Box: [4]float32{150, 100, 160, 110}}, // 10×10, 20×20 padded: kept
		{Score: 0.9, Box: [4]float32{300, 10, 306, 16}},   // 6×6, 12×12 padded: skipped
	}}
	c.collect(res, f)
	if len(c.jobs) != 2 {
		t.Fatalf("%d crops, want 2", len(c.jobs))
	}
	if got, want := c.jobs[0].box, [4]float32{0, 170, 170, 240}; got != want {
		t.Errorf("crop %v, want %v (clipped to the frame)", got, want)
	}
}

// TestCascadeCadence: with every: 1s an object followed by box overlap is cropped at 0 s and
// 1 s, not in between; a new object at once; with once, never again.
func TestCascadeCadence(t *testing.T) {
	f := &frame.Frame{Width: 640, Height: 360}
	for _, tc := range []struct {
		name  string
		c     Cascade
		crops []int // crops per frame, frames at 0, 0.5, 1.0, 1.5 s
	}{
		{"every 1s", Cascade{Every: time.Second}, []int{1, 0, 1, 1}},
		{"once", Cascade{Once: true}, []int{1, 0, 0, 1}},
		{"every frame", Cascade{}, []int{1, 1, 1, 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := newCascadeRunner(tc.c, &modelRunner{spec: preprocess.Spec{Width: 8, Height: 8, Scale: 1, Std: [3]float32{1, 1, 1}}})
			if err != nil {
				t.Fatal(err)
			}
			for i, want := range tc.crops {
				x := float32(100 + 10*i) // moving right, overlapping its last box
				res := &sink.Result{Stream: "s", PTS: time.Duration(i) * 500 * time.Millisecond,
					Detections: []detect.Detection{{Score: 0.9, Box: [4]float32{x, 100, x + 100, 150}}}}
				if i == 3 { // a second object far away
					res.Detections = append(res.Detections, detect.Detection{Score: 0.8, Box: [4]float32{500, 300, 600, 350}})
				}
				c.jobs = c.jobs[:0]
				c.collect(res, f)
				if len(c.jobs) != want {
					t.Errorf("frame %d: %d crops, want %d", i, len(c.jobs), want)
				}
			}
		})
	}
}
