package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParseValid(t *testing.T) {
	c, err := Parse([]byte(`
models:
  - name: yolox
    path: models/yolox.onnx
    max_batch: 8
    max_delay: 2ms
    preprocess: {color: bgr, resize: letterbox, align: top-left, pad: 114}
streams:
  - {id: a, source: videos/a.mp4, model: yolox, loop: true, interval: 2}
  - {id: cam, source: "rtsp://u:p@127.0.0.1/x", model: yolox, drop: oldest, transport: tcp}
`))
	if err != nil {
		t.Fatal(err)
	}
	if time.Duration(c.Models[0].MaxDelay) != 2*time.Millisecond || c.Models[0].MaxBatch != 8 {
		t.Fatalf("model %+v", c.Models[0])
	}
	if len(c.Streams) != 2 || !c.Streams[0].Loop || c.Streams[1].Transport != TransportTCP {
		t.Fatalf("streams %+v", c.Streams)
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct{ name, yaml, want string }{
		{"unknown field", "models: [{name: m, path: x, famly: yolox}]", "famly"},
		{"unknown model", "models: [{name: m, path: x}]\nstreams: [{id: a, source: f, model: n}]", `model "n" is not declared`},
		{"duplicate stream", "models: [{name: m, path: x}]\nstreams: [{id: a, source: f, model: m}, {id: a, source: g, model: m}]", "duplicate stream id"},
		{"bad family", "models: [{name: m, path: x, family: yolo9000}]", "family"},
		{"bad duration", "models: [{name: m, path: x, max_delay: soon}]", "duration"},
		{"bad drop", "models: [{name: m, path: x}]\nstreams: [{id: a, source: f, model: m, drop: newest}]", "drop"},
		{"zero std", "models: [{name: m, path: x, preprocess: {std: [1, 0, 1]}}]", "divide by zero"},
		{"missing path", "models: [{name: m}]", "path to the .onnx file is required"},
		{"bad decoder", "models: [{name: m, path: x}]\nstreams: [{id: a, source: f, model: m, decoder: cuda}]", `decoder "cuda": unknown value (use cpu or nvdec)`},
		{"nvdec on a cpu model", "models: [{name: m, path: x}]\nstreams: [{id: a, source: f, model: m, decoder: nvdec}]", `model "m" needs provider: cuda (it has cpu, the default)`},
		{"nvdec on a tensorrt model", "models: [{name: m, path: x, provider: tensorrt}]\nstreams: [{id: a, source: f, model: m, decoder: nvdec}]", `needs provider: cuda (it has tensorrt)`},
		{"nvdec with a cascade on the CPU", "models: [{name: m, path: x, provider: cuda, cascade: [{model: n}]}, {name: n, path: y}]\nstreams: [{id: a, source: f, model: m, decoder: nvdec}]", `cascades to "n", which needs provider: cuda`},
		{"negative gpu", "models: [{name: m, path: x, provider: cuda}]\nstreams: [{id: a, source: f, model: m, decoder: nvdec, gpu: -1}]", "gpu -1 must be a device ordinal"},
		{"gpu without nvdec", "models: [{name: m, path: x, provider: cuda}]\nstreams: [{id: a, source: f, model: m, gpu: 0}]", "gpu applies to decoder: nvdec only"},
		{"gpu not a number", "models: [{name: m, path: x, provider: cuda}]\nstreams: [{id: a, source: f, model: m, decoder: nvdec, gpu: first}]", "gpu"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.yaml))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to mention %q", err, tc.want)
			}
		})
	}
}

func TestParseGPUStreams(t *testing.T) {
	c, err := Parse([]byte(`
models:
  - {name: gpu, path: m.onnx, provider: cuda, max_batch: 8}
  - {name: cpu, path: m.onnx}
streams:
  - {id: a, source: a.mp4, model: gpu, decoder: nvdec}
  - {id: b, source: b.mp4, model: gpu, decoder: nvdec, gpu: 1}
  - {id: c, source: c.mp4, model: gpu, decoder: cpu}
  - {id: d, source: d.mp4, model: cpu}
`))
	if err != nil {
		t.Fatal(err)
	}
	s := c.Streams
	if !s[0].OnGPU() || s[0].GPU != nil || !s[1].OnGPU() || s[1].GPU == nil || *s[1].GPU != 1 || s[2].OnGPU() || s[3].OnGPU() {
		t.Fatalf("streams %+v", s)
	}
}

func TestLoadResolvesRelativePaths(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "run.yaml")
	os.WriteFile(p, []byte("models: [{name: m, path: m.onnx, labels: l.names}]\nstreams: [{id: a, source: v.mp4, model: m}, {id: b, source: 'rtsp://h/x', model: m}]\n"), 0o644)
	c, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	if c.Models[0].Path != filepath.Join(dir, "m.onnx") || c.Models[0].Labels != filepath.Join(dir, "l.names") ||
		c.Streams[0].Source != filepath.Join(dir, "v.mp4") || c.Streams[1].Source != "rtsp://h/x" {
		t.Fatalf("%+v %+v", c.Models, c.Streams)
	}
	if _, err := Load(filepath.Join(dir, "missing.yaml")); err == nil {
		t.Fatal("no error for a missing file")
	}
}

func TestClusterSection(t *testing.T) {
	ok := "models: [{name: m, path: m.onnx}]\ncluster: {nats: \"nats://a:4222,nats://b:4222\", node: n-1, weight: 2, max_streams: 10, lease: 3s, on_nats_unavailable: standalone}\n"
	c, err := Parse([]byte(ok))
	if err != nil {
		t.Fatal(err)
	}
	if c.Cluster.LeaseDuration().Seconds() != 3 || c.Cluster.BucketName() != "vinfer" || c.Cluster.NodeWeight() != 2 {
		t.Fatalf("%+v", c.Cluster)
	}
	for _, bad := range []string{
		"cluster: {}",
		"cluster: {nats: \"nats://a:4222\", on_nats_unavailable: maybe}",
		"cluster: {nats: \"nats://a:4222\", lease: 10ms}",
		"cluster: {nats: \"nats://a:4222\", node: \"a b\"}",
		"cluster: {nats: \"nats://a:4222\", advertise: \"ftp://x\"}",
		"cluster: {nats: \"nats://a:4222\", bogus: 1}",
	} {
		if _, err := Parse([]byte("models: [{name: m, path: m.onnx}]\n" + bad + "\n")); err == nil {
			t.Errorf("%s: accepted", bad)
		}
	}
}
