package sink

import (
	"bufio"
	"io"
)

// JSONL writes one JSON object per line (JSON Lines) to W. Output is buffered; call Flush at the
// end (and Live=true flushes after every line, for a terminal or a pipe that is read live).
type JSONL struct {
	W    io.Writer
	Live bool

	bw  *bufio.Writer
	buf []byte
}

// Write encodes r as one line.
func (j *JSONL) Write(r *Result) error {
	if j.bw == nil {
		j.bw = bufio.NewWriterSize(j.W, 64<<10)
		j.buf = make([]byte, 0, 4096)
	}
	j.buf = append(AppendJSON(j.buf[:0], r), '\n')
	if _, err := j.bw.Write(j.buf); err != nil {
		return err
	}
	if j.Live {
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
