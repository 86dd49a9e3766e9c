package model

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/cpu"

	"github.com/vinfer/vinfer/infer"
	"github.com/vinfer/vinfer/internal/ort"
)

// The optimized-model cache keeps the graph ONNX Runtime produces at its full optimization
// level (ORT_ENABLE_ALL: constant folding, fusions, the CPU's NCHWc layout), so that a later
// load parses it with optimization off instead of optimizing again.
//
// A cache file is named NAME-KEY.ortcache. KEY hashes everything the optimized graph depends
// on: the SHA-256 of the .onnx bytes, the ONNX Runtime version, the execution provider and its
// options, the optimization level and the CPU's vector features (NCHWc blocks are 8 floats
// with AVX2, 16 with AVX-512, so a graph optimized on one CPU may not run on another). The
// file holds cacheMagic, the SHA-256 of the rest, then the optimized ONNX model; a file whose
// checksum does not match is rebuilt, never used.

// CacheState says how a load used the optimized-model cache.
type CacheState string

// Cache states of Model.Cache.
const (
	// CacheOff: no cache directory, or a provider whose optimized graphs cannot be saved.
	CacheOff CacheState = "off"
	// CacheMiss: the model was optimized from the original file and the result written to the
	// cache.
	CacheMiss CacheState = "miss"
	// CacheHit: the optimized model was read from the cache; graph optimization was skipped.
	CacheHit CacheState = "hit"
	// CacheInvalid: the cached file was corrupt or did not load; the model was optimized from
	// the original again and the cache file rewritten.
	CacheInvalid CacheState = "invalid"
)

// cacheMagic starts every cache file (16 bytes); the format number changes with the layout.
const cacheMagic = "vinfer-ortopt-1\n"

// cacheHeader is the magic plus the payload's SHA-256.
const cacheHeader = len(cacheMagic) + sha256.Size

// cacheKeep is how many cache files per model name are kept (the newest used), so that a model
// file replaced again and again does not fill the disk.
const cacheKeep = 3

// DefaultCacheDir is the default optimized-model cache directory: vinfer under
// $XDG_CACHE_HOME, else under ~/.cache (os.UserCacheDir); "" when neither is known.
func DefaultCacheDir() string {
	d, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(d, "vinfer")
}

// cacheable reports whether ONNX Runtime can save the provider's optimized graph: TensorRT
// compiles subgraphs into engines, which an ONNX file cannot hold; the CUDA plugin EP is tried
// and given up for the process if saving fails.
func cacheable(provider string) bool {
	if _, no := unsaveable.Load(provider); no {
		return false
	}
	return provider == "" || provider == infer.ProviderCPU || provider == infer.ProviderCUDA
}

// unsaveable remembers the providers whose optimized graphs failed to save in this process
// (a plugin EP that compiles its nodes), so that later loads do not try again.
var unsaveable sync.Map

// cacheKey returns the hex key of a model's optimized graph under cfg, or "" when ONNX Runtime
// cannot be loaded (Open then reports why).
func cacheKey(sum [sha256.Size]byte, cfg *infer.Config) string {
	if _, err := ort.SharedEnv(); err != nil {
		return ""
	}
	prov := cfg.Provider
	if prov == "" {
		prov = infer.ProviderCPU
	}
	h := sha256.New()
	fmt.Fprintf(h, "%smodel %x\nonnxruntime %s\nprovider %s\noptimization all\ncpu %s\n",
		cacheMagic, sum, ort.Version(), prov, cpuFeatures())
	writeSorted(h, "option", cfg.ProviderOptions)
	writeSorted(h, "config", cfg.ConfigEntries) // some disable optimizers
	return hex.EncodeToString(h.Sum(nil))[:32]
}

func writeSorted(w io.Writer, what string, m map[string]string) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(w, "%s %s=%s\n", what, k, m[k])
	}
}

