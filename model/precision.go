package model

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/infer"
	"github.com/vinfer/vinfer/model/onnxedit"
)

// A model declared with precision: fp16 or auto runs a float16 rewrite of its graph
// (onnxedit.FP16: float32 input and outputs, so preprocessing and decoders are unchanged),
// when the rewrite holds. Load checks it against the float32 model on the same provider on a
// probe batch (a synthetic picture through the model's preprocessing) and refuses it, serving
// float32 and logging why, when an output's relative RMS error exceeds fp16MaxRMS or a value
// is not finite where float32's is; a detector's detections on two real pictures must also
// agree (compareDetections: issue 28's match rule, 99 %). With auto the rewrite serves only where it also runs
// faster, timed at load. On the CUDA provider the layout (prefer_nhwc) is timed too unless
// provider_options sets it. The rewrite is cached beside the batch rewrite (NAME-KEY.fp16);
// the verdict is remembered for the process, so the lanes of a GPU load check once.

// Precision descriptions of Model.Precision start with these words.
const (
	PrecisionFP32 = "fp32"
	PrecisionFP16 = "fp16"
)

// fp16MaxRMS bounds an output's relative RMS error ‖fp16 − fp32‖₂ / ‖fp32‖₂ on the probe
// batch. Rounding the weights alone gives YOLOX-Nano's raw outputs 1.3 %; a value out of
// float16's range gives inf or NaN, far beyond.
const fp16MaxRMS = 0.05

// fp16Faster is how much faster (median run time) the float16 rewrite must be for auto to
// keep it: 5 %, beyond the noise of the timing.
const fp16Faster = 0.95

// Magic numbers of the float16 cache files: the rewrite, or why there is none.
const (
	fp16Magic   = "vinfer-fp16-1\n\n\n"
	nofp16Magic = "vinfer-nofp16-1\n"
)

// halfRewrite rewrites a model to float16 (a variable for tests).
var halfRewrite = onnxedit.FP16

// precisionVerdicts remembers each check's outcome in this process (key → precisionVerdict).
var precisionVerdicts sync.Map

type precisionVerdict struct {
	half bool   // serve the float16 rewrite
	nhwc string // prefer_nhwc to set: "", "0" or "1"
	desc string // Model.Precision
}

// halfModel returns the float16 rewrite of the model a load opens (from the cache when there),
// with a float16 input when halfInput, or nil and why not.
func (l *Loader) halfModel(c config.Model, rw rewritten, halfInput bool, logf func(string, ...any)) ([]byte, [sha256.Size]byte, string) {
	var sum [sha256.Size]byte
	h := sha256.New()
	fmt.Fprintf(h, "%smodel %x\nrewrite float16, first quarter float32\n", fp16Magic, rw.sum)
	if halfInput {
		fmt.Fprintf(h, "input float16\n")
	}
	key := hex.EncodeToString(h.Sum(nil))[:32]
	path := ""
	if l.CacheDir != "" {
		path = filepath.Join(l.CacheDir, cachePrefix(c.Name)+key+".fp16")
		switch magic, payload, psum, unmap, err := readCacheFile(path); {
		case err == nil && magic == fp16Magic:
			out := slices.Clone(payload) // served after the next loads may prune the file
			unmap()
			touch(path)
			return out, psum, ""
		case err == nil && magic == nofp16Magic:
			r := string(payload)
			unmap()
			touch(path)
			return nil, sum, r
		case err == nil:
			unmap()
		case errors.Is(err, errCacheCorrupt):
			logf("model %s: %v: rewriting again", c.Name, err)
		}
	}
	out, rep, err := halfRewrite(rw.data, onnxedit.FP16Options{HalfInput: halfInput})
	var ue *onnxedit.UnsupportedError
	switch {
	case errors.As(err, &ue):
		if path != "" {
			writeCacheFile(path, nofp16Magic, []byte(ue.Error()))
		}
		return nil, sum, ue.Error()
	case err != nil:
		return nil, sum, err.Error()
	}
	logBatchOnce("fp16 "+key, func() { logf("model %s: %s", c.Name, rep) })
	if path != "" {
		if err := writeCacheFile(path, fp16Magic, out); err != nil {
			logf("model %s: cannot write the float16 rewrite to the cache: %v", c.Name, err)
		} else {
			pruneCache(l.CacheDir, c.Name)
		}
	}
	return out, sha256.Sum256(out), ""
}

// precisionKey names a check: the two models, the provider and its options, the mode.
func precisionKey(c config.Model, ref, half [sha256.Size]byte, cfg infer.Config) string {
	h := sha256.New()
	fmt.Fprintf(h, "fp32 %x\nfp16 %x\nprovider %s %d\nprecision %s\nbatch %d\n", ref, half, cfg.Provider, cfg.Device, c.Precision, cfg.MaxBatch)
	writeSorted(h, "option", cfg.ProviderOptions)
	return hex.EncodeToString(h.Sum(nil))[:32]
}

