package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vinfer/vinfer/internal/testutil"
)

// plateClip makes a 3 s, 10 fps clip of the bundled plate crop 津B6H920, slightly skewed on a
// dark border, moving right across a grey 640×360 picture.
func plateClip(t *testing.T) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "plate.mp4")
	cmd := exec.Command("ffmpeg", "-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i", "color=c=0x606060:s=640x360:r=10:d=3",
		"-i", filepath.Join(assets(t), "images/plate_crop_B6H920.jpg"), "-filter_complex",
		"[1]scale=160:-1,pad=iw+40:ih+40:20:20:color=0x303030,perspective=x0=0:y0=10:x1=W:y1=0:x2=0:y2=H-10:x3=W:y3=H:sense=destination[p];"+
			"[0][p]overlay=x='100+t*40':y=150",
		"-c:v", "libx264", "-preset", "veryfast", "-crf", "18", "-pix_fmt", "yuv420p", "-g", "10", out)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("ffmpeg: %v\n%s", err, b)
	}
	return out
}

// plateConfig declares the bundled plate detector with the bundled recognizer as its cascade.
func plateConfig(t *testing.T, clip, cascade string) string {
	a := assets(t)
	cfg := `models:
  - {name: plates, path: ` + filepath.Join(a, "models/hyperlpr3_y5fu_320x_sim.onnx") + `, family: plate,
     cascade: [{model: ocr, as: plate` + cascade + `}]}
  - {name: ocr, kind: ocr, path: ` + filepath.Join(a, "models/paddleocr_en_number_mobile_v2.0_rec.onnx") + `,
     labels: ` + filepath.Join(a, "labels/paddleocr_en_dict.txt") + `, input: {width: 160, height: 32}}
streams:
  - {id: road, source: ` + clip + `, model: plates, track_events: true}
output: {http: none}
`
	path := filepath.Join(t.TempDir(), "run.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

type plateLine struct {
	End        bool `json:"end"`
	Detections []struct {
		Label      string `json:"label"`
		TrackID    int64  `json:"track_id"`
		Attributes []struct {
			Model, Kind, Text string
			Score             float64
		} `json:"attributes"`
		Plate *struct {
			Text  string
			Score float64
			Reads int
		} `json:"plate"`
	} `json:"detections"`
	Events []struct {
		Type       string `json:"type"`
		TrackID    int64  `json:"track_id"`
		Attributes map[string]struct {
			Text  string
			Score float64
			Reads int
		} `json:"attributes"`
	} `json:"events"`
}

func readPlateLines(t *testing.T, stdout string) []plateLine {
	t.Helper()
	var ls []plateLine
	sc := bufio.NewScanner(strings.NewReader(stdout))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var l plateLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		ls = append(ls, l)
	}
	return ls
}

// TestRunPlates: `vinfer run` with the plate detector and the recognizer as its cascade (every
// 500ms, as: plate) on a clip of a moving plate: the plate's detections carry the recognizer's
// reads on about one frame in five (the cadence) and, once read, the track's voted plate
// B6H920; the track.end event carries it too.
func TestRunPlates(t *testing.T) {
	clip := plateClip(t)
	stdout, stderr, code := vinfer(t, "run", "--config", plateConfig(t, clip, ", every: 500ms, padding: 0.05"), "--all-frames")
	if code != 0 {
		t.Fatalf("exit status %d:\n%s", code, stderr)
	}
	var frames, plates, reads, voted int
	var last string
	var ended bool
	for _, l := range readPlateLines(t, stdout) {
		if !l.End {
			frames++
		}
		for _, d := range l.Detections {
			if d.Label != "plate" {
				continue
			}
			plates++
			for _, a := range d.Attributes {
				if a.Kind == "ocr" && a.Model == "ocr" {
					reads++
					t.Logf("read %q %.3f", a.Text, a.Score)
				}
			}
			if d.Plate != nil {
				voted++
				last = d.Plate.Text
			}
		}
		for _, e := range l.Events {
			if e.Type == "track.end" && e.Attributes["plate"].Text == "B6H920" && e.Attributes["plate"].Reads >= 3 {
				ended = true
			}
		}
	}
	t.Logf("%d frames, %d plate detections, %d reads, %d with a voted plate (last %q)", frames, plates, reads, voted, last)
	if frames != 30 || plates < 25 {
		t.Fatalf("%d frames, %d plate detections; want 30 frames, the plate on most", frames, plates)
	}
	if reads < 4 || reads > 8 {
		t.Errorf("%d reads of the plate in 3 s; want one per 500ms (5–7)", reads)
	}
	if last != "B6H920" || voted < plates-10 {
		t.Errorf("voted plate %q on %d of %d detections; want B6H920 from the first read on", last, voted, plates)
	}
	if !ended {
		t.Errorf("no track.end event with the voted plate B6H920")
	}
}

// TestRunCascadeRefused: a recognizer serving a stream itself, and a recognizer whose dictionary
// does not match its classes, are refused with the reason (the shapes named).
func TestRunCascadeRefused(t *testing.T) {
	a := assets(t)
	ocr := filepath.Join(a, "models/paddleocr_en_number_mobile_v2.0_rec.onnx")
	clip := filepath.Join(a, "videos/car-detection_remux.ts")
	for _, tc := range []struct{ name, models, model, says string }{
		{"recognizer as the stream's model", `[{name: ocr, kind: ocr, path: ` + ocr + `, labels: ` + filepath.Join(a, "labels/paddleocr_en_dict.txt") +
			`, input: {width: 160, height: 32}}]`, "ocr", "not a detector"},
		{"coco labels as the dictionary", `[{name: plates, path: ` + filepath.Join(a, "models/hyperlpr3_y5fu_320x_sim.onnx") +
			`, family: plate, cascade: [{model: ocr}]}, {name: ocr, kind: ocr, path: ` + ocr + `, labels: ` + filepath.Join(a, "labels/coco80.names") +
			`, input: {width: 160, height: 32}}]`, "plates", "80 symbols, but the output save_infer_model/scale_0.tmp_1 [-1 -1 97] has 97 classes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "run.yaml")
			cfg := "models: " + tc.models + "\nstreams: [{id: s, source: " + clip + ", model: " + tc.model + "}]\noutput: {http: none}\n"
			if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
				t.Fatal(err)
			}
			_, stderr, code := vinfer(t, "run", "--config", path)
			if code == 0 || !strings.Contains(stderr, tc.says) {
				t.Fatalf("exit status %d, stderr:\n%s\nwant a failure saying %q", code, stderr, tc.says)
			}
		})
	}
}