// cpuFeatures lists the vector extensions ONNX Runtime's CPU kernels and layout choices
// depend on.
func cpuFeatures() string {
	f := []string{runtime.GOARCH}
	add := func(name string, has bool) {
		if has {
			f = append(f, name)
		}
	}
	switch runtime.GOARCH {
	case "amd64", "386":
		add("avx", cpu.X86.HasAVX)
		add("avx2", cpu.X86.HasAVX2)
		add("fma", cpu.X86.HasFMA)
		add("avx512f", cpu.X86.HasAVX512F)
		add("avx512bw", cpu.X86.HasAVX512BW)
		add("avx512dq", cpu.X86.HasAVX512DQ)
		add("avx512vl", cpu.X86.HasAVX512VL)
		add("avx512vnni", cpu.X86.HasAVX512VNNI)
		add("avx512bf16", cpu.X86.HasAVX512BF16)
		add("avxvnni", cpu.X86.HasAVXVNNI)
		add("amx-tile", cpu.X86.HasAMXTile)
		add("amx-int8", cpu.X86.HasAMXInt8)
		add("amx-bf16", cpu.X86.HasAMXBF16)
	case "arm64":
		add("asimd", cpu.ARM64.HasASIMD)
		add("asimdhp", cpu.ARM64.HasASIMDHP)
		add("asimddp", cpu.ARM64.HasASIMDDP)
		add("sve", cpu.ARM64.HasSVE)
		add("sve2", cpu.ARM64.HasSVE2)
	}
	return strings.Join(f, " ")
}

// cacheName is a model's cache file name: its name made file-safe, then the key.
func cacheName(model, key string) string {
	return cachePrefix(model) + key + ".ortcache"
}

func cachePrefix(model string) string {
	safe := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '_':
			return r
		}
		return '_'
	}, model)
	if safe == "" || safe[0] == '.' {
		safe = "model" + safe
	}
	return safe + "-"
}

// errCacheCorrupt marks a cache file that exists but cannot be used.
var errCacheCorrupt = errors.New("corrupt optimized-model cache file")

// readCache maps an optimized-model cache file and returns its verified payload (the optimized
// ONNX model); unmap after the session is created. A file that cannot be stat'ed (missing)
// gives the os.Stat error, one that exists but is damaged errCacheCorrupt.
func readCache(path string) (payload []byte, unmap func(), err error) {
	magic, payload, _, unmap, err := readCacheFile(path)
	if err == nil && magic != cacheMagic {
		unmap()
		return nil, nil, fmt.Errorf("%w %s: no vinfer cache header", errCacheCorrupt, path)
	}
	return payload, unmap, err
}

// readCacheFile maps a vinfer cache file (a 16-byte magic, the SHA-256 of the rest, the
// payload) and returns its magic and verified payload with that SHA-256; errors as readCache.
func readCacheFile(path string) (magic string, payload []byte, sum [sha256.Size]byte, unmap func(), err error) {
	if _, err := os.Stat(path); err != nil {
		return "", nil, sum, nil, err // absent (or unreachable): a miss
	}
	data, unmap, _, err := mapFile(path)
	if err != nil {
		return "", nil, sum, nil, fmt.Errorf("%w %s: %v", errCacheCorrupt, path, err)
	}
	if len(data) <= cacheHeader || !strings.HasPrefix(string(data[:len(cacheMagic)]), "vinfer-") {
		unmap()
		return "", nil, sum, nil, fmt.Errorf("%w %s: no vinfer cache header", errCacheCorrupt, path)
	}
	sum = sha256.Sum256(data[cacheHeader:])
	if !bytes.Equal(sum[:], data[len(cacheMagic):cacheHeader]) {
		unmap()
		return "", nil, sum, nil, fmt.Errorf("%w %s: checksum mismatch", errCacheCorrupt, path)
	}
	return string(data[:len(cacheMagic)]), data[cacheHeader:], sum, unmap, nil
}

// writeCacheFile writes a cache file (magic, the payload's SHA-256, payload) through a
// temporary file renamed over path.
func writeCacheFile(path, magic string, payload []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp := tempName(path)
	sum := sha256.Sum256(payload)
	data := append(append([]byte(magic), sum[:]...), payload...)
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// tempName returns a unique temporary path beside path (same directory, so that rename is
// atomic).
func tempName(path string) string {
	var b [6]byte
	rand.Read(b[:])
	return fmt.Sprintf("%s.%d-%x.tmp", path, os.Getpid(), b)
}

// commitCache turns the optimized model ONNX Runtime wrote to optimized into the cache file
// path: header and payload are written to a temporary file, which is then renamed over path,
// so that readers see either no file or a complete one. optimized is removed.
func commitCache(optimized, path string) (err error) {
	defer os.Remove(optimized)
	src, err := os.Open(optimized)
	if err != nil {
		return err
	}
	defer src.Close()
	tmp := tempName(path)
	dst, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			dst.Close()
			os.Remove(tmp)
		}
	}()
	if _, err = dst.Write(make([]byte, cacheHeader)); err != nil {
		return err
	}
	h := sha256.New()
	if _, err = io.Copy(io.MultiWriter(dst, h), src); err != nil {
		return err
	}
	hdr := append([]byte(cacheMagic), h.Sum(nil)...)
	if _, err = dst.WriteAt(hdr, 0); err != nil {
		return err
	}
	if err = dst.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// pruneCache removes a model's cache files beyond the cacheKeep most recently used (by
