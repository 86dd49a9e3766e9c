package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/vinfer/vinfer/app"
	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/imageio"
	"github.com/vinfer/vinfer/model"
	"github.com/vinfer/vinfer/preprocess"
	"github.com/vinfer/vinfer/sink"
)

var imageExts = map[string]bool{".jpg": true, ".jpeg": true, ".png": true, ".gif": true}

func detectCmd(args []string) error {
	fs := flag.NewFlagSet("detect", flag.ContinueOnError)
	modelPath := fs.String("model", "", "ONNX model (MODEL.yaml beside it, if present, sets family and preprocessing)")
	input := fs.String("input", "", "image (JPEG, PNG, GIF) or video file (MP4, MKV, MPEG-TS)")
	family := fs.String("family", "", "model family, when auto-detection cannot tell (yolox, fastestdet, ultraface, yolov5, yolov8, nanodet, end2end, picodet; plate is never auto-detected)")
	labels := fs.String("labels", "", `labels file (one name per line) or "coco80"`)
	score := fs.Float64("score-threshold", -1, "minimum score 0…1 (negative: the family's default)")
	threads := fs.Int("threads", 0, "ONNX Runtime intra-op threads (0: one per core)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	newLogger("warn", false)
	if *threads < 0 {
		return fmt.Errorf("--threads %d: give 0 (one per core) or a positive count", *threads)
	}
	if *modelPath == "" || *input == "" {
		fs.Usage()
		return errors.New("detect needs --model and --input")
	}
	if _, err := os.Stat(*input); err != nil {
		return fmt.Errorf("input: %w", err)
	}
	decl, err := model.Declare(*modelPath)
	if err != nil {
		return err
	}
	if *family != "" {
		if err := decl.Family.UnmarshalText([]byte(*family)); err != nil {
			return err
		}
	}
	if *labels != "" {
		decl.Labels = *labels
	}
	if *score >= 0 {
		s := float32(*score)
		decl.ScoreThreshold = &s
	}
	decl.IntraOpThreads = *threads
	if imageExts[strings.ToLower(filepath.Ext(*input))] {
		return detectImage(decl, *input)
	}
	return detectVideo(decl, *input)
}

func detectImage(decl config.Model, path string) error {
	m, err := model.Load(decl)
	if err != nil {
		return err
	}
	defer m.Close()
	f, err := imageio.Load(path)
	if err != nil {
		return err
	}
	pre, err := preprocess.NewCPU(m.Pre)
	if err != nil {
		return err
	}
	defer pre.Close()
	in, err := m.Input(1)
	if err != nil {
		return err
	}
	tr, err := pre.Run(f, in)
	if err != nil {
		return err
	}
	outs, err := m.Run(1)
	if err != nil {
		return err
	}
	dec, err := m.NewDecoder()
	if err != nil {
		return err
	}
	r := &sink.Result{Stream: path, Width: f.Width, Height: f.Height, Model: m.Name,
		Detections: dec.Decode(outs, 0, tr, nil)}
	j := &sink.JSONL{W: os.Stdout, AllFrames: true}
	if err := j.Write(r); err != nil {
		return err
	}
	return j.Flush()
}

func detectVideo(decl config.Model, path string) error {
	cfg := &config.Config{Models: []config.Model{decl},
		Streams: []config.Stream{{ID: "video", Source: path, Model: decl.Name, Drop: config.DropBlock}}}
	j := &sink.JSONL{W: os.Stdout, AllFrames: true}
	a, err := app.New(context.Background(), cfg, app.Options{Sinks: []sink.Sink{sourceAs{j, path}}, Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		return err
	}
	if err := a.AddStream(cfg.Streams[0]); err != nil {
		a.Stop()
		return err
	}
	start := time.Now()
	a.Wait(context.Background())
	streams := a.Streams()
	err = a.Stop()
	if ferr := j.Flush(); err == nil {
		err = ferr
	}
	if len(streams) == 1 && streams[0].Err != nil {
		return streams[0].Err
	}
	summary(os.Stderr, streams, time.Since(start))
	return err
}

// sourceAs writes results naming the input path as their source.
type sourceAs struct {
	s    sink.Sink
	name string
}

func (w sourceAs) Write(r *sink.Result) error {
	id := r.Stream
	r.Stream = w.name
	err := w.s.Write(r)
	r.Stream = id
	return err
}
