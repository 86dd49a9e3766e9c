package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"github.com/vinfer/vinfer/internal/testutil"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

var bin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "vinfer-cli")
	if err != nil {
		panic(err)
	}
	bin = filepath.Join(dir, "vinfer")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		panic(string(out))
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func assets(t testing.TB) string {
	_, f, _, _ := runtime.Caller(0)
	for d := filepath.Dir(f); filepath.Dir(d) != d; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return filepath.Join(d, "assets")
		}
	}
	t.Fatal("go.mod not found")
	return ""
}

func vinfer(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return o.String(), e.String(), code
}

type line struct {
	Source     string  `json:"source"`
	Frame      int64   `json:"frame"`
	PTS        float64 `json:"pts"`
	Width      int     `json:"width"`
	Height     int     `json:"height"`
	Detections []struct {
		ClassID int        `json:"class_id"`
		Label   string     `json:"label"`
		Score   float64    `json:"score"`
		Box     [4]float64 `json:"box"`
	} `json:"detections"`
}

func TestDetectImage(t *testing.T) {
	a := assets(t)
	out, errOut, code := vinfer(t, "detect", "--model", filepath.Join(a, "models/yolox_nano_416.onnx"), "--input", filepath.Join(a, "images/dog.jpg"))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var l line
	if err := json.Unmarshal([]byte(out), &l); err != nil {
		t.Fatalf("%v: %q", err, out)
	}
	if l.Width != 768 || l.Height != 576 || len(l.Detections) < 3 || l.Detections[0].Label != "dog" {
		t.Fatalf("%+v", l)
	}
}

func TestDetectVideoEveryFrame(t *testing.T) {
	a := assets(t)
	out, errOut, code := vinfer(t, "detect", "--model", filepath.Join(a, "models/ultraface_rfb_320.onnx"), "--input", testutil.ShortClip(t, "videos/car-detection_remux.ts", 120))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	sc := bufio.NewScanner(strings.NewReader(out))
	n := int64(0)
	for sc.Scan() {
		var l line
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatal(err)
		}
		if l.Frame != n {
			t.Fatalf("line %d is frame %d", n, l.Frame)
		}
		n++
	}
	if n != 120 {
		t.Fatalf("%d frames, want 120", n)
	}
}

// TestBadInput: each bad input gives one clear error and a non-zero exit, never a panic.
func TestBadInput(t *testing.T) {
	a := assets(t)
	tmp := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(tmp, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	text := write("notes.mp4", []byte("this is a text file, not a video\n"))
	mp4, _ := os.ReadFile(filepath.Join(a, "videos/car-detection.mp4"))
	truncated := write("truncated.mp4", mp4[:len(mp4)/3])
	notONNX := write("model.onnx", []byte("not a model"))
	badLabels := write("three.names", []byte("a\nb\nc\n"))
	noFamily := filepath.Join(tmp, "identity.onnx")
	gen := `import onnx,sys
from onnx import helper as h, TensorProto as T
x=h.make_tensor_value_info('images',T.FLOAT,[1,3,64,64]); y=h.make_tensor_value_info('out',T.FLOAT,[1,3,64,64])
m=h.make_model(h.make_graph([h.make_node('Identity',['images'],['out'])],'g',[x],[y]),opset_imports=[h.make_opsetid('',13)])
m.ir_version=7; onnx.save(m,sys.argv[1])`
	if out, err := exec.Command("/usr/bin/python3", "-c", gen, noFamily).CombinedOutput(); err != nil {
		t.Fatalf("generating a model with python3-onnx (installed by scripts/setup.sh): %v: %s", err, out)
	}
	yolox := filepath.Join(a, "models/yolox_nano_416.onnx")
	img := filepath.Join(a, "images/dog.jpg")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"missing input", []string{"detect", "--model", yolox, "--input", filepath.Join(tmp, "nope.mp4")}, "no such file"},
		{"text file as video", []string{"detect", "--model", yolox, "--input", text}, "not a media file"},
		{"truncated mp4", []string{"detect", "--model", yolox, "--input", truncated}, "truncated"},
		{"not onnx", []string{"detect", "--model", notONNX, "--input", img}, "ONNX"},
		{"no family", []string{"detect", "--model", noFamily, "--input", img}, "set family:"},
		{"labels count", []string{"detect", "--model", yolox, "--labels", badLabels, "--input", img}, "name 3 classes but the model outputs 80"},
		{"missing config", []string{"run", "--config", filepath.Join(tmp, "none.yaml")}, "no such file"},
		{"bad config", []string{"run", "--config", write("bad.yaml", []byte("models: [{name: m, path: x, famly: yolox}]\n"))}, "famly"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, errOut, code := vinfer(t, tc.args...)
			if code == 0 {
				t.Fatal("exit status 0")
			}
			if strings.Contains(errOut, "panic") || strings.Contains(errOut, "goroutine ") {
				t.Fatalf("panicked: %s", errOut)
			}
			if !strings.Contains(errOut, tc.want) {
				t.Fatalf("stderr %q does not mention %q", errOut, tc.want)
			}
			t.Logf("%s", strings.TrimSpace(errOut))
		})
	}
}
