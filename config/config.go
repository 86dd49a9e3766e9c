// Package config reads vinfer's YAML configuration: the models to load and the streams to run.
// Unknown fields are errors (a typo must not silently fall back to a default). Paths inside a
// file are relative to that file's directory.
package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/goccy/go-yaml"
)

// Config is a whole `vinfer run` configuration.
type Config struct {
	Models  []Model  `yaml:"models"`
	Streams []Stream `yaml:"streams"`
	Output  Output   `yaml:"output"`
	// Dir is the directory relative paths are resolved against (the config file's directory).
	Dir string `yaml:"-"`
}

// Output selects where results go.
type Output struct {
	// JSONL is a file path for JSON Lines results, "-" for stdout (the default), "" or "none" for none.
	JSONL string `yaml:"jsonl"`
	// Progress prints a live progress line on stderr (default true when stderr is a terminal).
	Progress *bool `yaml:"progress"`
	// HTTP is the API server address (e.g. 127.0.0.1:8080); empty disables it.
	HTTP string `yaml:"http"`
	// Token, when set, is the bearer token the API requires.
	Token string `yaml:"token"`
}

// Model declares one ONNX model and how to pre- and post-process for it. Zero fields take the
// model family's defaults (see package model); the family is auto-detected from the output
// shapes when not given.
type Model struct {
	Name string `yaml:"name"`
	// Path of the .onnx file.
	Path string `yaml:"path"`
	// Family is the output layout: yolox, fastestdet, ultraface, yolov5, yolov8, nanodet.
	Family string `yaml:"family"`
	// Labels is a labels file (one class name per line) or "coco80" for the built-in COCO names.
	Labels string `yaml:"labels"`
	// Input overrides the model's input size in pixels (needed when the ONNX input is dynamic).
	Input      *Size       `yaml:"input"`
	Preprocess *Preprocess `yaml:"preprocess"`
	// ScoreThreshold drops detections below it (0…1).
	ScoreThreshold *float32 `yaml:"score_threshold"`
	// NMSIoU is the IoU above which non-maximum suppression removes the lower-scored box.
	NMSIoU           *float32 `yaml:"nms_iou"`
	ClassAgnosticNMS bool     `yaml:"class_agnostic_nms"`
	MaxDetections    int      `yaml:"max_detections"`
	// Provider is the ONNX Runtime execution provider: cpu (default), cuda, tensorrt.
	Provider string `yaml:"provider"`
	// ProviderOptions are passed to the execution provider as they are, e.g. for cuda
	// cudnn_conv_algo_search: HEURISTIC (quicker start than the default EXHAUSTIVE search).
	ProviderOptions map[string]string `yaml:"provider_options"`
	// IntraOpThreads for ONNX Runtime (0: ONNX Runtime's default).
	IntraOpThreads int `yaml:"intra_op_threads"`
	// ORTConfig are ONNX Runtime session configuration entries
	// (onnxruntime_session_options_config_keys.h), e.g. session.intra_op.allow_spinning: "1".
	ORTConfig map[string]string `yaml:"ort_config"`
	// MaxBatch is the most frames batched across streams in one run (1 for fixed-batch models).
	MaxBatch int `yaml:"max_batch"`
	// MaxDelay is how long a partial batch waits for more frames before it runs.
	MaxDelay Duration `yaml:"max_delay"`
	// Preload loads the model at start instead of on first use.
	Preload bool `yaml:"preload"`
	// Cascade runs secondary models on crops of this model's detections.
	Cascade []Cascade `yaml:"cascade"`
}

// Cascade declares a secondary model run on crops of the primary model's detections; its
// detections appear as "children" of the parent detection.
type Cascade struct {
	// Model is the name of a declared model.
	Model string `yaml:"model"`
	// Classes are the parent labels to crop (e.g. [person]); empty: all.
	Classes []string `yaml:"classes"`
	// MinScore is the lowest parent score cropped.
	MinScore float32 `yaml:"min_score"`
	// MaxCrops caps crops per frame (default 8).
	MaxCrops int `yaml:"max_crops"`
}

