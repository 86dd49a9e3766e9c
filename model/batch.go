package model

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/infer"
	"github.com/vinfer/vinfer/model/onnxedit"
)

// A model exported with a fixed batch of 1 runs one frame at a time. When its declaration asks
// for batching (max_batch > 1), or it runs on a GPU (whose CUDA plugin provider crashes on
// YOLOX's strided Slices), Load rewrites it (package onnxedit: a symbolic batch dimension,
// Reshape targets that hard-code the 1 patched, Focus as one Conv), checks on the CPU that a
// batch of 2 of the rewrite gives what the original gives each image alone, and serves the
// rewrite. A model the rewrite refuses, or whose check fails, stays at batch 1, and the reason
// is logged once per process. The rewritten bytes, or the refusal, go into the cache
// directory (NAME-KEY.batch, keyed by the original's SHA-256), so that the rewrite and its
// check run once per model file.

// Batch descriptions of Model.Batch.
const (
	BatchDynamic   = "dynamic"
	BatchRewritten = "dynamic (rewritten from 1)"
)

// Magic numbers of the batch cache files: a rewritten model, or the reason none is used.
const (
	batchMagic   = "vinfer-batch-1\n\n"
	focusMagic   = "vinfer-dynfocus\n" // a dynamic-batch model with its Focus replaced
	nobatchMagic = "vinfer-nobatch1\n"
)

// batchCheckTol bounds |batched − alone| ≤ tol·(1+|alone|) in the check: ONNX Runtime may sum
// in another order at another batch size.
const batchCheckTol = 1e-3

// batchVerdicts remembers, per cache key, the check's outcome in this process (so that a model
// loaded again, or on several GPU lanes, is checked and logged once also without a cache
// directory).
var batchVerdicts sync.Map // key → batchVerdict

type batchVerdict struct {
	ok     bool
	reason string // why not, when !ok
}

// wantsRewrite reports whether a load of c tries the batch rewrite: batching asked for, or a
// GPU provider.
func wantsRewrite(c config.Model, gpu bool) bool {
	return c.MaxBatch > 1 || gpu || c.Provider == config.ProviderCUDA
}

// batchKey names a model's rewrite: it depends on the original bytes and the rewriter only.
func batchKey(sum [sha256.Size]byte) string {
	h := sha256.New()
	fmt.Fprintf(h, "%smodel %x\nrewrite dynamic-batch focus-conv\n", batchMagic, sum)
	return hex.EncodeToString(h.Sum(nil))[:32]
}

// rewritten is what dynamicBatch gives a load.
type rewritten struct {
	data    []byte // the model to open: the rewrite, or the original
	sum     [sha256.Size]byte
	batch   string // Model.Batch when known ("" : from the session)
	release func() // frees data when it is a mapped cache file
}

// dynamicBatch returns the model a load of c opens: the original (data, sum) or its
// dynamic-batch rewrite, from the cache when there. Nothing here fails a load.
func (l *Loader) dynamicBatch(c config.Model, data []byte, sum [sha256.Size]byte, threads int,
	logf func(string, ...any)) rewritten {
	orig := rewritten{data: data, sum: sum, release: func() {}}
	key := batchKey(sum)
	path := ""
	if l.CacheDir != "" {
		path = filepath.Join(l.CacheDir, cachePrefix(c.Name)+key+".batch")
		switch magic, payload, psum, unmap, err := readCacheFile(path); {
		case err == nil && (magic == batchMagic || magic == focusMagic):
			touch(path)
			batch := BatchRewritten
			if magic == focusMagic {
				batch = BatchDynamic
			}
			return rewritten{data: payload, sum: psum, batch: batch, release: unmap}
		case err == nil && magic == nobatchMagic:
			r := string(payload)
			unmap()
			touch(path)
			if c.MaxBatch > 1 {
				logBatchOnce(key, func() { logf("model %s: batch stays 1 (max_batch %d ignored): %s", c.Name, c.MaxBatch, r) })
			}
			return orig
		case err == nil:
			unmap()
			logf("model %s: %s is not a batch rewrite: rewriting again", c.Name, path)
		case errors.Is(err, errCacheCorrupt):
			logf("model %s: %v: rewriting again", c.Name, err)
		}
	}
	out, rep, err := onnxedit.Rewrite(data, onnxedit.Options{FocusConv: true})
	var ue *onnxedit.UnsupportedError
	switch {
	case errors.Is(err, onnxedit.ErrUnchanged):
		orig.batch = BatchDynamic
		return orig
	case errors.Is(err, onnxedit.ErrNotONNX):
		return orig // ONNX Runtime reports it
	case errors.As(err, &ue):
		if c.MaxBatch > 1 {
			l.refuse(c, key, path, ue.Reason, logf)
		}
		return orig
	case err != nil:
		logf("model %s: batch rewrite: %v", c.Name, err)
		return orig
	}
	v, seen := batchVerdicts.Load(key)
	if !seen {
		verdict := batchVerdict{ok: true}
		if err := checkBatch(data, out, threads); errors.Is(err, errBatchMismatch) {
			verdict = batchVerdict{reason: err.Error()}
		} else if err != nil {
			// Not the rewrite's fault (no memory, no ONNX Runtime, ...): batch 1 this time,
			// nothing remembered or cached, the next load or start checks again.
			if c.MaxBatch > 1 {
				logf("model %s: batch stays 1 for this load (not cached, checked again next time): %v", c.Name, err)
			}
			return orig
		}
		v, _ = batchVerdicts.LoadOrStore(key, verdict)
	}
	if vd := v.(batchVerdict); !vd.ok {
		if c.MaxBatch > 1 {
			l.refuse(c, key, path, vd.reason, logf)
		}
		return orig
	}
	batch, magic := BatchRewritten, batchMagic
	if rep.FromBatch == 0 {
		batch, magic = BatchDynamic, focusMagic
	}
	logBatchOnce(key, func() {
		logf("model %s: batch: %s (%s; checked at batch 2 against the original)", c.Name, batch, rep)
	})
	if path != "" {
		if err := writeCacheFile(path, magic, out); err != nil {
			logf("model %s: cannot write the rewritten model to the cache: %v", c.Name, err)
		} else {
			pruneCache(l.CacheDir, c.Name)
		}
	}
	return rewritten{data: out, sum: sha256.Sum256(out), batch: batch, release: func() {}}
}