// checkConfig is cfg for the check's own sessions: no user stream, no CUDA graph.
func checkConfig(cfg infer.Config) infer.Config {
	cfg.ProviderOptions = maps.Clone(cfg.ProviderOptions)
	for _, k := range []string{"has_user_compute_stream", "user_compute_stream", "enable_cuda_graph"} {
		delete(cfg.ProviderOptions, k)
	}
	cfg.OptimizedModelPath, cfg.DisableOptimization = "", false
	return cfg
}

// errFP16Mismatch marks a check that found the rewrite's outputs off.
var errFP16Mismatch = errors.New("the float16 rewrite differs from the float32 model")

// judgePrecision checks the float16 rewrite half against the float32 model ref on the probe
// batch made for m, and times them where the mode or the layout asks, on cfg's provider.
func judgePrecision(c config.Model, m *Model, ref, half []byte, cfg infer.Config) (precisionVerdict, error) {
	cfg = checkConfig(cfg)
	layouts := []string{""}
	if cfg.Provider == infer.ProviderCUDA {
		if _, set := c.ProviderOptions["prefer_nhwc"]; !set {
			layouts = []string{"0", "1"}
		}
	}
	open := func(data []byte, nhwc string) (*infer.Session, error) {
		k := cfg
		k.Model, k.ProviderOptions = data, maps.Clone(cfg.ProviderOptions)
		if nhwc != "" {
			if k.ProviderOptions == nil {
				k.ProviderOptions = map[string]string{}
			}
			k.ProviderOptions["prefer_nhwc"] = nhwc
		}
		return openCheck(k)
	}
	s32, err := open(ref, layouts[0])
	if err != nil {
		return precisionVerdict{}, fmt.Errorf("the float32 model does not load to check the float16 rewrite: %w", err)
	}
	defer s32.Close()
	s16, err := open(half, layouts[0])
	if err != nil {
		return precisionVerdict{}, fmt.Errorf("%w: it does not load: %v", errFP16Mismatch, err)
	}
	defer s16.Close()
	// The batch the check and the timing run: on a GPU the largest, the only shape the sessions
	// then see (the CUDA EP plugin hung when one session's batch shapes varied:
	// docs/benchmarks-gpu.md) and the one served; on the CPU at most 2, to keep loads short.
	batch := s32.MaxBatch()
	if cfg.Provider != infer.ProviderCUDA {
		batch = min(batch, 2)
	}
	stats, err := compareHalf(m, s32, s16, batch)
	if err != nil {
		return precisionVerdict{}, err
	}
	if dets, err := compareDetections(m, s32, s16, batch); err != nil {
		return precisionVerdict{}, err
	} else if dets != "" {
		stats += "; " + dets
	}
	v := precisionVerdict{half: true, desc: PrecisionFP16 + " (checked: " + stats + ")"}
	timed := c.Precision == config.PrecisionAuto || len(layouts) > 1
	if !timed {
		return v, nil
	}
	type cand struct {
		half bool
		nhwc string
		t    time.Duration
	}
	var cands []cand
	var sessions []*infer.Session
	for _, nhwc := range layouts {
		for _, h := range []bool{false, true} {
			if !h && c.Precision != config.PrecisionAuto {
				continue
			}
			var s *infer.Session
			switch {
			case nhwc == layouts[0] && h:
				s = s16
			case nhwc == layouts[0]:
				s = s32
			default:
				data := ref
				if h {
					data = half
				}
				if s, err = open(data, nhwc); err != nil {
					continue // this layout does not load: not a candidate
				}
				defer s.Close()
			}
			cands, sessions = append(cands, cand{half: h, nhwc: nhwc}), append(sessions, s)
		}
	}
	ts, err := timeRuns(sessions, batch)
	if err != nil { // not timed: float16 only where asked for, the provider's default layout
		if c.Precision == config.PrecisionAuto {
			v = precisionVerdict{desc: fmt.Sprintf("%s (checked: %s; not timed: %v)", PrecisionFP32, stats, err)}
		}
		return v, nil
	}
	for i := range cands {
		cands[i].t = ts[i]
	}
	if len(cands) == 0 {
		return v, nil
	}
	best := cands[0]
	var times []string
	for _, k := range cands {
		p := PrecisionFP32
		if k.half {
			p = PrecisionFP16
		}
		if k.nhwc == "1" {
			p += " nhwc"
		}
		times = append(times, fmt.Sprintf("%s %v", p, k.t.Round(10*time.Microsecond)))
		t := k.t
		if k.half && !best.half {
			t = time.Duration(float64(t) / fp16Faster) // float16 must win clearly
		} else if !k.half && best.half {
			t = time.Duration(float64(t) * fp16Faster)
		}
		if t < best.t {
			best = k
		}
	}
	v.half, v.nhwc = best.half, best.nhwc
	p := PrecisionFP32
	if best.half {
		p = PrecisionFP16
	}
	if best.nhwc == "1" {
		p += " nhwc"
	}
	v.desc = fmt.Sprintf("%s (checked: %s; per batch of %d: %s)", p, stats, batch, strings.Join(times, ", "))
	return v, nil
}

