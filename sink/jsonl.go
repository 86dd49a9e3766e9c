package sink

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/vinfer/vinfer/config"
)

// JSONL writes one JSON object per line (JSON Lines) to W. Output is buffered and flushed at
// least once a second while lines are written (every line with Live or Events: a terminal, a
// pipe read live, rare events); call Flush or Close at the end.
type JSONL struct {
	W    io.Writer
	Live bool
	// AllFrames writes every result; otherwise only results with detections or events.
	AllFrames bool
	// Events writes one line per scene event (docs/events.schema.json) instead of one per
	// result.
	Events bool

	bw        *bufio.Writer
	buf       []byte
	closer    io.Closer
	lastFlush time.Time
}

// flushEvery bounds how long a written line may wait in the buffer.
const flushEvery = time.Second

// Write encodes r as one line.
func (j *JSONL) Write(r *Result) error {
	if j.Events && len(r.Events) == 0 || !j.Events && !j.AllFrames && len(r.Detections) == 0 && len(r.Events) == 0 {
		return nil
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
	if now := time.Now(); now.Sub(j.lastFlush) >= flushEvery {
		j.lastFlush = now
		return j.bw.Flush()
	}
	return nil
}

// Flush writes buffered lines out.
func (j *JSONL) Flush() error {
	if j.bw == nil {
		return nil
	}
	return j.bw.Flush()
}

// Close flushes and closes the file JSONLKind opened.
func (j *JSONL) Close() error {
	err := j.Flush()
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
