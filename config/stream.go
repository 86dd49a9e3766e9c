package config

import (
	"errors"
	"fmt"
	"regexp"

	"github.com/vinfer/vinfer/analytics"
	"github.com/vinfer/vinfer/objects"
)

// Stream declares one video stream. The same type is read from configuration files (YAML), sent
// to and returned by the HTTP API (JSON, same field names) and run by the pipeline.
type Stream struct {
	// ID names the stream in URLs, events, metrics and file names: 1–64 letters, digits, '.',
	// '_' or '-'.
	ID string `yaml:"id" json:"id"`
	// Source is a file path or a URL whose scheme selects the source kind (package source's
	// registry): file://, rtsp://, rtp://, gb28181://. Each kind parses its own parameters.
	Source string `yaml:"source" json:"source"`
	// Model is the name of a declared model.
	Model string `yaml:"model" json:"model"`
	// Loop restarts a file at its end.
	Loop bool `yaml:"loop,omitempty" json:"loop,omitempty"`
	// Realtime paces a file at its own frame rate (its timestamps against the wall clock), as
	// a camera would send it: the stream is then live (drop: oldest by default, priority over
	// unpaced files). Live sources are real time anyway.
	Realtime bool `yaml:"realtime,omitempty" json:"realtime,omitempty"`
	// Interval infers every Nth decoded frame (0 or 1: every frame).
	Interval int `yaml:"interval,omitempty" json:"interval,omitempty"`
	// MaxFPS caps inferred frames per wall-clock second (0: no cap), for every source: a live
	// stream (drop: oldest) drops the frames over the cap (fps_cap), a stream that blocks
	// (drop: block, unpaced files) waits for its next turn instead, losing nothing.
	// Bounds: 0 or MinMaxFPS..MaxMaxFPS (a tinier cap would overflow the frame period).
	MaxFPS float64 `yaml:"max_fps,omitempty" json:"max_fps,omitempty"`
	// Drop is the policy when inference falls behind.
	Drop DropPolicy `yaml:"drop,omitempty" json:"drop,omitempty"`
	// Concealed is what happens to pictures repaired by error concealment after packet loss:
	// infer (default) or drop.
	Concealed Concealed `yaml:"concealed,omitempty" json:"concealed,omitempty"`
	// Transport is how an RTSP source receives media.
	Transport Transport `yaml:"transport,omitempty" json:"transport,omitempty"`
	// SkipNonRef (skip_nonref: true) decodes reference pictures only on the FFmpeg decoder
	// (skip_frame AVDISCARD_NONREF): non-reference pictures (most B-frames) are never decoded.
	// Only with interval > 1 or max_fps, whose skipped frames it spares; interval then counts
	// the pictures decoded.
	SkipNonRef bool `yaml:"skip_nonref,omitempty" json:"skip_nonref,omitempty"`
	// Decoder is cpu (default) or nvdec.
	Decoder Decoder `yaml:"decoder,omitempty" json:"decoder,omitempty"`
	// GPU is the CUDA device ordinal of an nvdec stream (after CUDA_VISIBLE_DEVICES); nil:
	// round-robin over every visible GPU.
	GPU *int `yaml:"gpu,omitempty" json:"gpu,omitempty"`
	// Tracker configures the multi-object tracker (on by default; `tracker: none` turns it off).
	Tracker *Tracker `yaml:"tracker,omitempty" json:"tracker,omitempty"`
	// Activity gates the stream's inference and decoding on its scene's activity
	// (config/activity.go, docs/activity.md); nil: the configuration's defaults (off).
	Activity *Activity `yaml:"activity,omitempty" json:"activity,omitempty"`
	// Record keeps the stream's coded video and per-frame results (the record section,
	// config/record.go, docs/recording.md).
	Record bool `yaml:"record,omitempty" json:"record,omitempty"`
	// Scene declares zones and lines (zones:, lines:, track_events:, retention:), whose events
	// the stream reports (package analytics).
	analytics.Config `yaml:",inline"`
	// Rules declare class groups, object filters and masks (groups:, group_nms_iou:, filters:,
	// masks:; package objects).
	objects.Rules `yaml:",inline"`
}