// timeRuns returns, per session, the median time of a run of a batch of n: warm-up runs, then
// the sessions in turn, one run each, so that a drift of the machine (clocks, other load) falls
// on all alike.
func timeRuns(ss []*infer.Session, n int) ([]time.Duration, error) {
	const warm, runs = 3, 9
	ts := make([][]time.Duration, len(ss))
	for _, s := range ss {
		if _, err := s.Input(n); err != nil {
			return nil, err
		}
	}
	for i := range warm + runs {
		for k, s := range ss {
			t0 := time.Now()
			if _, err := s.Run(n); err != nil {
				return nil, err
			}
			if i >= warm {
				ts[k] = append(ts[k], time.Since(t0))
			}
		}
	}
	med := make([]time.Duration, len(ss))
	for k := range ts {
		slices.Sort(ts[k])
		med[k] = ts[k][runs/2]
	}
	return med, nil
}

// compareHalf runs a probe batch of n through both sessions and compares every output; it
// returns the worst relative RMS, absolute and relative errors, or an error wrapping
// errFP16Mismatch naming the output that is off.
func compareHalf(m *Model, s32, s16 *infer.Session, n int) (string, error) {
	in32, err := s32.Input(n)
	if err != nil {
		return "", err
	}
	in16, err := s16.Input(n)
	if err != nil {
		return "", err
	}
	if len(in16) != len(in32) {
		return "", fmt.Errorf("%w: it takes %d input values, float32 %d", errFP16Mismatch, len(in16), len(in32))
	}
	probe(m, in32, n)
	copy(in16, in32)
	o32, err := s32.Run(n)
	if err != nil {
		return "", fmt.Errorf("the float32 model does not run the probe batch: %w", err)
	}
	ref := make([][]float32, len(o32))
	for i, o := range o32 {
		ref[i] = slices.Clone(o.Data)
	}
	o16, err := s16.Run(n)
	if err != nil {
		return "", fmt.Errorf("%w: it does not run: %v", errFP16Mismatch, err)
	}
	if len(o16) != len(ref) {
		return "", fmt.Errorf("%w: %d outputs, float32 %d", errFP16Mismatch, len(o16), len(ref))
	}
	var worstRMS, worstAbs, worstRel float64
	for i, o := range o16 {
		if len(o.Data) != len(ref[i]) {
			return "", fmt.Errorf("%w: output %s has %d values, float32 %d", errFP16Mismatch, o.Name, len(o.Data), len(ref[i]))
		}
		var se, ss, scale float64
		for _, r := range ref[i] {
			scale = max(scale, math.Abs(float64(r)))
		}
		for j, g := range o.Data {
			r := float64(ref[i][j])
			d := math.Abs(float64(g) - r)
			if math.IsNaN(d) || math.IsInf(d, 0) {
				if !math.IsNaN(r) && !math.IsInf(r, 0) {
					return "", fmt.Errorf("%w: output %s: value %d is %g in float16, %g in float32 (beyond float16's range ±65504?)",
						errFP16Mismatch, o.Name, j, g, r)
				}
				continue
			}
			se, ss = se+d*d, ss+r*r
			worstAbs = max(worstAbs, d)
			if math.Abs(r) > 1e-3*scale {
				worstRel = max(worstRel, d/math.Abs(r))
			}
		}
		rms := math.Sqrt(se / max(ss, 1e-30))
		if !(rms <= fp16MaxRMS) {
			return "", fmt.Errorf("%w: output %s: relative RMS error %.3g > %g (max |Δ| %.3g)", errFP16Mismatch, o.Name, rms, fp16MaxRMS, worstAbs)
		}
		worstRMS = max(worstRMS, rms)
	}
	return fmt.Sprintf("relative RMS error %.2g, max |Δ| %.3g, max relative %.3g", worstRMS, worstAbs, worstRel), nil
}

// probe fills in ([n,3,H,W]) with a synthetic picture per image, gradients and a pseudo-random
// texture in 0…255, through the model's normalization.
func probe(m *Model, in []float32, n int) {
	per := len(in) / n
	plane := per / 3
	w := max(m.Pre.Width, 1)
	x := uint32(2463534242)
	for k := range n {
		for ch := range 3 {
			for p := range plane {
				x ^= x << 13
				x ^= x >> 17
				x ^= x << 5
				px, py := p%w, p/w
				v := float32((px*3+py*5+ch*40+k*70)%256)*0.7 + float32(x>>24)*0.3
				in[k*per+ch*plane+p] = (v*m.Pre.Scale - m.Pre.Mean[ch]) / m.Pre.Std[ch]
			}
		}
	}
}