// modification time, which a hit refreshes), for the optimized graphs and the batch rewrites
// (batch.go) apart, and temporary files left by a crash.
func pruneCache(dir, model string) {
	prefix := filepath.Join(dir, cachePrefix(model))
	for _, ext := range []string{".ortcache", ".batch", ".fp16"} {
		files, _ := filepath.Glob(prefix + "*" + ext)
		type entry struct {
			path string
			mod  time.Time
		}
		var es []entry
		for _, f := range files {
			if fi, err := os.Stat(f); err == nil {
				es = append(es, entry{f, fi.ModTime()})
			}
		}
		sort.Slice(es, func(i, j int) bool { return es[i].mod.After(es[j].mod) })
		for i := cacheKeep; i < len(es); i++ {
			os.Remove(es[i].path)
		}
	}
	tmps, _ := filepath.Glob(prefix + "*.tmp")
	for _, f := range tmps {
		if fi, err := os.Stat(f); err == nil && time.Since(fi.ModTime()) > time.Hour {
			os.Remove(f)
		}
	}
}

// openCached opens a model through the cache in dir: the cached optimized graph when it is
// there and sound, else the original bytes data (whose SHA-256 is sum) optimized by ONNX
// Runtime, writing the result to the cache. Cache trouble never fails a load: it is logged and
// the model loads from the original.
func openCached(dir, name string, data []byte, sum [sha256.Size]byte, cfg infer.Config,
	logf func(string, ...any)) (*infer.Session, CacheState, error) {
	key := ""
	if dir != "" && cacheable(cfg.Provider) {
		key = cacheKey(sum, &cfg)
	}
	cfg.Model = data
	if key == "" {
		s, err := infer.Open(cfg)
		return s, CacheOff, err
	}
	path := filepath.Join(dir, cacheName(name, key))
	state := CacheMiss
	payload, unmap, err := readCache(path)
	switch {
	case err == nil:
		hit := cfg
		hit.Path, hit.Model, hit.DisableOptimization = path, payload, true
		s, err := infer.Open(hit)
		unmap()
		if err == nil {
			now := time.Now()
			os.Chtimes(path, now, now) // most recently used: kept by pruneCache
			return s, CacheHit, nil
		}
		if errors.Is(err, infer.ErrProviderUnavailable) {
			return nil, CacheOff, err // not the cache's fault: keep it
		}
		logf("model %s: cached optimized model %s does not load (%v): optimizing the original again", name, path, err)
		state = CacheInvalid
	case errors.Is(err, errCacheCorrupt):
		logf("model %s: %v: optimizing the original again", name, err)
		state = CacheInvalid
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		logf("model %s: optimized-model cache disabled: %v", name, err)
		s, err := infer.Open(cfg)
		return s, CacheOff, err
	}
	// Create the temporary file ONNX Runtime writes the optimized model into, so that an
	// unwritable directory disables the cache instead of failing the session.
	opt := tempName(path)
	f, err := os.OpenFile(opt, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		logf("model %s: optimized-model cache disabled: %v", name, err)
		s, err := infer.Open(cfg)
		return s, CacheOff, err
	}
	f.Close()
	cfg.OptimizedModelPath = opt
	s, err := infer.Open(cfg)
	if err != nil {
		os.Remove(opt)
		// Either the model does not load, or ONNX Runtime cannot save this provider's graph
		// (compiled nodes): open without saving to tell which.
		cfg.OptimizedModelPath = ""
		s, err2 := infer.Open(cfg)
		if err2 != nil {
			return nil, state, err2
		}
		logf("model %s: ONNX Runtime cannot save the optimized graph with provider %s, optimized-model cache off for it: %v",
			name, cfg.Provider, err)
		unsaveable.Store(cfg.Provider, true)
		return s, CacheOff, nil
	}
	if err := commitCache(opt, path); err != nil {
		logf("model %s: cannot write the optimized-model cache %s: %v", name, path, err)
		return s, CacheOff, nil
	}
	pruneCache(dir, name)
	return s, state, nil
}