// TestRunVehiclePlate: YOLOX with the plate detector as its cascade on trucks and cars, and the
// recognizer as the plate detector's own: the truck of HyperLPR's photo (a 1 s clip of it) gets
// its plate as a child and the plate's read as its own attribute (vehicle → plate → text), and
// its track the plate voted over its reads.
func TestRunVehiclePlate(t *testing.T) {
	a := assets(t)
	dir := t.TempDir()
	clip := filepath.Join(dir, "truck.mp4")
	cmd := exec.Command("ffmpeg", "-nostdin", "-v", "error", "-y", "-loop", "1", "-framerate", "5", "-t", "1",
		"-i", filepath.Join(a, "images/plates_hyperlpr_1.jpg"), "-c:v", "libx264", "-preset", "veryfast", "-crf", "12", "-pix_fmt", "yuv420p", clip)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("ffmpeg: %v\n%s", err, b)
	}
	cfg := `models:
  - {name: yolox, path: ` + filepath.Join(a, "models/yolox_nano_416.onnx") + `,
     cascade: [{model: plates, classes: [car, truck, bus], padding: 0.1}]}
  - {name: plates, path: ` + filepath.Join(a, "models/hyperlpr3_y5fu_320x_sim.onnx") + `, family: plate,
     cascade: [{model: ocr, as: plate}]}
  - {name: ocr, kind: ocr, path: ` + filepath.Join(a, "models/paddleocr_en_number_mobile_v2.0_rec.onnx") + `,
     labels: ` + filepath.Join(a, "labels/paddleocr_en_dict.txt") + `, input: {width: 160, height: 32}}
streams:
  - {id: road, source: ` + clip + `, model: yolox}
output: {http: none}
`
	path := filepath.Join(dir, "run.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := vinfer(t, "run", "--config", path, "--all-frames")
	if code != 0 {
		t.Fatalf("exit status %d:\n%s", code, stderr)
	}
	var withPlate, withRead, voted int
	sc := bufio.NewScanner(strings.NewReader(stdout))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var l struct {
			Detections []struct {
				Label    string `json:"label"`
				Children []struct {
					Model, Label string
				} `json:"children"`
				Attributes []struct{ Model, Kind, Text string } `json:"attributes"`
				Plate      *struct {
					Text  string
					Reads int
				} `json:"plate"`
			} `json:"detections"`
		}
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatal(err)
		}
		for _, d := range l.Detections {
			if d.Label != "truck" && d.Label != "car" && d.Label != "bus" {
				continue
			}
			for _, c := range d.Children {
				if c.Model == "plates" && (c.Label == "plate_double" || c.Label == "plate") {
					withPlate++
				}
			}
			for _, at := range d.Attributes {
				if at.Model == "ocr" && at.Kind == "ocr" {
					withRead++
					t.Logf("%s: read %q", d.Label, at.Text)
				}
			}
			if d.Plate != nil && d.Plate.Reads >= 2 {
				voted++
			}
		}
	}
	if withPlate == 0 || withRead != withPlate {
		t.Fatalf("%d vehicle detections with a plate child, %d with a read; want every plate read, at least one\n%s", withPlate, withRead, stdout)
	}
	if voted == 0 {
		t.Fatalf("no vehicle detection with a plate voted over two reads or more\n%s", stdout)
	}
}

