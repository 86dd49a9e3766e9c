package config

import (
	"errors"
	"fmt"
	"math"

	"github.com/vinfer/vinfer/attr"
	"github.com/vinfer/vinfer/detect"
	"github.com/vinfer/vinfer/preprocess"
)

// Model declares one ONNX model and how to pre- and post-process for it. Zero fields take the
// model family's defaults (package detect's registry); the family is auto-detected from the
// output shapes when not given.
type Model struct {
	Name string `yaml:"name" json:"name"`
	// Path of the .onnx file.
	Path string `yaml:"path" json:"path"`
	// Family is the output layout (detect.Families); empty: auto-detected.
	Family detect.Family `yaml:"family,omitempty" json:"family,omitempty"`
	// Kind is what the output means: detect (default), or ocr, embedding, classify for a
	// second-stage model run on crops by a cascade (package attr). For ocr, labels is the
	// recognizer's dictionary; for classify, its labels.
	Kind attr.Kind `yaml:"kind,omitempty" json:"kind,omitempty"`
	// Labels is a labels file (one class name per line) or "coco80" for the built-in COCO names.
	Labels string `yaml:"labels,omitempty" json:"labels,omitempty"`
	// Input is the model's input size in pixels (needed when the ONNX input is dynamic).
	Input      *Size       `yaml:"input,omitempty" json:"input,omitempty"`
	Preprocess *Preprocess `yaml:"preprocess,omitempty" json:"preprocess,omitempty"`
	// ScoreThreshold drops detections below it (0…1).
	ScoreThreshold *float32 `yaml:"score_threshold,omitempty" json:"score_threshold,omitempty"`
	// NMSIoU is the IoU above which non-maximum suppression removes the lower-scored box.
	NMSIoU           *float32 `yaml:"nms_iou,omitempty" json:"nms_iou,omitempty"`
	ClassAgnosticNMS bool     `yaml:"class_agnostic_nms,omitempty" json:"class_agnostic_nms,omitempty"`
	MaxDetections    int      `yaml:"max_detections,omitempty" json:"max_detections,omitempty"`
	// Provider is the ONNX Runtime execution provider.
	Provider Provider `yaml:"provider,omitempty" json:"provider,omitempty"`
	// ProviderOptions are passed to the execution provider as they are, e.g. for cuda
	// cudnn_conv_algo_search: HEURISTIC.
	ProviderOptions map[string]string `yaml:"provider_options,omitempty" json:"provider_options,omitempty"`
	// Precision is fp32 (default), fp16 (a float16 rewrite checked against float32 at load) or
	// auto (float16 where it passes the check and runs faster); docs/models.md "Precision".
	Precision Precision `yaml:"precision,omitempty" json:"precision,omitempty"`
	// IntraOpThreads for ONNX Runtime (0: ONNX Runtime's default, one per core).
	IntraOpThreads int `yaml:"intra_op_threads,omitempty" json:"intra_op_threads,omitempty"`
	// ORTConfig are ONNX Runtime session configuration entries
	// (onnxruntime_session_options_config_keys.h), e.g. session.intra_op.allow_spinning: "1".
	ORTConfig map[string]string `yaml:"ort_config,omitempty" json:"ort_config,omitempty"`
	// MaxBatch is the most frames batched across streams in one run. A model exported with a
	// fixed batch of 1 is rewritten to a dynamic batch at load when MaxBatch > 1 (docs/models.md).
	MaxBatch int `yaml:"max_batch,omitempty" json:"max_batch,omitempty"`
	// MaxDelay is how long a partial batch waits for more frames before it runs (default 2ms).
	MaxDelay Duration `yaml:"max_delay,omitempty" json:"max_delay,omitempty"`
	// Workers is how many inference workers run the model per GPU (decoder: nvdec streams),
	// each with its own CUDA stream and session (0: 2). The CPU path has one worker per model.
	Workers int `yaml:"workers,omitempty" json:"workers,omitempty"`
	// InFlight is how many batches each GPU worker keeps queued on the device, so that it
	// gathers, preprocesses and post-processes one batch while the GPU runs another (0: 2).
	InFlight int `yaml:"inflight,omitempty" json:"inflight,omitempty"`
	// CUDAGraph replays a GPU worker's batches as CUDA graphs, queued without a host wait
	// (default true; false for a model whose graph cannot be captured).
	CUDAGraph *bool `yaml:"cuda_graph,omitempty" json:"cuda_graph,omitempty"`
	// Preload loads the model at start instead of on first use.
	Preload bool `yaml:"preload,omitempty" json:"preload,omitempty"`
	// Cascade runs secondary models on crops of this model's detections.
	Cascade []Cascade `yaml:"cascade,omitempty" json:"cascade,omitempty"`
}

// Bounds of Model.Workers and Model.InFlight.
const (
	MaxGPUWorkers = 16
	MaxInFlight   = 8
)

