package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSinkErrorNamesFileLine: a sink's settings error named a position inside the sink's own
// snippet ("[1:9] string was used where mapping is expected" for `outbox: DIR`; issue 29, item
// 8e). It names the configuration file's line and the field's path.
func TestSinkErrorNamesFileLine(t *testing.T) {
	a := assets(t)
	cfg := `models: [{name: yolox, path: ` + filepath.Join(a, "models/yolox_nano_416.onnx") + `}]
streams: [{id: cars, source: ` + filepath.Join(a, "videos/car-detection.mp4") + `, model: yolox}]
output:
  jsonl: none
  sinks:
    - type: mqtt
      url: mqtt://127.0.0.1:1883
      outbox: /var/lib/vinfer
`
	path := filepath.Join(t.TempDir(), "run.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := vinfer(t, "run", "--config", path, "--http", "none")
	if code == 0 || !strings.Contains(stderr, "output.sinks[0].outbox (line 8, column 15)") {
		t.Fatalf("exit status %d, want the field and its line and column:\n%s", code, stderr)
	}
}

// TestSinkNestedErrorNamesPath: an error in a setting nested under a sink (outbox fsync,
// max_bytes, max_age) named only the sink's field ("output.sinks[1].outbox") or only the
// sub-field's own words. It names the full path and the line of the nested field.
func TestSinkNestedErrorNamesPath(t *testing.T) {
	a := assets(t)
	for _, c := range []struct {
		field, value, want string
	}{
		{"fsync", "sometimes", "output.sinks[1].outbox.fsync (line 11"},
		{"max_bytes", "lots", "output.sinks[1].outbox.max_bytes (line 11"},
		{"max_age", "forever", "output.sinks[1].outbox.max_age (line 11"},
		{"max_age", "-1s", "output.sinks[1].outbox.max_age (line 11"},
	} {
		cfg := `models: [{name: yolox, path: ` + filepath.Join(a, "models/yolox_nano_416.onnx") + `}]
streams: [{id: cars, source: ` + filepath.Join(a, "videos/car-detection.mp4") + `, model: yolox}]
output:
  jsonl: none
  sinks:
    - type: mqtt
      url: mqtt://127.0.0.1:1883
    - type: mqtt
      name: second
      outbox:
        ` + c.field + `: ` + c.value + `
      url: mqtt://127.0.0.1:1883
`
		path := filepath.Join(t.TempDir(), "run.yaml")
		if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
		_, stderr, code := vinfer(t, "run", "--config", path, "--http", "none")
		if code == 0 || !strings.Contains(stderr, c.want) {
			t.Errorf("%s: %s: exit status %d, want %q:\n%s", c.field, c.value, code, c.want, stderr)
		}
		if testing.Verbose() {
			t.Log(stderr)
		}
	}
}
