package pipeline_test

import (
	"context"
	"log/slog"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vinfer/vinfer/attr"
	"github.com/vinfer/vinfer/codec"
	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/detect"
	"github.com/vinfer/vinfer/frame"
	"github.com/vinfer/vinfer/internal/testutil"
	"github.com/vinfer/vinfer/media"
	"github.com/vinfer/vinfer/model"
	"github.com/vinfer/vinfer/pipeline"
	"github.com/vinfer/vinfer/sink"
	"github.com/vinfer/vinfer/source/file"
)

// cascadeModels is a pipeline.Models of one engine function with cascades.
type cascadeModels struct {
	engines3
	cascades map[string][]pipeline.Cascade
}

func (m cascadeModels) Cascades(name string) []pipeline.Cascade { return m.cascades[name] }

// reads keeps, per frame of each stream, the attributes of its plate detections.
type reads struct {
	mu     sync.Mutex
	texts  map[string][]string
	plates map[string]int
}

func (r *reads) Write(res *sink.Result) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, d := range res.Detections {
		if d.Label == "plate" {
			r.plates[res.Stream]++
		}
	}
	for _, a := range res.Attrs {
		if a.Kind == attr.KindOCR {
			r.texts[res.Stream] = append(r.texts[res.Stream], a.Text)
		}
	}
	return nil
}

// TestDeviceFramesCascade: a plate detector serving "GPU" frames (the FrameRunner stand-in of
// TestDeviceFramesPath) with the recognizer as its cascade on the same device: the crops are
// views of the frames, batched through the recognizer's own FrameRunner, and every plate is
// read B6H920 as on the host path (the device path does not rectify the plate, whose dot then
// reads as a space: "B 6H920").
func TestDeviceFramesCascade(t *testing.T) {
	frame.SetDebug(true)
	defer frame.SetDebug(false)
	a := assets(t)
	clip := filepath.Join(t.TempDir(), "plate.mp4")
	cmd := exec.Command("ffmpeg", "-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i", "color=c=0x606060:s=640x360:r=10:d=2",
		"-i", filepath.Join(a, "images/plate_crop_B6H920.jpg"), "-filter_complex",
		"[1]scale=160:-1,pad=iw+40:ih+40:20:20:color=0x303030[p];[0][p]overlay=x='100+t*40':y=150",
		"-c:v", "libx264", "-preset", "veryfast", "-crf", "18", "-pix_fmt", "yuv420p", clip)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("ffmpeg: %v\n%s", err, b)
	}
	decls := []config.Model{
		{Name: "plates", Family: detect.FamilyPlate, Path: filepath.Join(a, "models/hyperlpr3_y5fu_320x_sim.onnx"), MaxBatch: 2},
		{Name: "ocr", Kind: attr.KindOCR, Path: filepath.Join(a, "models/paddleocr_en_number_mobile_v2.0_rec.onnx"),
			Labels: filepath.Join(a, "labels/paddleocr_en_dict.txt"), Input: &config.Size{Width: 160, Height: 32}, MaxBatch: 4},
	}
	host := model.NewRegistry(decls)
	defer host.Close()
	dev := model.NewRegistry(decls) // the "GPU"'s own sessions
	defer dev.Close()
	var mu sync.Mutex
	engines := map[string]*frameEngine{}
	logs := &testutil.LogBuffer{}
	rec := &reads{texts: map[string][]string{}, plates: map[string]int{}}
	models := cascadeModels{engines3: func(name string, device int) (pipeline.Engine, error) {
		if device < 0 {
			e, err := host.Get(name)
			if err != nil {
				return nil, err
			}
			return hostEngine{e}, nil
		}
		mu.Lock()
		defer mu.Unlock()
		if fe := engines[name]; fe != nil {
			return fe, nil
		}
		e, err := dev.Get(name)
		if err != nil {
			return nil, err
		}
		fe, err := newFrameEngine(e, 1, 2)
		if err != nil {
			return nil, err
		}
		fe.views = name == "ocr"
		engines[name] = fe
		return fe, nil
	}, cascades: map[string][]pipeline.Cascade{"plates": {{Model: "ocr", As: "plate"}}}}
	p := pipeline.New(pipeline.Options{Models: models, Sinks: []sink.Sink{rec}, Log: slog.New(slog.NewTextHandler(logs, nil))})
	p.Start(context.Background())
	for i, id := range []string{"host", "dev"} {
		src := &file.Source{Path: clip}
		if err := src.Init(); err != nil {
			t.Fatal(err)
		}
		decl := config.Stream{ID: id, Model: "plates"}
		device := -1
		if i > 0 {
			decl.Decoder, device = config.DecoderNVDEC, 0
		}
		err := p.AddStream(pipeline.StreamConfig{Stream: decl, Source: src, Device: device,
			NewDecoder: func(c media.Codec) (pipeline.VideoDecoder, error) {
				d := &codec.Decoder{Codec: c, Name: id}
				return d, d.Init()
			}})
		if err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan struct{})
	go func() { p.Wait(); close(done) }()
	testutil.Within(t, 2*time.Minute, "the two streams to end", done)
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	testutil.CheckNoFrameLeaks(t, logs)
	for _, id := range []string{"host", "dev"} {
		texts := rec.texts[id]
		good := 0
		for _, s := range texts {
			if strings.ReplaceAll(s, " ", "") == "B6H920" {
				good++
			}
		}
		t.Logf("%s: %d plates, reads %v", id, rec.plates[id], texts)
		if rec.plates[id] < 15 || len(texts) != rec.plates[id] || good < len(texts)-2 {
			t.Errorf("%s: %d plate detections, %d reads, %d of them B6H920; want every plate read, nearly all B6H920", id, rec.plates[id], len(texts), good)
		}
	}
}