// Size is a width and height in pixels.
type Size struct {
	Width  int `yaml:"width"`
	Height int `yaml:"height"`
}

// Preprocess overrides a family's preprocessing; unset fields keep the family default.
type Preprocess struct {
	// Color is the channel order the model takes: bgr or rgb.
	Color string `yaml:"color"`
	// Resize is letterbox (keep aspect, pad) or stretch.
	Resize string `yaml:"resize"`
	// Align places a letterboxed picture: top-left or center.
	Align string `yaml:"align"`
	// Interp is bilinear or area.
	Interp string `yaml:"interp"`
	// Pad is the 0–255 letterbox padding value.
	Pad *int `yaml:"pad"`
	// Scale multiplies 0–255 pixel values first (1/255 = 0.00392156862745098).
	Scale *float32 `yaml:"scale"`
	// Mean and Std then normalize per output channel: (v − mean) / std.
	Mean []float32 `yaml:"mean"`
	Std  []float32 `yaml:"std"`
}

// Stream declares one video stream.
type Stream struct {
	ID string `yaml:"id"`
	// Source is a file path, rtsp://…, rtp://host:port?codec=h264|h265, or
	// gb28181://host:port?transport=udp|tcp-passive|tcp-active&ssrc=N.
	Source string `yaml:"source"`
	// Model is the name of a model in Models.
	Model string `yaml:"model"`
	// Loop restarts a file at its end.
	Loop bool `yaml:"loop"`
	// Interval runs inference on every Nth decoded frame (1 = every frame).
	Interval int `yaml:"interval"`
	// MaxFPS caps frames sent to inference per second (0 = no cap).
	MaxFPS float64 `yaml:"max_fps"`
	// Drop is the policy when inference falls behind: oldest (drop the oldest queued frame, the
	// default for live sources), block (wait; nothing lost, the default for files).
	Drop string `yaml:"drop"`
	// Transport for RTSP: tcp, udp or auto.
	Transport string `yaml:"transport"`
	// Decoder is cpu (FFmpeg's software decoders, the default) or nvdec (NVIDIA's hardware
	// decoder: frames stay in GPU memory and are preprocessed there; the model must have
	// provider: cuda).
	Decoder string `yaml:"decoder"`
	// GPU is the CUDA device ordinal an nvdec stream decodes and infers on (after
	// CUDA_VISIBLE_DEVICES); unset: streams are spread round-robin over every visible GPU.
	GPU *int `yaml:"gpu"`
}

// Decoders of Stream.Decoder.
const (
	DecoderCPU   = "cpu"
	DecoderNVDEC = "nvdec"
)

// OnGPU reports whether the stream decodes on a GPU (decoder: nvdec).
func (s *Stream) OnGPU() bool { return s.Decoder == DecoderNVDEC }

// Duration is a time.Duration written as "2ms", "500us", "1s" in YAML.
type Duration time.Duration

// UnmarshalText parses a Go duration string.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("duration %q: %v (write e.g. 2ms, 500us)", b, err)
	}
	*d = Duration(v)
	return nil
}

// Load reads and validates a configuration file.
func Load(path string) (*Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	c, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	abs, _ := filepath.Abs(path)
	c.Dir = filepath.Dir(abs)
	c.resolvePaths()
	return c, nil
}