// precisionPlan is what a load knows of its precision before opening the session.
type precisionPlan struct {
	precisionVerdict
	known bool              // the verdict is from an earlier check in this process
	data  []byte            // the float16 rewrite; nil: float32 only
	sum   [sha256.Size]byte // data's SHA-256
	key   string            // precisionVerdicts key
	// serve and serveSum are the float16 rewrite a GPU lane serves: with a float16 input, fed
	// by the preprocessing kernel; data when there is none (the host path).
	serve    []byte
	serveSum [sha256.Size]byte
}

// precisionFor prepares a load of c: the float16 rewrite when the declaration asks for one and
// the rewrite holds, and the verdict of a check already made in this process.
func (l *Loader) precisionFor(c config.Model, rw rewritten, cfg infer.Config, device bool, logf func(string, ...any)) precisionPlan {
	var p precisionPlan
	p.desc = PrecisionFP32
	if c.Precision == config.PrecisionFP32 {
		return p
	}
	data, sum, why := l.halfModel(c, rw, false, logf)
	if data == nil {
		p.desc = PrecisionFP32 + " (no float16 rewrite: " + why + ")"
		logBatchOnce("fp16 refused "+c.Name+why, func() { logf("model %s: precision %s: float32 served: %s", c.Name, c.Precision, why) })
		p.known = true
		return p
	}
	p.data, p.sum = data, sum
	p.serve, p.serveSum = data, sum
	if device {
		if in16, sum16, why := l.halfModel(c, rw, true, logf); in16 != nil {
			p.serve, p.serveSum = in16, sum16
		} else {
			logBatchOnce("fp16 input refused "+c.Name+why, func() {
				logf("model %s: float16 input refused (a Cast after the input instead): %s", c.Name, why)
			})
		}
	}
	p.key = precisionKey(c, rw.sum, sum, checkConfig(cfg))
	if v, ok := precisionVerdicts.Load(p.key); ok {
		p.precisionVerdict, p.known = v.(precisionVerdict), true
	}
	return p
}

// withNHWC returns cfg with prefer_nhwc set to nhwc ("" : as it is).
func withNHWC(cfg infer.Config, nhwc string) infer.Config {
	if nhwc == "" {
		return cfg
	}
	cfg.ProviderOptions = maps.Clone(cfg.ProviderOptions)
	if cfg.ProviderOptions == nil {
		cfg.ProviderOptions = map[string]string{}
	}
	cfg.ProviderOptions["prefer_nhwc"] = nhwc
	return cfg
}

// settlePrecision checks the float16 rewrite when no verdict is known yet (m serves the
// float32 model then) and reopens m's session with the float16 rewrite or the layout the
// check chose. Only a session that does not open fails the load.
func (l *Loader) settlePrecision(c config.Model, m *Model, rw rewritten, p precisionPlan, cfg infer.Config,
	cacheDir string, logf func(string, ...any)) error {
	m.Precision = p.desc
	if p.known || p.data == nil {
		return nil
	}
	v, err := judgePrecision(c, m, rw.data, p.data, cfg)
	switch {
	case errors.Is(err, errFP16Mismatch):
		v = precisionVerdict{desc: PrecisionFP32 + " (float16 refused: " + err.Error() + ")"}
		precisionVerdicts.Store(p.key, v)
	case err != nil:
		// Not the rewrite's fault (no memory, a provider that fails): float32 this time,
		// checked again at the next load.
		m.Precision = PrecisionFP32 + " (float16 not checked: " + err.Error() + ")"
		logf("model %s: precision %s: float32 served, float16 not checked: %v", c.Name, c.Precision, err)
		return nil
	default:
		precisionVerdicts.Store(p.key, v)
	}
	logBatchOnce("precision "+p.key, func() { logf("model %s: precision %s: %s", c.Name, c.Precision, v.desc) })
	m.Precision = v.desc
	if !v.half && v.nhwc != "1" {
		return nil
	}
	data, sum := rw.data, rw.sum
	if v.half {
		data, sum = p.serve, p.serveSum
	}
	sess, cache, err := openCached(cacheDir, c.Name, data, sum, withNHWC(cfg, v.nhwc), logf)
	if err != nil && v.half && sum != p.sum {
		logf("model %s: the float16-input rewrite does not load (%v): a Cast after the input instead", c.Name, err)
		sess, cache, err = openCached(cacheDir, c.Name, p.data, p.sum, withNHWC(cfg, v.nhwc), logf)
	}
	if err != nil {
		return err
	}
	m.sess.Close()
	m.sess, m.Cache = sess, cache
	return m.configure(c)
}