// idPattern is what a stream id may hold (it appears in URL paths and file names).
var idPattern = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// MaxFPS bounds (frames a second), besides 0 for no cap.
const (
	MinMaxFPS = 0.001
	MaxMaxFPS = 1000
)

// Stream errors.
var (
	ErrStreamID     = errors.New("id must be 1–64 letters, digits, '.', '_' or '-'")
	ErrNoSource     = errors.New("source is required")
	ErrNoModel      = errors.New("model is required")
	ErrUnknownModel = errors.New("is not declared under models")
	ErrMaxFPS       = errors.New("must be 0 (no cap) or between 0.001 and 1000 frames a second")
)

// OnGPU reports whether the stream decodes on a GPU (decoder: nvdec).
func (s *Stream) OnGPU() bool { return s.Decoder == DecoderNVDEC }

// Validate checks the stream's own fields (enumerations were checked when decoded).
func (s *Stream) Validate() error {
	var errs []error
	if s.ID == "" {
		errs = append(errs, fmt.Errorf("id is required (%w)", ErrStreamID))
	} else if !idPattern.MatchString(s.ID) || s.ID == "." || s.ID == ".." {
		errs = append(errs, fmt.Errorf("id %q: %w", s.ID, ErrStreamID))
	}
	if s.Source == "" {
		errs = append(errs, ErrNoSource)
	}
	if s.Model == "" {
		errs = append(errs, ErrNoModel)
	}
	if s.Interval < 0 {
		errs = append(errs, fmt.Errorf("interval %d must be ≥ 1 (or 0 for every frame)", s.Interval))
	}
	if s.MaxFPS != 0 && !(s.MaxFPS >= MinMaxFPS && s.MaxFPS <= MaxMaxFPS) {
		errs = append(errs, fmt.Errorf("max_fps %v: %w", s.MaxFPS, ErrMaxFPS))
	}
	errs = append(errs, s.Tracker.Validate(), s.Activity.Validate(), s.checkSkipNonRef(), s.checkActivity())
	if !s.Tracker.Enabled() && (len(s.Zones) > 0 || len(s.Lines) > 0 || s.TrackEvents) {
		errs = append(errs, errors.New("zones, lines and track events need the tracker (remove tracker: none)"))
	}
	if len(s.Zones) > 0 || len(s.Lines) > 0 {
		errs = append(errs, s.Config.Validate())
	}
	errs = append(errs, s.Rules.Validate())
	if s.GPU != nil {
		switch {
		case *s.GPU < 0:
			errs = append(errs, fmt.Errorf("gpu %d must be a device ordinal ≥ 0 (or left out to spread streams over every GPU)", *s.GPU))
		case !s.OnGPU():
			errs = append(errs, errors.New("gpu applies to decoder: nvdec only (this stream decodes on the CPU)"))
		}
	}
	return errors.Join(errs...)
}

// CheckModel checks that model m can serve stream s: a stream decoded on a GPU keeps its frames
// in device memory, so its model must run on ONNX Runtime's CUDA provider (its cascades' models
// too: Config.CheckStream).
func (s *Stream) CheckModel(m *Model) error {
	if !s.OnGPU() {
		return nil
	}
	var errs []error
	if m.Provider != ProviderCUDA {
		prov := m.Provider.String()
		if m.Provider == ProviderCPU {
			prov = "cpu, the default"
		}
		errs = append(errs, fmt.Errorf("decoder nvdec keeps frames in GPU memory, so model %q needs provider: cuda (it has %s); or use decoder: cpu", m.Name, prov))
	}
	return errors.Join(errs...)
}