// refuse logs why a model stays at batch 1 (once per process) and caches the refusal: only
// for what the model is (the rewrite refused, outputs that differ), never a load failure.
func (l *Loader) refuse(c config.Model, key, path, reason string, logf func(string, ...any)) {
	logBatchOnce(key, func() { logf("model %s: batch stays 1 (max_batch %d ignored): %s", c.Name, c.MaxBatch, reason) })
	if path != "" {
		if err := writeCacheFile(path, nobatchMagic, []byte(reason)); err == nil {
			pruneCache(l.CacheDir, c.Name)
		}
	}
}

var batchLogged sync.Map

func logBatchOnce(key string, log func()) {
	if _, done := batchLogged.LoadOrStore(key, true); !done {
		log()
	}
}

func touch(path string) {
	now := time.Now()
	os.Chtimes(path, now, now)
}

// errBatchMismatch marks a check's finding about the model itself (sizes, outputs, shapes or
// values that differ between the rewrite at batch 2 and the original): the refusal is cached.
// Other check errors (a session that does not open or run) are not.
var errBatchMismatch = errors.New("the rewrite differs from the original")

// openCheck opens the check's sessions (a variable for tests).
var openCheck = infer.Open

// checkBatch runs the original at batch 1 on two different inputs and the rewrite at batch 2
// on both, on ONNX Runtime's CPU provider, and compares every output value. Errors wrap
// errBatchMismatch when the outputs differ.
func checkBatch(orig, out []byte, threads int) error {
	cfg := infer.Config{Path: "original", Model: orig, IntraOpThreads: threads, MaxBatch: 1,
		ConfigEntries: map[string]string{"session.intra_op.allow_spinning": "0"}}
	one, err := openCheck(cfg)
	if err != nil {
		return fmt.Errorf("the original does not load on the CPU to check the rewrite: %w", err)
	}
	defer one.Close()
	cfg.Path, cfg.Model, cfg.MaxBatch = "rewritten", out, 2
	two, err := openCheck(cfg)
	if err != nil {
		return fmt.Errorf("the rewritten model does not load: %w", err)
	}
	defer two.Close()
	in2, err := two.Input(2)
	if err != nil {
		return fmt.Errorf("the rewritten model: %w", err)
	}
	per := len(in2) / 2
	// Two different inputs in [0, 1): an item mixed with its neighbour shows.
	x := uint32(2463534242)
	for i := range in2 {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		in2[i] = float32(x>>8) / (1 << 24)
	}
	var alone [2][][]float32
	for k := range 2 {
		in1, err := one.Input(1)
		if err != nil {
			return fmt.Errorf("the original: %w", err)
		}
		if len(in1) != per {
			return fmt.Errorf("%w: the original takes %d values per image, the rewrite %d", errBatchMismatch, len(in1), per)
		}
		copy(in1, in2[k*per:(k+1)*per])
		outs, err := one.Run(1)
		if err != nil {
			return fmt.Errorf("the original does not run: %w", err)
		}
		for _, o := range outs {
			alone[k] = append(alone[k], append([]float32(nil), o.Data...))
		}
	}
	outs, err := two.Run(2)
	if err != nil {
		return fmt.Errorf("the rewritten model does not run a batch of 2: %w", err)
	}
	if len(outs) != len(alone[0]) {
		return fmt.Errorf("%w: the rewritten model has %d outputs, the original %d", errBatchMismatch, len(outs), len(alone[0]))
	}
	for i, o := range outs {
		n := len(alone[0][i])
		if len(o.Data) != 2*n || len(o.Shape) == 0 || o.Shape[0] != 2 {
			return fmt.Errorf("%w: output %s: shape %v at batch 2, %d values at batch 1", errBatchMismatch, o.Name, o.Shape, n)
		}
		for k := range 2 {
			for j, want := range alone[k][i] {
				got := o.Data[k*n+j]
				if d := math.Abs(float64(got - want)); !(d <= batchCheckTol*(1+math.Abs(float64(want)))) {
					return fmt.Errorf("%w: output %s: image %d of a batch of 2 gives %g at %d, alone %g", errBatchMismatch, o.Name, k, got, j, want)
				}
			}
		}
	}
	return nil
}

// DynamicBatch rewrites an ONNX model exported with a fixed batch of 1 as load does (a dynamic
// batch, Focus as a Conv) and checks the rewrite at batch 2 against the original on ONNX
// Runtime's CPU provider with threads intra-op threads. Errors: the onnxedit errors, or the
// check's.
func DynamicBatch(data []byte, threads int) ([]byte, onnxedit.Report, error) {
	out, rep, err := onnxedit.Rewrite(data, onnxedit.Options{FocusConv: true})
	if err != nil {
		return nil, rep, err
	}
	if err := checkBatch(data, out, threads); err != nil {
		return nil, rep, fmt.Errorf("the rewritten model fails its check: %w", err)
	}
	return out, rep, nil
}
