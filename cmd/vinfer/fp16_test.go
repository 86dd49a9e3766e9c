package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestFP16Cmd: `vinfer fp16` writes YOLOX-Nano's float16 rewrite, which `vinfer detect` loads
// and finds the dog in; a model without a Conv to convert is refused, exit status 1.
func TestFP16Cmd(t *testing.T) {
	a := assets(t)
	out := filepath.Join(t.TempDir(), "half.onnx")
	stdout, stderr, code := vinfer(t, "fp16", filepath.Join(a, "models/yolox_nano_416.onnx"), out)
	if code != 0 || !strings.Contains(stdout, "tensors converted") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	got, stderr, code := vinfer(t, "detect", "--model", out, "--input", filepath.Join(a, "images/dog.jpg"), "--threads", "1")
	if code != 0 || !strings.Contains(got, `"label":"dog"`) {
		t.Errorf("detect with the rewrite: exit %d, %s\n%s", code, stderr, got)
	}
	if _, stderr, code = vinfer(t, "fp16", "/dev/null", filepath.Join(t.TempDir(), "x.onnx")); code != 1 || stderr == "" {
		t.Errorf("/dev/null: exit %d, stderr %q", code, stderr)
	}
}
