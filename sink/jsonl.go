package sink

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/vinfer/vinfer/config"
)

// JSONL writes one JSON object per line (JSON Lines) to W. Output is buffered; a line waits in
// the buffer at most FlushEvery (a timer flushes it even when no further line comes), and with
// Live or Events every line is written through (a terminal, a pipe read live, rare events).
// Write, Flush and Close may be called from different goroutines; call Close (or Flush) at the
// end.
type JSONL struct {
	W    io.Writer
	Live bool
	// AllFrames writes every result; otherwise only results with detections or events.
	AllFrames bool
	// Events writes one line per scene event (docs/events.schema.json) instead of one per
	// result.
	Events bool

	mu     sync.Mutex
	bw     *bufio.Writer
	buf    []byte
	closer io.Closer
	timer  *time.Timer // armed while the buffer holds lines not yet written out
	armed  bool
	closed bool
	err    error // the last error of a timer-driven flush, returned by the next call
}

// FlushEvery bounds how long a written line may wait in the buffer.
const FlushEvery = 100 * time.Millisecond

// Write encodes r as one line.
func (j *JSONL) Write(r *Result) error {
	if j.Events && len(r.Events) == 0 || !j.Events && !j.AllFrames && len(r.Detections) == 0 && len(r.Events) == 0 {
		return nil
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		return os.ErrClosed
	}
	if err := j.takeErr(); err != nil {
		return err
	}
	if j.bw == nil {
		j.bw = bufio.NewWriterSize(j.W, 64<<10)
		j.buf = make([]byte, 0, 4096)
	}
	if j.Events {
		j.buf = j.buf[:0]
		for i := range r.Events {
			j.buf = append(r.Events[i].AppendJSON(j.buf), '\n')
		}
	} else {
		j.buf = append(AppendJSON(j.buf[:0], r), '\n')
	}
	if _, err := j.bw.Write(j.buf); err != nil {
		return err
	}
	if j.Live || j.Events {
		return j.bw.Flush()
	}
	if j.bw.Buffered() > 0 && !j.armed {
		j.armed = true
		if j.timer == nil {
			j.timer = time.AfterFunc(FlushEvery, j.tick)
		} else {
			j.timer.Reset(FlushEvery)
		}
	}
	return nil
}

// tick is the timer's flush.
func (j *JSONL) tick() {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.armed = false
	if j.closed || j.bw == nil {
		return
	}
	if err := j.bw.Flush(); err != nil && j.err == nil {
		j.err = err
	}
}

func (j *JSONL) takeErr() error {
	err := j.err
	j.err = nil
	return err
}

// Flush writes buffered lines out.
func (j *JSONL) Flush() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.flushLocked()
}

func (j *JSONL) flushLocked() error {
	err := j.takeErr()
	if j.bw == nil || j.closed {
		return err
	}
	if ferr := j.bw.Flush(); err == nil {
		err = ferr
	}
	return err
}

// Close flushes, stops the timer and closes the file JSONLKind opened. Later Writes fail with
// os.ErrClosed.
func (j *JSONL) Close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	err := j.flushLocked()
	j.closed = true
	if j.timer != nil {
		j.timer.Stop()
	}
	if j.closer != nil {
		if cerr := j.closer.Close(); err == nil {
			err = cerr
		}
		j.closer = nil
	}
	return err
}

// JSONLSettings are the settings of a jsonl sink.
type JSONLSettings struct {
	// Path is a file (created or truncated), or "-" (the default) for standard output.
	Path string `yaml:"path"`
	// AllFrames writes every inferred frame, not only frames with detections.
	AllFrames bool `yaml:"all_frames"`
	// Carry is results (one line per inferred frame, the default) or events (one line per
	// scene event).
	Carry string `yaml:"carry"`
}

// JSONLKind is the jsonl sink: {type: jsonl, path: FILE|-, all_frames: bool, carry: results|events}.
var JSONLKind = Kind{Type: "jsonl", Open: func(decl config.Sink, env Env) (Sink, error) {
	var s JSONLSettings
	if err := decl.Decode(&s); err != nil {
		return nil, err
	}
	j := &JSONL{AllFrames: s.AllFrames}
	switch s.Carry {
	case "", "results":
	case "events":
		j.Events = true
	default:
		return nil, fmt.Errorf("sink jsonl: carry %q: use results or events", s.Carry)
	}
	if s.Path == "" || s.Path == "-" {
		j.W, j.Live = env.Stdout, true
		return j, nil
	}
	path := s.Path
	if !filepath.IsAbs(path) && env.Dir != "" {
		path = filepath.Join(env.Dir, path)
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	j.W, j.closer = f, f
	return j, nil
}}
