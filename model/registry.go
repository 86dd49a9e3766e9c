package model

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/vinfer/vinfer/attr"
	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/detect"
	"github.com/vinfer/vinfer/gpuexec"
	"github.com/vinfer/vinfer/preprocess"
	"github.com/vinfer/vinfer/tensor"
)

// Registry holds the declared models. Each is loaded once, on first use or at Preload, and
// shared by every stream that uses it; concurrent first requests wait on the same load
// (single-flight). A load runs a warm-up inference before the model serves. Reload swaps in a
// new version atomically: batches already running finish on the old version, which is freed
// when its last user releases it. Watch reloads a model when its file changes.
type Registry struct {
	// Logf logs loads and reloads (default: discard).
	Logf func(format string, args ...any)
	// CacheDir is the optimized-model cache (Loader.CacheDir): NewRegistry sets
	// DefaultCacheDir(); "" disables it. Set it before the first load.
	CacheDir string

	mu        sync.Mutex
	decls     map[string]config.Model
	entries   map[string]*Entry
	closed    bool
	stopWatch func() // cancels Watch's goroutine and waits for it
	group     singleflight.Group
	loads     atomic.Int64
	live      atomic.Int64
}

// NewRegistry declares models (not loaded yet).
func NewRegistry(models []config.Model) *Registry {
	r := &Registry{decls: map[string]config.Model{}, entries: map[string]*Entry{}, CacheDir: DefaultCacheDir()}
	for _, m := range models {
		r.decls[m.Name] = m
	}
	return r
}

func (r *Registry) logf(format string, args ...any) {
	if r.Logf != nil {
		r.Logf(format, args...)
	}
}

// Names lists the declared models, sorted.
func (r *Registry) Names() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for n := range r.decls {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Declaration returns a model's declaration.
func (r *Registry) Declaration(name string) (config.Model, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	d, ok := r.decls[name]
	return d, ok
}

// Loaded returns the entry of a model if it is loaded, else nil: the host entry, or when the
// model is only loaded on GPUs, the entry of the lowest device ordinal.
func (r *Registry) Loaded(name string) *Entry {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e := r.entries[name]; e != nil {
		return e
	}
	var best *Entry
	for _, e := range r.entries {
		if e.name == name && (best == nil || e.device < best.device) {
			best = e
		}
	}
	return best
}

// LoadedDevices returns the GPU entries of a model loaded so far (GetDevice), by ordinal.
func (r *Registry) LoadedDevices(name string) []*Entry {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*Entry
	for _, e := range r.entries {
		if e.name == name && e.device >= 0 {
			out = append(out, e)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].device < out[j].device })
	return out
}

// Loads counts the model versions this registry loaded: first loads and successful reloads.
func (r *Registry) Loads() int64 { return r.loads.Load() }

// Versions is the number of model versions holding a session now: the current ones plus
// retired ones still pinned by a batch in flight.
func (r *Registry) Versions() int64 { return r.live.Load() }

// ErrClosed is returned by Get and Reload after Close.
var ErrClosed = errors.New("model registry is closed")

// Get returns the loaded model, loading and warming it up first if needed. Concurrent callers
// for the same model share one load.
func (r *Registry) Get(name string) (*Entry, error) { return r.get(name, -1) }

// GetDevice returns the model loaded on GPU device (a CUDA device ordinal) for frames decoded
// into that GPU's memory: its versions are DeviceVersions, one engine per (model, device),
// each with its own CUDA stream, device buffers and session on ONNX Runtime's CUDA provider.
// It has Get's single-flight loading and warm-up, and Reload and Watch work on it as on the
// host entry (each entry reloads its own version). The model must declare provider: cuda.
func (r *Registry) GetDevice(name string, device int) (*Entry, error) {
	if device < 0 {
		return nil, fmt.Errorf("model %s: GPU ordinal %d is negative", name, device)
	}
	return r.get(name, device)
}

// entryKey names an entry: the model name for the host entry, name@cuda:N on a GPU.
func entryKey(name string, device int) string {
	if device < 0 {
		return name
	}
	return fmt.Sprintf("%s@cuda:%d", name, device)
}

