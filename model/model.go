// Package model turns a model declaration (config.Model) into a served model: an ONNX Runtime
// session plus the family's preprocessing, output decoding, thresholds and labels, with the
// family auto-detected from the output shapes when not declared.
//
// Load (Loader.Load) opens one model from its mmap'ed file, optionally through the
// optimized-model cache (cache.go). Registry serves the declared models to the pipeline: one
// shared, warmed-up load per model (single-flight), hot reload with reference-counted versions,
// and reload on file change (Watch).
package model

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/vinfer/vinfer/attr"
	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/cuda"
	"github.com/vinfer/vinfer/detect"
	"github.com/vinfer/vinfer/infer"
	"github.com/vinfer/vinfer/preprocess"
	"github.com/vinfer/vinfer/tensor"
)

// Model is a loaded model. Its session buffers belong to one inference worker at a time.
type Model struct {
	Name   string
	Path   string
	Family detect.Family
	// Kind is the output's meaning: detections (KindDetect, Family set) or an attribute.
	Kind attr.Kind
	// NHWC marks a channels-last input [N,H,W,C]: callers interleave the channels.
	NHWC bool
	Pre  preprocess.Spec
	Post detect.Params
	// SHA256 is the hex SHA-256 of the .onnx file loaded.
	SHA256 string
	// Batch describes the batch dimension served: "1" (fixed), BatchDynamic, or
	// BatchRewritten for a batch-1 model made dynamic at load (batch.go).
	Batch string
	// Cache says whether the optimized graph came from the cache (Loader.CacheDir).
	Cache CacheState
	// Precision is what the model computes in: "fp32", or "fp16" (" nhwc" when the CUDA
	// provider prefers that layout), with the load check's figures or why float16 was not
	// used (precision.go).
	Precision string
	// LoadTime is how long loading took: mapping and hashing the file, creating the session
	// (graph optimization or reading the cached optimized graph), allocating its buffers.
	LoadTime time.Duration
	// WarmUpTime is how long the warm-up inference took (Registry loads only).
	WarmUpTime time.Duration
	MaxDelay   time.Duration

	sess  *infer.Session
	stamp stamp // the file version loaded
}

// Loader loads models, optionally through the optimized-model cache.
type Loader struct {
	// CacheDir holds ONNX Runtime's optimized graphs (see DefaultCacheDir); "" disables the
	// cache. A load writes the graph it optimized there; a later load of the same bytes with
	// the same ONNX Runtime, provider and CPU reads it with graph optimization off.
	CacheDir string
	// Logf reports cache problems, which never fail a load (default: discard).
	Logf func(format string, args ...any)
}

// Load opens the model a declaration describes without the optimized-model cache; see
// Loader.Load.
func Load(c config.Model) (*Model, error) { return (&Loader{}).Load(c) }

// Load opens the model a declaration describes. The .onnx file is mmap'ed and its bytes handed
// to ONNX Runtime (CreateSessionFromArray), never copied into the Go heap. Errors name the model
// and what to fix: a file that is not ONNX, outputs that fit no family, a labels file whose
// count differs from the model's classes.
func (l *Loader) Load(c config.Model) (*Model, error) { return l.load(c, nil) }

// onDevice places a load on a GPU: ONNX Runtime's CUDA provider on device ordinal, queueing its
// work on the given CUDA stream (user_compute_stream).
type onDevice struct {
	ordinal int
	stream  *cuda.Stream
	// floatInput keeps the float16 rewrite's input float32 (a Cast after it) instead of
	// float16 from the preprocessing kernel.
	floatInput bool
}

