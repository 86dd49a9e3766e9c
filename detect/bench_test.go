package detect_test

import (
	"testing"

	"github.com/vinfer/vinfer/detect"
)

// BenchmarkDecodeReal decodes real model outputs (the bundled models on the shared pictures):
// candidates, NMS, mapping to the source frame. At threshold 0.01 YOLOX keeps hundreds of
// candidates, which stresses NMS.
func BenchmarkDecodeReal(b *testing.B) {
	for _, bc := range []struct {
		name, model, image string
		score              float32
	}{
		{"yolox/dog", "yolox_nano_416.onnx", "dog.jpg", 0},
		{"yolox/dog/thr0.01", "yolox_nano_416.onnx", "dog.jpg", 0.01},
		{"yolox/office", "yolox_nano_416.onnx", "office_person_frame60s.jpg", 0},
		{"fastestdet/dog", "fastestdet_352.onnx", "dog.jpg", 0},
		{"ultraface/office", "ultraface_rfb_320.onnx", "office_face_frame690.jpg", 0},
	} {
		b.Run(bc.name, func(b *testing.B) {
			r := openBundled(b, bc.model, bc.image, func(p *detect.Params) {
				if bc.score > 0 {
					p.ScoreThreshold = bc.score
				}
			})
			defer r.close()
			dets := r.dec.Decode(r.outs, 0, r.tr, nil)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				dets = r.dec.Decode(r.outs, 0, r.tr, dets[:0])
			}
			b.ReportMetric(float64(len(dets)), "dets")
		})
	}
}
