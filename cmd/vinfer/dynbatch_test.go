package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestDynamicBatch: `vinfer dynamic-batch` writes YOLOX-Nano's dynamic-batch copy, which
// detects what the original does; FastestDet is refused with the reason, exit status 1.
func TestDynamicBatch(t *testing.T) {
	a := assets(t)
	out := filepath.Join(t.TempDir(), "dyn.onnx")
	yolox := filepath.Join(a, "models/yolox_nano_416.onnx")
	stdout, stderr, code := vinfer(t, "dynamic-batch", yolox, out)
	if code != 0 || !strings.Contains(stdout, "3 Reshape(s) patched") || !strings.Contains(stdout, "Focus: 8 Slices → 1 Conv") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if _, err := os.Stat(out); err != nil {
		t.Fatal(err)
	}
	img := filepath.Join(a, "images/dog.jpg")
	want, _, _ := vinfer(t, "detect", "--model", yolox, "--input", img, "--threads", "1")
	got, stderr, code := vinfer(t, "detect", "--model", out, "--input", img, "--threads", "1")
	// The lines differ only in the model's name, taken from the file name.
	if code != 0 || strings.Replace(got, `"model":"dyn"`, `"model":"yolox_nano_416"`, 1) != want {
		t.Errorf("detections of the rewrite (exit %d, %s):\n%s\nwant:\n%s", code, stderr, got, want)
	}
	_, stderr, code = vinfer(t, "dynamic-batch", filepath.Join(a, "models/fastestdet_352.onnx"), filepath.Join(t.TempDir(), "x.onnx"))
	if code != 1 || !strings.Contains(stderr, "puts 24 first, not the batch") {
		t.Errorf("FastestDet: exit %d, stderr %q", code, stderr)
	}
	if _, _, code = vinfer(t, "dynamic-batch", yolox); code != 1 {
		t.Errorf("one argument: exit %d, want 1", code)
	}
}

// TestReadRegular: dynamic-batch's input is a regular file (links resolved) of bounded size;
// devices, FIFOs (which would block), directories and larger files are clear errors.
func TestReadRegular(t *testing.T) {
	dir := t.TempDir()
	ok := filepath.Join(dir, "m.onnx")
	if err := os.WriteFile(ok, []byte("0123456789"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.onnx")
	if err := os.Symlink(ok, link); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	zero := filepath.Join(dir, "zero")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		path string
		max  int64
		want string // "" for success
	}{
		{ok, 10, ""},
		{link, 10, ""},
		{ok, 9, "more than"},
		{fifo, 10, "not a regular file"},
		{zero, 10, "not a regular file"},
		{dir, 10, "not a regular file"},
		{filepath.Join(dir, "missing"), 10, "no such file"},
	}
	for _, c := range cases {
		b, err := readRegular(c.path, c.max)
		if c.want == "" && (err != nil || string(b) != "0123456789") || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s (max %d): %q, %v, want %q", c.path, c.max, b, err, c.want)
		}
	}
}