func (l *Loader) load(c config.Model, dev *onDevice) (*Model, error) {
	if c.Name == "" {
		c.Name = strings.TrimSuffix(filepath.Base(c.Path), filepath.Ext(c.Path))
	}
	logf := l.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	t0 := time.Now()
	bytes, unmap, st, err := mapFile(c.Path)
	if err != nil {
		return nil, fmt.Errorf("model %s: %w", c.Name, err)
	}
	// ONNX Runtime's intra-op threads spin between operators by default; next to a dozen decoder
	// goroutines on the same cores that spinning steals their time (docs/benchmarks.md). ort_config
	// overrides.
	entries := map[string]string{"session.intra_op.allow_spinning": "0", "session.inter_op.allow_spinning": "0"}
	for k, v := range c.ORTConfig {
		entries[k] = v
	}
	sum := sha256.Sum256(bytes)
	threads := ClampThreads(c.IntraOpThreads)
	if threads != c.IntraOpThreads {
		logf("model %s: intra_op_threads %d clamped to %d (the machine has %d cores)", c.Name, c.IntraOpThreads, threads, runtime.NumCPU())
	}
	cfg := infer.Config{Path: c.Path, IntraOpThreads: threads, Provider: c.Provider.String(), MaxBatch: c.MaxBatch,
		ConfigEntries: entries, ProviderOptions: c.ProviderOptions}
	if c.Input != nil {
		cfg.InputWidth, cfg.InputHeight = c.Input.Width, c.Input.Height
	}
	cacheDir := l.CacheDir
	if dev != nil {
		// The stream handle is part of the provider options, so a cached graph would never be
		// found again: GPU loads bypass the optimized-model cache.
		cfg.Provider, cfg.Device, cacheDir = infer.ProviderCUDA, dev.ordinal, ""
		cfg.ProviderOptions = map[string]string{}
		for k, v := range c.ProviderOptions {
			cfg.ProviderOptions[k] = v
		}
		for k, v := range infer.StreamOptions(dev.stream) {
			cfg.ProviderOptions[k] = v
		}
	}
	rw := rewritten{data: bytes, sum: sum, release: func() {}}
	if wantsRewrite(c, dev != nil) {
		rw = l.dynamicBatch(c, bytes, sum, threads, logf)
	}
	defer unmap()
	defer rw.release()
	pv := l.precisionFor(c, rw, cfg, dev != nil && !dev.floatInput, logf)
	open, openSum, openCfg := rw.data, rw.sum, cfg
	if pv.known && pv.half {
		open, openSum = pv.serve, pv.serveSum
	}
	if pv.known {
		openCfg = withNHWC(cfg, pv.nhwc)
	}
	sess, cache, err := openCached(cacheDir, c.Name, open, openSum, openCfg, logf)
	if err != nil && pv.known && pv.half && openSum != pv.sum {
		logf("model %s: the float16-input rewrite does not load (%v): a Cast after the input instead", c.Name, err)
		sess, cache, err = openCached(cacheDir, c.Name, pv.data, pv.sum, openCfg, logf)
	}
	if err != nil {
		return nil, fmt.Errorf("model %s: %w", c.Name, err)
	}
	if rw.batch == "" {
		rw.batch = BatchDynamic
		if b := sess.ModelBatch(); b > 0 {
			rw.batch = strconv.Itoa(b)
		}
	}
	m := &Model{Name: c.Name, Path: c.Path, sess: sess, SHA256: hex.EncodeToString(sum[:]), Batch: rw.batch, Cache: cache,
		LoadTime: time.Since(t0), MaxDelay: time.Duration(c.MaxDelay), stamp: st}
	if err := m.configure(c); err != nil {
		sess.Close()
		return nil, fmt.Errorf("model %s (%s): %w", c.Name, c.Path, err)
	}
	if err := l.settlePrecision(c, m, rw, pv, cfg, cacheDir, logf); err != nil {
		m.sess.Close()
		return nil, fmt.Errorf("model %s (%s): %w", c.Name, c.Path, err)
	}
	if m.sess.InputHalf() {
		m.Precision += " + float16 input"
	}
	return m, nil
}