// Cascade declares a secondary model run on crops of the primary model's detections; its
// detections appear as "children" of the parent detection.
type Cascade struct {
	// Model is the name of a declared model.
	Model string `yaml:"model" json:"model"`
	// Classes are the parent labels to crop (e.g. [person]); empty: all.
	Classes []string `yaml:"classes,omitempty" json:"classes,omitempty"`
	// MinScore is the lowest parent score cropped.
	MinScore float32 `yaml:"min_score,omitempty" json:"min_score,omitempty"`
	// MaxCrops caps crops per frame (default 8).
	MaxCrops int `yaml:"max_crops,omitempty" json:"max_crops,omitempty"`
	// Padding widens each crop by this fraction of the box's width and height on every side
	// (0…1; the crop is clipped to the frame).
	Padding float32 `yaml:"padding,omitempty" json:"padding,omitempty"`
	// MinSize is the smallest crop side in pixels (after padding) that is run; smaller boxes
	// are skipped.
	MinSize int `yaml:"min_size,omitempty" json:"min_size,omitempty"`
	// Every is how often one object is cropped: a duration (every: 1s), "once" (once per
	// object), or empty for every frame.
	Every Cadence `yaml:"every,omitempty" json:"every,omitempty"`
	// As names the attribute each track votes over its reads, for ocr and classify models
	// (e.g. plate): the detections of the track carry it ("plate":{"text","score","reads"}).
	As string `yaml:"as,omitempty" json:"as,omitempty"`
}

// Size is a width and height in pixels.
type Size struct {
	Width  int `yaml:"width" json:"width"`
	Height int `yaml:"height" json:"height"`
}

// Preprocess overrides a family's preprocessing; nil fields keep the family default.
type Preprocess struct {
	Color  *preprocess.ColorOrder `yaml:"color,omitempty" json:"color,omitempty"`
	Resize *preprocess.ResizeMode `yaml:"resize,omitempty" json:"resize,omitempty"`
	Align  *preprocess.Align      `yaml:"align,omitempty" json:"align,omitempty"`
	Interp *preprocess.Interp     `yaml:"interp,omitempty" json:"interp,omitempty"`
	// Pad is the 0–255 letterbox padding value.
	Pad *int `yaml:"pad,omitempty" json:"pad,omitempty"`
	// Scale multiplies 0–255 pixel values first (1/255 = 0.00392156862745098).
	Scale *float32 `yaml:"scale,omitempty" json:"scale,omitempty"`
	// Mean and Std then normalize per output channel: (v − mean) / std; 3 values each.
	Mean []float32 `yaml:"mean,omitempty" json:"mean,omitempty"`
	Std  []float32 `yaml:"std,omitempty" json:"std,omitempty"`
}

// Apply overrides s's fields with those p sets.
func (p *Preprocess) Apply(s *preprocess.Spec) {
	if p == nil {
		return
	}
	if p.Color != nil {
		s.Color = *p.Color
	}
	if p.Resize != nil {
		s.Resize = *p.Resize
	}
	if p.Align != nil {
		s.Align = *p.Align
	}
	if p.Interp != nil {
		s.Interp = *p.Interp
	}
	if p.Pad != nil {
		s.Pad = uint8(*p.Pad)
	}
	if p.Scale != nil {
		s.Scale = *p.Scale
	}
	if len(p.Mean) == 3 {
		copy(s.Mean[:], p.Mean)
	}
	if len(p.Std) == 3 {
		copy(s.Std[:], p.Std)
	}
}

// Validate checks the model's own fields; where prefixes each error.
func (m *Model) Validate(where string) error {
	var errs []error
	add := func(f string, args ...any) { errs = append(errs, fmt.Errorf(where+f, args...)) }
	if m.Name == "" {
		add(": name is required")
	}
	if m.Path == "" {
		add(" (%s): path to the .onnx file is required", m.Name)
	}
	if m.MaxBatch < 0 {
		add(".max_batch must be ≥ 1")
	}
	if m.MaxDelay < 0 {
		add(".max_delay must be ≥ 0")
	}
	if m.Workers < 0 || m.Workers > MaxGPUWorkers {
		add(".workers must be 0…%d", MaxGPUWorkers)
	}
	if m.InFlight < 0 || m.InFlight > MaxInFlight {
		add(".inflight must be 0…%d", MaxInFlight)
	}
	if m.IntraOpThreads < 0 {
		add(".intra_op_threads must be ≥ 0")
	}
	for _, v := range []*float32{m.ScoreThreshold, m.NMSIoU} {
		if v != nil && !(*v >= 0 && *v <= 1) {
			add(": score_threshold and nms_iou must be within 0…1")
		}
	}
	if p := m.Preprocess; p != nil {
		if p.Pad != nil && (*p.Pad < 0 || *p.Pad > 255) {
			add(".preprocess.pad %d must be 0…255", *p.Pad)
		}
		for _, v := range [][]float32{p.Mean, p.Std} {
			if len(v) != 0 && len(v) != 3 {
				add(".preprocess: mean and std take 3 values (one per channel)")
			}
		}
		for _, s := range p.Std {
			if s == 0 || math.IsNaN(float64(s)) {
				add(".preprocess.std: 0 would divide by zero")
			}
		}
	}
	if m.Precision != PrecisionFP32 && m.Provider == ProviderTensorRT {
		add(".precision %s: provider tensorrt builds its own engines; use provider: cuda for float16", m.Precision)
	}
	if m.Input != nil && (m.Input.Width <= 0 || m.Input.Height <= 0) {
		add(".input: width and height must be positive")
	}
	return errors.Join(errs...)
}
