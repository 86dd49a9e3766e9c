package reslog

import (
	"os"
	"path/filepath"
	"time"
)

// Retain applies MaxAge, MaxBytes and KeepFrom to every stream's chunks now; the chunk a
// stream is appending to stays. The log also applies them to a stream each time it starts a
// chunk.
func (l *Log) Retain() {
	ents, err := os.ReadDir(l.Dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		if !e.IsDir() || !validID(e.Name()) {
			continue
		}
		l.mu.Lock()
		s := l.streams[e.Name()]
		l.mu.Unlock()
		if s != nil {
			s.mu.Lock()
		}
		l.retain(e.Name(), filepath.Join(l.Dir, e.Name()))
		if s != nil {
			s.mu.Unlock()
		}
	}
}

// retain removes the stream's chunks that retention lets go: a chunk ends where the next
// starts (the newest, open or not, is kept, except past MaxAge when closed).
func (l *Log) retain(id, dir string) {
	cs, err := chunks(dir)
	if err != nil || len(cs) == 0 {
		return
	}
	var open string
	l.mu.Lock()
	if s := l.streams[id]; s != nil && s.f != nil {
		open = s.f.Name()
	}
	l.mu.Unlock()
	now := time.Now()
	var keepFrom int64 = -1 << 63
	if l.MaxAge > 0 {
		keepFrom = now.Add(-l.MaxAge).UnixMicro()
	}
	if l.KeepFrom != nil {
		if t := l.KeepFrom(id); !t.IsZero() {
			keepFrom = max(keepFrom, t.UnixMicro())
		}
	}
	var total int64
	for _, c := range cs {
		total += c.size
	}
	for i, c := range cs {
		if c.path == open {
			break
		}
		end := int64(1<<63 - 1) // the newest: its modification time
		if i+1 < len(cs) {
			end = cs[i+1].start
		} else if fi, err := os.Stat(c.path); err == nil {
			end = fi.ModTime().UnixMicro()
		}
		if end >= keepFrom && (l.MaxBytes <= 0 || total <= l.MaxBytes) {
			break
		}
		if os.Remove(c.path) == nil {
			l.removed.Add(1)
			total -= c.size
		}
	}
}