// BenchmarkCascade16: `vinfer run` on 16 streams of the moving-plate clip (3 s at 10 fps, every
// frame inferred) with the plate detector alone, then with the recognizer as its cascade on
// every frame and every 500ms. Reports the primary's frames/s, the cascade's crops/s, and the
// run's wall time relative to the detector alone (docs/models.md, "Cascades").
//
//	go test ./cmd/vinfer -run '^$' -bench Cascade16 -benchtime 1x
func BenchmarkCascade16(b *testing.B) {
	clip := plateClipB(b)
	var base time.Duration
	for _, c := range []struct{ name, cascade string }{{"detector", ""}, {"ocr-every-frame", "every"}, {"ocr-every-500ms", "500ms"}} {
		b.Run(c.name, func(b *testing.B) {
			for range b.N {
				path := plateStreams(b, clip, c.cascade, 16)
				t0 := time.Now()
				stdout, stderr, code := vinferB(b, "run", "--config", path, "--all-frames")
				wall := time.Since(t0)
				if code != 0 {
					b.Fatalf("exit status %d:\n%s", code, stderr)
				}
				frames, crops := strings.Count(stdout, `"frame":`), strings.Count(stdout, `"kind":"ocr"`)
				if c.cascade == "" {
					base = wall
				} else if base > 0 {
					b.ReportMetric(wall.Seconds()/base.Seconds(), "x-detector-time")
				}
				b.ReportMetric(float64(frames)/wall.Seconds(), "frames/s")
				b.ReportMetric(float64(crops)/wall.Seconds(), "crops/s")
			}
		})
	}
}

func plateClipB(b *testing.B) string {
	b.Helper()
	out := filepath.Join(b.TempDir(), "plate.mp4")
	cmd := exec.Command("ffmpeg", "-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i", "color=c=0x606060:s=640x360:r=10:d=3",
		"-i", filepath.Join(testutil.Asset(b, "images/plate_crop_B6H920.jpg")), "-filter_complex",
		"[1]scale=160:-1,pad=iw+40:ih+40:20:20:color=0x303030[p];[0][p]overlay=x='100+t*40':y=150",
		"-c:v", "libx264", "-preset", "veryfast", "-crf", "18", "-pix_fmt", "yuv420p", "-g", "10", out)
	if o, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("ffmpeg: %v\n%s", err, o)
	}
	return out
}

// plateStreams writes a config of n streams of clip on the plate detector, with the recognizer
// as its cascade unless every is empty ("every": each frame).
func plateStreams(b *testing.B, clip, every string, n int) string {
	a := filepath.Dir(testutil.Asset(b, "models"))
	casc := ""
	switch every {
	case "every":
		casc = ", cascade: [{model: ocr, as: plate}]"
	case "":
	default:
		casc = ", cascade: [{model: ocr, as: plate, every: " + every + "}]"
	}
	cfg := `models:
  - {name: plates, path: ` + filepath.Join(a, "models/hyperlpr3_y5fu_320x_sim.onnx") + `, family: plate, max_batch: 8` + casc + `}
  - {name: ocr, kind: ocr, path: ` + filepath.Join(a, "models/paddleocr_en_number_mobile_v2.0_rec.onnx") + `,
     labels: ` + filepath.Join(a, "labels/paddleocr_en_dict.txt") + `, input: {width: 160, height: 32}, max_batch: 16}
streams:
`
	for i := range n {
		cfg += fmt.Sprintf("  - {id: s%d, source: %s, model: plates}\n", i, clip)
	}
	cfg += "output: {http: none}\n"
	path := filepath.Join(b.TempDir(), "run.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		b.Fatal(err)
	}
	return path
}

func vinferB(b *testing.B, args ...string) (stdout, stderr string, code int) {
	b.Helper()
	cmd := exec.Command(bin, args...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		b.Fatal(err)
	}
	return o.String(), e.String(), code
}