func (m *Model) configure(c config.Model) error {
	w, h := m.sess.InputSize()
	if c.Input != nil {
		if (w != 0 && w != c.Input.Width) || (h != 0 && h != c.Input.Height) {
			return fmt.Errorf("input %dx%d in the config but the model takes %dx%d", c.Input.Width, c.Input.Height, w, h)
		}
		w, h = c.Input.Width, c.Input.Height
	}
	if w == 0 || h == 0 {
		return fmt.Errorf("the model's input size is dynamic: set input: {width: W, height: H}")
	}
	if c.Kind != attr.KindDetect {
		if c.Family != "" {
			return fmt.Errorf("family %s is for detectors; a %s model has none", c.Family, c.Kind)
		}
		return m.configureAttr(c, w, h)
	}
	var fam detect.Family
	var err error
	if c.Family != "" {
		fam, err = detect.ParseFamily(string(c.Family))
	} else {
		fam, err = detect.DetectFamilyAt(w, h, m.sess.Outputs())
	}
	if err != nil {
		return err
	}
	m.Family = fam
	// The family's published preprocessing, for every field the config leaves unset; its
	// thresholds and labels come from detect.DefaultParams. ParseFamily and DetectFamilyAt
	// return registered families only.
	kind, _ := detect.Lookup(fam)
	m.Pre = kind.Preprocess
	m.Pre.Width, m.Pre.Height = w, h
	c.Preprocess.Apply(&m.Pre)
	if err := m.Pre.Validate(); err != nil {
		return err
	}
	m.Post = detect.DefaultParams(fam)
	m.Post.ClassAgnosticNMS, m.Post.InputWidth, m.Post.InputHeight = c.ClassAgnosticNMS, w, h
	if c.MaxDetections > 0 {
		m.Post.MaxDetections = c.MaxDetections
	}
	if c.ScoreThreshold != nil {
		m.Post.ScoreThreshold = *c.ScoreThreshold
	}
	if c.NMSIoU != nil {
		m.Post.NMSIoU = *c.NMSIoU
	}
	// Validate the layout without labels first, to learn the class count.
	defLabels := m.Post.Labels
	m.Post.Labels, m.Post.LabelsFile = nil, ""
	dec, err := detect.NewDecoder(fam, m.sess.Outputs(), m.Post)
	if err != nil {
		return err
	}
	labels, err := resolveLabels(c.Labels, defLabels, dec.Classes())
	if err != nil {
		return err
	}
	m.Post.Labels, m.Post.LabelsFile = labels, c.Labels
	_, err = detect.NewDecoder(fam, m.sess.Outputs(), m.Post)
	return err
}

// resolveLabels: an explicit labels file (or "coco80") must match the class count; the family's
// default labels apply only when they match, else classes are named class_N.
func resolveLabels(given string, def []string, classes int) ([]string, error) {
	var l []string
	var err error
	switch given {
	case "":
		if len(def) == classes {
			return def, nil
		}
		l = make([]string, classes)
		for i := range l {
			l[i] = fmt.Sprintf("class_%d", i)
		}
		return l, nil
	case "coco80":
		l = detect.COCO80()
	default:
		if l, err = detect.LoadLabels(given); err != nil {
			return nil, err
		}
	}
	if len(l) != classes {
		return nil, fmt.Errorf("labels %s name %d classes but the model outputs %d: give the labels file the model was trained with", given, len(l), classes)
	}
	return l, nil
}

// Declare returns the declaration of the model at an .onnx path: MODEL.yaml beside it (same
// base name) when present, for its family, preprocessing and thresholds; otherwise just the
// path, everything else auto-detected at Load.
func Declare(path string) (config.Model, error) {
	c := config.Model{Path: path}
	side := strings.TrimSuffix(path, filepath.Ext(path)) + ".yaml"
	if _, err := os.Stat(side); err == nil {
		mc, err := config.LoadModel(side)
		if err != nil {
			return c, err
		}
		c = *mc
		if c.Path == "" {
			c.Path = path
		}
	}
	if c.Name == "" {
		c.Name = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	}
	return c, nil
}

// Session returns the ONNX Runtime session.
func (m *Model) Session() *infer.Session { return m.sess }

// Close frees the session.
func (m *Model) Close() { m.sess.Close() }

// Preprocess is the model's input geometry and normalization.
func (m *Model) Preprocess() preprocess.Spec { return m.Pre }

// MaxBatch is the largest batch a run takes.
func (m *Model) MaxBatch() int { return m.sess.MaxBatch() }

// Input returns the native [batch,3,H,W] input buffer.
func (m *Model) Input(batch int) ([]float32, error) { return m.sess.Input(batch) }

// Run infers the batch in Input(batch).
func (m *Model) Run(batch int) ([]tensor.Tensor, error) { return m.sess.Run(batch) }

// InputSet returns input set set's buffer (infer.Session.InputSet; Input is set 0).
func (m *Model) InputSet(set, batch int) ([]float32, error) { return m.sess.InputSet(set, batch) }

// RunSet infers the batch in InputSet(set, batch).
func (m *Model) RunSet(set, batch int) ([]tensor.Tensor, error) { return m.sess.RunSet(set, batch) }

// NewDecoder returns a post-processor (one per worker).
func (m *Model) NewDecoder() (detect.Decoder, error) {
	if m.Kind != attr.KindDetect {
		return nil, nil
	}
	return detect.NewDecoder(m.Family, m.sess.Outputs(), m.Post)
}

// Labels are the class names.
func (m *Model) Labels() []string { return m.Post.Labels }
