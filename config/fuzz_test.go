package config

import (
	"testing"
)

// FuzzParse: any bytes give a Config or an error, never a panic; a Config that parsed
// validates again without error (parse, don't re-validate).
func FuzzParse(f *testing.F) {
	for _, c := range parseCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := Parse(b)
		if err != nil {
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("parsed config fails validation: %v", err)
		}
	})
}

// parseCases seed the fuzzer: valid and invalid configurations.
var parseCases = []string{
	"models: [{name: m, path: x.onnx, max_batch: 8, max_delay: 2ms, preprocess: {color: rgb, resize: stretch, pad: 0}}]\nstreams: [{id: a, source: a.mp4, model: m, loop: true, interval: 2, max_fps: 5, drop: oldest}]",
	"models: [{name: m, path: x, provider: cuda}]\nstreams: [{id: a, source: f, model: m, decoder: nvdec, gpu: 1}]",
	"models: [{name: m, path: x, family: yolo11}]\noutput: {jsonl: out.jsonl, sinks: [{type: jsonl, path: '-'}]}",
	"models: [{name: m, path: x, famly: yolox}]",
	"streams: [{id: '../x', source: f, model: n}]",
	"models: [{name: m, path: x, preprocess: {std: [1, 0, 1]}}]",
	"{",
	"",
}
