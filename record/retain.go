package record

import (
	"cmp"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// Seg is one closed segment.
type Seg struct {
	Stream     string
	Name       string // START-END.mp4
	Start, End time.Time
	Size       int64
	// Zero is the source PTS of the segment's media time 0 (HasZero: known; Segments only).
	Zero    time.Duration
	HasZero bool
	// Open: the segment being written (Name START.part, End its last fragment's end).
	Open bool
}

// list returns stream's closed segments, oldest first.
func (r *Recorder) list(stream string) []Seg {
	ents, err := os.ReadDir(filepath.Join(r.Dir, stream))
	if err != nil {
		return nil
	}
	var out []Seg
	for _, e := range ents {
		start, end, ok := parseSegName(e.Name())
		if !ok || !e.Type().IsRegular() {
			continue
		}
		var size int64
		if fi, err := e.Info(); err == nil {
			size = fi.Size()
		}
		out = append(out, Seg{Stream: stream, Name: e.Name(), Start: start, End: end, Size: size})
	}
	slices.SortFunc(out, func(a, b Seg) int { return a.Start.Compare(b.Start) })
	return out
}

// streamDirs lists the stream folders under Dir.
func (r *Recorder) streamDirs() []string {
	ents, err := os.ReadDir(r.Dir)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range ents {
		if e.IsDir() && validID(e.Name()) {
			out = append(out, e.Name())
		}
	}
	return out
}

// globalEvery spaces the retention passes over every stream's segments (max_bytes) when the
// file system has room: a segment closing checks its own stream's.
const globalEvery = 30 * time.Second

// retain removes closed segments: those of stream (every stream's when "") that ended before
// MaxAge, then its oldest over MaxBytesPerStream; then, at most every globalEvery unless the
// file system is under MinFree, the oldest of all while over MaxBytes or under MinFree.
func (r *Recorder) retain(stream string) {
	r.retMu.Lock()
	defer r.retMu.Unlock()
	now := time.Now()
	touched := map[string]bool{}
	remove := func(s Seg) bool {
		if os.Remove(filepath.Join(r.Dir, s.Stream, s.Name)) != nil {
			return false
		}
		r.retained.Add(1)
		touched[s.Stream] = true
		return true
	}
	ids := []string{stream}
	if stream == "" {
		ids = r.streamDirs()
	}
	for _, id := range ids {
		segs := r.list(id)
		var total int64
		for _, s := range segs {
			total += s.Size
		}
		for _, s := range segs {
			old := r.MaxAge > 0 && now.Sub(s.End) > r.MaxAge
			big := r.MaxBytesPerStream > 0 && total > r.MaxBytesPerStream
			if !old && !big {
				break // the rest are newer (sorted by start)
			}
			if remove(s) {
				total -= s.Size
			}
		}
	}
	need := int64(0)
	if free, err := freeBytes(r.Dir); err == nil {
		need = r.minFree() - free
	}
	if stream == "" || need > 0 || (r.MaxBytes > 0 && now.Sub(r.lastGlobal) >= globalEvery) {
		r.lastGlobal = now
		r.retainAll(need, remove)
	}
	if r.OnSegment != nil {
		for id := range touched {
			r.OnSegment(id)
		}
	}
}

// retainAll removes the oldest segments of all streams while over MaxBytes or need bytes short
// of MinFree.
func (r *Recorder) retainAll(need int64, remove func(Seg) bool) {
	if r.MaxBytes <= 0 && need <= 0 {
		return
	}
	var all []Seg
	for _, id := range r.streamDirs() {
		all = append(all, r.list(id)...)
	}
	slices.SortFunc(all, func(a, b Seg) int { return cmp.Or(a.End.Compare(b.End), cmp.Compare(a.Stream, b.Stream)) })
	var total int64
	for _, s := range all {
		total += s.Size
	}
	for _, s := range all {
		if (r.MaxBytes <= 0 || total <= r.MaxBytes) && need <= 0 {
			break
		}
		if remove(s) {
			total -= s.Size
			need -= s.Size
		}
	}
}
