package config

import (
	"encoding/json"
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

// FuzzStreamJSON: any bytes as the body of POST /api/streams decode to a Stream or fail; a
// Stream that decoded and validated survives a JSON round trip unchanged and still validates.
func FuzzStreamJSON(f *testing.F) {
	for _, c := range streamJSONCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var s Stream
		if json.Unmarshal(b, &s) != nil || s.Validate() != nil {
			return
		}
		out, err := json.Marshal(s)
		if err != nil {
			t.Fatalf("marshal %+v: %v", s, err)
		}
		var back Stream
		if err := json.Unmarshal(out, &back); err != nil {
			t.Fatalf("round trip of %s: %v", out, err)
		}
		if err := back.Validate(); err != nil {
			t.Fatalf("round trip of %s no longer validates: %v", out, err)
		}
		if again, _ := json.Marshal(back); string(again) != string(out) {
			t.Fatalf("round trip changed %s into %s", out, again)
		}
	})
}

// streamJSONCases seed FuzzStreamJSON: API request bodies, valid and not.
var streamJSONCases = []string{
	`{"id":"cam1","source":"rtsp://u:p@127.0.0.1/x","model":"m","transport":"tcp","drop":"oldest","interval":2,"max_fps":5}`,
	`{"id":"g","source":"a.mp4","model":"m","decoder":"nvdec","gpu":1,"loop":true}`,
	`{"id":"z","source":"a.mp4","model":"m","zones":[{"name":"t","polygon":[[1,1],[50,1],[50,50]]}],"lines":[{"name":"l","points":[[0,0],[9,9]]}]}`,
	`{"id":"n","source":"a.mp4","model":"m","tracker":"none"}`,
	`{"id":"k","source":"a.mp4","model":"m","tracker":{"track_thresh":0.6,"track_buffer":"2s"}}`,
	`{"id":"../x","source":"y"}`,
	`{"id":"x","source":"y","model":"m","decoder":"gpu"}`,
	`{"id":"x","source":"y","model":"m","max_fps":-1}`,
	`{`,
}