// Parse decodes and validates YAML. Relative paths stay as written (Load resolves them).
func Parse(b []byte) (*Config, error) {
	var c Config
	if err := yaml.UnmarshalWithOptions(b, &c, yaml.Strict()); err != nil {
		return nil, errors.New(yaml.FormatError(err, false, true))
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return &c, nil
}

// Validate checks names, references and enumerations; the error names the field to fix.
func (c *Config) Validate() error {
	var errs []error
	models := map[string]bool{}
	for i, m := range c.Models {
		where := fmt.Sprintf("models[%d]", i)
		if m.Name == "" {
			errs = append(errs, fmt.Errorf("%s: name is required", where))
		} else if models[m.Name] {
			errs = append(errs, fmt.Errorf("%s: duplicate model name %q", where, m.Name))
		}
		models[m.Name] = true
		if m.Path == "" {
			errs = append(errs, fmt.Errorf("%s (%s): path to the .onnx file is required", where, m.Name))
		}
		errs = append(errs, m.validate(where))
	}
	for i, m := range c.Models {
		for k, cc := range m.Cascade {
			if !models[cc.Model] || cc.Model == m.Name {
				errs = append(errs, fmt.Errorf("models[%d].cascade[%d]: model %q must be another declared model", i, k, cc.Model))
			}
		}
	}
	ids := map[string]bool{}
	for i, s := range c.Streams {
		where := fmt.Sprintf("streams[%d]", i)
		if s.ID == "" {
			errs = append(errs, fmt.Errorf("%s: id is required", where))
		} else if ids[s.ID] {
			errs = append(errs, fmt.Errorf("%s: duplicate stream id %q", where, s.ID))
		}
		ids[s.ID] = true
		if s.Source == "" {
			errs = append(errs, fmt.Errorf("%s (%s): source is required", where, s.ID))
		}
		if !models[s.Model] {
			errs = append(errs, fmt.Errorf("%s (%s): model %q is not declared under models (have: %s)",
				where, s.ID, s.Model, strings.Join(keys(models), ", ")))
		}
		errs = append(errs, s.Validate(where))
		if s.OnGPU() {
			for _, m := range c.Models {
				if m.Name == s.Model {
					errs = append(errs, CheckGPUModel(where, &s, &m))
				}
			}
		}
	}
	return errors.Join(errs...)
}

// CheckGPUModel checks that model m can serve stream s, whose frames are decoded on a GPU
// (decoder: nvdec): m must run on ONNX Runtime's CUDA provider, and it must have no cascade
// (cascades crop host frames). where prefixes the error.
func CheckGPUModel(where string, s *Stream, m *Model) error {
	var errs []error
	if m.Provider != "cuda" {
		prov := m.Provider
		if prov == "" {
			prov = "cpu, the default"
		}
		errs = append(errs, fmt.Errorf("%s (%s): decoder nvdec keeps frames in GPU memory, so model %q needs provider: cuda (it has %s); or use decoder: cpu",
			where, s.ID, m.Name, prov))
	}
	if len(m.Cascade) > 0 {
		errs = append(errs, fmt.Errorf("%s (%s): model %q has a cascade, which crops frames in host memory: use decoder: cpu for this stream",
			where, s.ID, m.Name))
	}
	return errors.Join(errs...)
}

// Validate checks one stream's fields; where prefixes the error.
func (s *Stream) Validate(where string) error {
	var errs []error
	if s.Interval < 0 {
		errs = append(errs, fmt.Errorf("%s: interval %d must be ≥ 1", where, s.Interval))
	}
	if s.MaxFPS < 0 {
		errs = append(errs, fmt.Errorf("%s: max_fps must be ≥ 0", where))
	}
	errs = append(errs, oneOf(where+".drop", s.Drop, "", "oldest", "block"))
	errs = append(errs, oneOf(where+".transport", s.Transport, "", "tcp", "udp", "auto"))
	errs = append(errs, oneOf(where+".decoder", s.Decoder, "", DecoderCPU, DecoderNVDEC))
	if s.GPU != nil {
		switch {
		case *s.GPU < 0:
			errs = append(errs, fmt.Errorf("%s: gpu %d must be a device ordinal ≥ 0 (or left out to spread streams over every GPU)", where, *s.GPU))
		case !s.OnGPU():
			errs = append(errs, fmt.Errorf("%s: gpu applies to decoder: nvdec only (this stream decodes on the CPU)", where))
		}
	}
	return errors.Join(errs...)
}

func (m *Model) validate(where string) error {
	var errs []error
	errs = append(errs, oneOf(where+".family", m.Family, "", "yolox", "fastestdet", "ultraface", "yolov5", "yolov8", "nanodet"))
	errs = append(errs, oneOf(where+".provider", m.Provider, "", "cpu", "cuda", "tensorrt"))
	if m.MaxBatch < 0 {
		errs = append(errs, fmt.Errorf("%s.max_batch must be ≥ 1", where))
	}
	if p := m.Preprocess; p != nil {
		errs = append(errs, oneOf(where+".preprocess.color", p.Color, "", "bgr", "rgb"))
		errs = append(errs, oneOf(where+".preprocess.resize", p.Resize, "", "letterbox", "stretch"))
		errs = append(errs, oneOf(where+".preprocess.align", p.Align, "", "top-left", "center"))
		errs = append(errs, oneOf(where+".preprocess.interp", p.Interp, "", "bilinear", "area"))
		if p.Pad != nil && (*p.Pad < 0 || *p.Pad > 255) {
			errs = append(errs, fmt.Errorf("%s.preprocess.pad %d must be 0…255", where, *p.Pad))
		}
		for _, v := range [][]float32{p.Mean, p.Std} {
			if len(v) != 0 && len(v) != 3 {
				errs = append(errs, fmt.Errorf("%s.preprocess: mean and std take 3 values (one per channel)", where))
			}
		}
		for _, s := range p.Std {
			if s == 0 {
				errs = append(errs, fmt.Errorf("%s.preprocess.std: 0 would divide by zero", where))
			}
		}
	}
	if m.Input != nil && (m.Input.Width <= 0 || m.Input.Height <= 0) {
		errs = append(errs, fmt.Errorf("%s.input: width and height must be positive", where))
	}
	return errors.Join(errs...)
}

func (c *Config) resolvePaths() {
	for i := range c.Models {
		m := &c.Models[i]
		m.Path = c.Resolve(m.Path)
		if m.Labels != "" && m.Labels != "coco80" {
			m.Labels = c.Resolve(m.Labels)
		}
	}
	for i := range c.Streams {
		s := &c.Streams[i]
		if !strings.Contains(s.Source, "://") {
			s.Source = c.Resolve(s.Source)
		}
	}
	if o := c.Output.JSONL; o != "" && o != "-" && o != "none" {
		c.Output.JSONL = c.Resolve(o)
	}
}

// Resolve makes a path relative to the config file's directory absolute.
func (c *Config) Resolve(p string) string {
	if p == "" || filepath.IsAbs(p) || c.Dir == "" {
		return p
	}
	return filepath.Join(c.Dir, p)
}

func oneOf(field, v string, allowed ...string) error {
	for _, a := range allowed {
		if v == a {
			return nil
		}
	}
	return fmt.Errorf("%s: %q is not one of %s", field, v, strings.Join(allowed[1:], ", "))
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// LoadModel reads a single model declaration (the MODEL.yaml beside an .onnx file). Paths are
// relative to that file.
func LoadModel(path string) (*Model, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("model config: %w", err)
	}
	var m Model
	if err := yaml.UnmarshalWithOptions(b, &m, yaml.Strict()); err != nil {
		return nil, fmt.Errorf("model config %s: %s", path, yaml.FormatError(err, false, true))
	}
	if err := m.validate("model"); err != nil {
		return nil, fmt.Errorf("model config %s: %w", path, err)
	}
	c := Config{Dir: filepath.Dir(path), Models: []Model{m}}
	if abs, err := filepath.Abs(path); err == nil {
		c.Dir = filepath.Dir(abs)
	}
	c.resolvePaths()
	return &c.Models[0], nil
}