func (r *Registry) get(name string, device int) (*Entry, error) {
	key := entryKey(name, device)
	r.mu.Lock()
	if e, ok := r.entries[key]; ok {
		r.mu.Unlock()
		return e, nil
	}
	decl, ok := r.decls[name]
	closed := r.closed
	r.mu.Unlock()
	if closed {
		return nil, fmt.Errorf("model %s: %w", name, ErrClosed)
	}
	if !ok {
		return nil, fmt.Errorf("model %q is not declared (have %v)", name, r.Names())
	}
	v, err, _ := r.group.Do(key, func() (any, error) {
		r.mu.Lock()
		if e, ok := r.entries[key]; ok {
			r.mu.Unlock()
			return e, nil
		}
		r.mu.Unlock()
		ver, err := r.loadVersion(decl, device)
		if err != nil {
			return nil, err
		}
		e := &Entry{reg: r, name: name, decl: decl, device: device}
		e.cur.Store(ver)
		e.loads.Add(1)
		r.mu.Lock()
		if r.closed {
			r.mu.Unlock()
			ver.release()
			return nil, fmt.Errorf("model %s: %w", name, ErrClosed)
		}
		r.entries[key] = e
		r.mu.Unlock()
		r.loads.Add(1)
		m := ver.m
		where := ""
		if device >= 0 {
			where = fmt.Sprintf(" on cuda:%d", device)
		}
		r.logf("model %s: loaded %s%s (%s, %dx%d, batch: %s, batch ≤ %d, precision %s, sha256 %.12s, optimized-model cache %s) in %v, warm-up %v",
			name, decl.Path, where, cmp.Or(string(m.Family), m.Kind.String()), m.Pre.Width, m.Pre.Height, m.Batch, m.MaxBatch(), m.Precision, m.SHA256, m.Cache,
			m.LoadTime.Round(time.Millisecond), m.WarmUpTime.Round(time.Millisecond))
		return e, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*Entry), nil
}

// Preload loads every declared model with preload set (or all when all is true).
func (r *Registry) Preload(all bool) error {
	var errs []error
	for _, n := range r.Names() {
		d, _ := r.Declaration(n)
		if all || d.Preload {
			if _, err := r.Get(n); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// Close stops Watch, waits for a reload in progress and releases every loaded model; a
// version still pinned by a batch is freed by its last Release. Call it after the pipeline
// stopped. Get and Reload fail with ErrClosed afterwards.
func (r *Registry) Close() {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return
	}
	r.closed = true
	stop, entries := r.stopWatch, r.entries
	r.entries = map[string]*Entry{}
	r.mu.Unlock()
	if stop != nil {
		stop()
	}
	for _, e := range entries {
		e.reloadMu.Lock()
		e.closed = true
		e.retire(e.cur.Swap(nil))
		e.reloadMu.Unlock()
	}
}

// loadVersion loads a declaration and warms it up: one inference of one frame and one of the
// largest batch, off the serving path, so that the first frames do not pay for ONNX
// Runtime's lazy initialisation and memory planning.
func (r *Registry) loadVersion(decl config.Model, device int) (*Version, error) {
	l := Loader{CacheDir: r.CacheDir, Logf: r.Logf}
	if device >= 0 {
		return r.loadDeviceVersion(&l, decl, device)
	}
	m, err := l.Load(decl)
	if err != nil {
		return nil, err
	}
	dec, err := m.NewDecoder()
	if err != nil {
		m.Close()
		return nil, err
	}
	t0 := time.Now()
	sizes := []int{1}
	if mb := m.MaxBatch(); mb > 1 {
		sizes = append(sizes, mb)
	}
	for _, n := range sizes {
		if _, err := m.Run(n); err != nil {
			m.Close()
			return nil, fmt.Errorf("model %s: warm-up inference of a batch of %d failed: %w", m.Name, n, err)
		}
	}
	m.WarmUpTime = time.Since(t0)
	ad, err := m.NewAttr()
	if err != nil {
		m.Close()
		return nil, err
	}
	v := &Version{m: m, dec: dec, attr: ad, reg: r}
	v.refs.Store(1)
	r.live.Add(1)
	return v, nil
}

// loadDeviceVersion loads decl on GPU device and warms it up there (a gpuexec.Engine).
func (r *Registry) loadDeviceVersion(l *Loader, decl config.Model, device int) (*Version, error) {
	t0 := time.Now()
	m, eng, err := l.openGPU(decl, device)
	if err != nil {
		return nil, err
	}
	m.WarmUpTime = time.Since(t0) - m.LoadTime
	dec, err := m.NewDecoder()
	if err != nil {
		eng.Close()
		return nil, err
	}
	v := &Version{m: m, dec: dec, reg: r, gpu: eng}
	v.refs.Store(1)
	r.live.Add(1)
	return v, nil
}

// Entry is one served model: a stable handle whose current version Reload replaces.
type Entry struct {
	reg      *Registry
	name     string
	device   int // GPU ordinal (GetDevice), -1 on the host
	decl     config.Model
	cur      atomic.Pointer[Version]
	reloadMu sync.Mutex
	closed   bool // under reloadMu
	loads    atomic.Int64
	failures atomic.Int64
	lastErr  atomic.Pointer[string]
	reloaded atomic.Int64          // unix nanos of the last successful reload
	failed   atomic.Pointer[stamp] // the file version whose reload failed
	pending  *stamp                // Watch's goroutine only: a change seen once
}

// Version is one loaded session of a model, reference counted by the batches using it.
type Version struct {
	m     *Model
	dec   detect.Decoder
	attr  attr.Decoder    // attribute kinds only (dec nil)
	gpu   *gpuexec.Engine // GPU versions (Registry.GetDevice) only
	reg   *Registry
	refs  atomic.Int64 // 1 while current + 1 per Acquire
	freed atomic.Bool
}

// Name is the model's name.
func (e *Entry) Name() string { return e.name }

// Device is the GPU ordinal of an entry from GetDevice, -1 for the host entry.
func (e *Entry) Device() int { return e.device }

// Acquire pins the current version for one batch; call Release on it when done. It returns nil
// after the registry closed.
func (e *Entry) Acquire() *Version {
	for {
		v := e.cur.Load()
		if v == nil {
			return nil
		}
		if n := v.refs.Load(); n > 0 && v.refs.CompareAndSwap(n, n+1) {
			return v
		}
	}
}

// Current returns the model now served (for descriptions; do not run it without Acquire).
func (e *Entry) Current() *Model {
	if v := e.cur.Load(); v != nil {
		return v.m
	}
	return nil
}

// Loads counts successful loads (1 + reloads).
func (e *Entry) Loads() int64 { return e.loads.Load() }

// Failures counts failed reloads.
func (e *Entry) Failures() int64 { return e.failures.Load() }

// LastError is the last failed reload's error, "" if none or if a reload succeeded since.
func (e *Entry) LastError() string {
	if p := e.lastErr.Load(); p != nil {
		return *p
	}
	return ""
}

// Reloaded is when the last successful reload happened (zero if none).
func (e *Entry) Reloaded() time.Time {
	if n := e.reloaded.Load(); n != 0 {
		return time.Unix(0, n)
	}
	return time.Time{}
}

// Reload loads the model file again, warms it up and swaps it in; the old version serves until
// the swap and is freed when its last batch releases it. On failure the old version keeps
// serving and the error is returned, logged and kept in LastError. The new version must keep
// the input geometry and family, since streams' input slots are sized for them.
func (e *Entry) Reload() error { return e.reload("reload requested") }

func (e *Entry) reload(why string) error {
	e.reloadMu.Lock()
	defer e.reloadMu.Unlock()
	if e.closed {
		return fmt.Errorf("model %s: %w", e.name, ErrClosed)
	}
	before := statStamp(e.decl.Path)
	nv, err := e.reg.loadVersion(e.decl, e.device)
	if err == nil {
		if old := e.cur.Load(); old != nil && (old.m.Pre != nv.m.Pre || old.m.Family != nv.m.Family) {
			err = fmt.Errorf("model %s: the new file changes the input (%dx%d %s → %dx%d %s); restart to change models this way",
				e.name, old.m.Pre.Width, old.m.Pre.Height, old.m.Family, nv.m.Pre.Width, nv.m.Pre.Height, nv.m.Family)
			nv.release()
		}
	}
	if err != nil {
		s := err.Error()
		e.lastErr.Store(&s)
		e.failures.Add(1)
		e.failed.Store(&before)
		e.reg.logf("model %s: %s: reload failed, the loaded version keeps serving: %v", e.name, why, err)
		return err
	}
	e.lastErr.Store(nil)
	e.failed.Store(nil)
	e.loads.Add(1)
	e.reg.loads.Add(1)
	e.reloaded.Store(time.Now().UnixNano())
	e.retire(e.cur.Swap(nv))
	e.reg.logf("model %s: %s: reloaded %s (sha256 %.12s, optimized-model cache %s) in %v, warm-up %v",
		e.name, why, e.decl.Path, nv.m.SHA256, nv.m.Cache, nv.m.LoadTime.Round(time.Millisecond),
		nv.m.WarmUpTime.Round(time.Millisecond))
	return nil
}

func (e *Entry) retire(v *Version) {
	if v != nil {
		v.release()
	}
}

// Model returns the version's model.
func (v *Version) Model() *Model { return v.m }

// Preprocess is the version's input spec.
func (v *Version) Preprocess() preprocess.Spec { return v.m.Pre }

// MaxBatch is the version's largest batch.
func (v *Version) MaxBatch() int { return v.m.MaxBatch() }

// Input returns the version's native [batch,3,H,W] float32 input buffer.
func (v *Version) Input(batch int) ([]float32, error) { return v.m.Input(batch) }

// Run infers the batch in Input(batch).
func (v *Version) Run(batch int) ([]tensor.Tensor, error) { return v.m.Run(batch) }

// InputSet returns input set set's buffer (infer.Session.InputSet).
func (v *Version) InputSet(set, batch int) ([]float32, error) { return v.m.InputSet(set, batch) }

// RunSet infers the batch in InputSet(set, batch).
func (v *Version) RunSet(set, batch int) ([]tensor.Tensor, error) { return v.m.RunSet(set, batch) }

// Decoder is the version's post-processor (used by the model's single inference worker).
func (v *Version) Decoder() detect.Decoder { return v.dec }

// Attr is the attribute decoder of a model of an attribute kind (ocr, embedding, classify);
// nil for a detector, whose Decoder decodes.
func (v *Version) Attr() attr.Decoder { return v.attr }

// NHWC reports a channels-last input: Input's slots hold interleaved channels.
func (v *Version) NHWC() bool { return v.m.NHWC }

// Release unpins the version; the last release of a retired version frees its session.
func (v *Version) Release() { v.release() }

func (v *Version) release() {
	if v.refs.Add(-1) == 0 && v.freed.CompareAndSwap(false, true) {
		if v.gpu != nil {
			if err := v.gpu.Close(); err != nil {
				v.reg.logf("model %s: freeing its GPU buffers: %v", v.m.Name, err)
			}
		} else {
			v.m.Close()
		}
		v.reg.live.Add(-1)
	}
}

// Watch polls the files of the loaded models every interval (≤ 0: one second) until ctx is
// done or the registry closes, and reloads a model whose file changed (size, modification time
// or inode) once the change has held for one interval, so that a file still being written is
// not loaded half-way. A failed reload keeps the old version serving, is logged and kept in
// LastError, and is not retried until the file changes again. Watch returns at once; a second
// call while watching does nothing.
func (r *Registry) Watch(ctx context.Context, interval time.Duration) {
	if interval <= 0 {
		interval = time.Second
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed || r.stopWatch != nil {
		return
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	r.stopWatch = func() { cancel(); <-done }
	go func() {
		defer close(done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			r.mu.Lock()
			entries := make([]*Entry, 0, len(r.entries))
			for _, e := range r.entries {
				entries = append(entries, e)
			}
			r.mu.Unlock()
			for _, e := range entries {
				if ctx.Err() != nil {
					return
				}
				e.poll()
			}
		}
	}()
}

// poll is one Watch step for the entry: a file version different from the one serving (and
// from one that already failed) is reloaded when two polls in a row saw it.
func (e *Entry) poll() {
	v := e.cur.Load()
	if v == nil {
		return
	}
	now := statStamp(e.decl.Path)
	if now == v.m.stamp {
		e.pending = nil
		return
	}
	if f := e.failed.Load(); f != nil && *f == now {
		e.pending = nil
		return
	}
	if e.pending == nil || *e.pending != now {
		e.pending = &now // changed since the last poll: wait until it holds still
		return
	}
	e.pending = nil
	e.reload(fmt.Sprintf("%s changed (%s)", e.decl.Path, now))
}
