package model

import (
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/detect"
	"github.com/vinfer/vinfer/preprocess"
	"github.com/vinfer/vinfer/tensor"
)

// Registry holds the declared models. Each is loaded once, on first use or at Preload, and
// shared by every stream that uses it; concurrent first requests wait on the same load
// (single-flight). Reload swaps in a new version atomically: batches already running finish on
// the old version, which is freed when its last user releases it.
type Registry struct {
	// Logf logs loads and reloads (default: discard).
	Logf func(format string, args ...any)

	mu      sync.Mutex
	decls   map[string]config.Model
	entries map[string]*Entry
	group   singleflight.Group
}

// NewRegistry declares models (not loaded yet).
func NewRegistry(models []config.Model) *Registry {
	r := &Registry{decls: map[string]config.Model{}, entries: map[string]*Entry{}}
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

// Loaded returns the entry of a model if it is loaded, else nil.
func (r *Registry) Loaded(name string) *Entry {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.entries[name]
}

// Get returns the loaded model, loading and warming it up first if needed. Concurrent callers
// for the same model share one load.
func (r *Registry) Get(name string) (*Entry, error) {
	r.mu.Lock()
	if e, ok := r.entries[name]; ok {
		r.mu.Unlock()
		return e, nil
	}
	decl, ok := r.decls[name]
	r.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("model %q is not declared (have %v)", name, r.Names())
	}
	v, err, _ := r.group.Do(name, func() (any, error) {
		r.mu.Lock()
		if e, ok := r.entries[name]; ok {
			r.mu.Unlock()
			return e, nil
		}
		r.mu.Unlock()
		ver, err := loadVersion(decl)
		if err != nil {
			return nil, err
		}
		r.logf("model %s: loaded %s (%s, %dx%d, batch ≤ %d) in %v", name, decl.Path, ver.m.Family,
			ver.m.Pre.Width, ver.m.Pre.Height, ver.m.MaxBatch(), ver.m.LoadTime.Round(time.Millisecond))
		e := &Entry{name: name, decl: decl}
		e.cur.Store(ver)
		e.loads.Add(1)
		r.mu.Lock()
		r.entries[name] = e
		r.mu.Unlock()
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

// Close frees every loaded model; call after the pipeline stopped.
func (r *Registry) Close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range r.entries {
		e.retire(e.cur.Swap(nil))
	}
	r.entries = map[string]*Entry{}
}

// Entry is one served model: a stable handle whose current version Reload replaces.
type Entry struct {
	name     string
	decl     config.Model
	cur      atomic.Pointer[Version]
	reloadMu sync.Mutex
	loads    atomic.Int64
	lastErr  atomic.Pointer[string]
	reloaded atomic.Int64 // unix nanos of the last successful reload
}

// Version is one loaded session of a model, reference counted by the batches using it.
type Version struct {
	m       *Model
	dec     detect.Decoder
	refs    atomic.Int64 // 1 while current + 1 per Acquire
	freed   atomic.Bool
	onFreed func()
}

func loadVersion(decl config.Model) (*Version, error) {
	m, err := Load(decl)
	if err != nil {
		return nil, err
	}
	dec, err := m.NewDecoder()
	if err != nil {
		m.Close()
		return nil, err
	}
	// Warm-up: one run per batch size used first, off the serving path, so the first frame
	// does not pay for ORT's lazy initialisation.
	if _, err := m.Run(1); err != nil {
		m.Close()
		return nil, fmt.Errorf("model %s: warm-up inference failed: %w", decl.Name, err)
	}
	v := &Version{m: m, dec: dec}
	v.refs.Store(1)
	return v, nil
}

// Name is the model's name.
func (e *Entry) Name() string { return e.name }

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

// LastError is the last failed reload's error, "" if none.
func (e *Entry) LastError() string {
	if p := e.lastErr.Load(); p != nil {
		return *p
	}
	return ""
}

// Reload loads the model file again, warms it up and swaps it in. On failure the old version
// keeps serving and the error is returned (and kept in LastError). The new version must keep
// the input geometry and family, since streams' input slots are sized for them.
func (e *Entry) Reload() error {
	e.reloadMu.Lock()
	defer e.reloadMu.Unlock()
	nv, err := loadVersion(e.decl)
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
		return err
	}
	e.lastErr.Store(nil)
	e.loads.Add(1)
	e.reloaded.Store(time.Now().UnixNano())
	e.retire(e.cur.Swap(nv))
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

// Input returns the version's native [batch,3,H,W] input buffer.
func (v *Version) Input(batch int) ([]float32, error) { return v.m.Input(batch) }

// Run infers the batch in Input(batch).
func (v *Version) Run(batch int) ([]tensor.Tensor, error) { return v.m.Run(batch) }

// Decoder is the version's post-processor (used by the model's single inference worker).
func (v *Version) Decoder() detect.Decoder { return v.dec }

// Release unpins the version; the last release of a retired version frees its session.
func (v *Version) Release() { v.release() }

func (v *Version) release() {
	if v.refs.Add(-1) == 0 && v.freed.CompareAndSwap(false, true) {
		v.m.Close()
		if v.onFreed != nil {
			v.onFreed()
		}
	}
}
