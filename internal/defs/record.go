package defs

import (
	"errors"
	"io"
	"os"
	"time"
)

// Errors of Recordings, for observers to map to their answers.
var (
	// ErrNotRecorded: the stream id is not one (or nothing of it is recorded).
	ErrNotRecorded = errors.New("not a recorded stream")
	// ErrNoRecording: no segment of that name, or no video in the range.
	ErrNoRecording = errors.New("no such recording")
	// ErrRangeTooLong: the time range is longer than the call allows.
	ErrRangeTooLong = errors.New("time range too long")
)

// RecordedSegment is one segment of a stream's continuous recording.
type RecordedSegment struct {
	Name  string    `json:"name"` // START-END.mp4, or START.part while Open
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	Bytes int64     `json:"bytes"`
	URL   string    `json:"url,omitempty"`
	// ZeroPTS is the source PTS (s) of the segment's media time 0: the frame shown at media
	// time m has the results log's pts ZeroPTS+m. Nil for segments recorded without it.
	ZeroPTS *float64 `json:"zero_pts,omitempty"`
	// Open: the segment being written, listed up to its last fragment.
	Open bool `json:"open,omitempty"`
}

// Recordings serves the continuous recordings and per-frame results logs (packages record
// and reslog, docs/recording.md).
type Recordings interface {
	// RecordingSegments lists stream's segments overlapping [from, to), oldest first.
	RecordingSegments(stream string, from, to time.Time) ([]RecordedSegment, error)
	// RecordingFile opens one segment by name (ErrNoRecording, ErrNotRecorded).
	RecordingFile(stream, name string) (*os.File, error)
	// RecordingExport writes the coded video of exactly [from, to) as one MP4, cut at frames
	// by an edit list (ErrRangeTooLong, ErrNoRecording); a w with SetSize(int64) is told the
	// size before the first write.
	RecordingExport(w io.Writer, stream string, from, to time.Time) error
	// ResultsExport writes the logged frames of [from, to) as JSON Lines ("jsonl") or
	// MOTChallenge rows ("mot"); ErrNotRecorded without a results log.
	ResultsExport(w io.Writer, stream string, from, to time.Time, format string) error
}

// RecordingStats are the recorder's and the results log's counters since start.
type RecordingStats struct {
	Segments, Fragments, Bytes int64 // segments closed, fragments (GOPs) and bytes written
	DroppedGOPs                int64 // GOPs not recorded: buffer or queue full, write failed
	Repaired, RemovedTorn      int64 // crash-cut segments cut back at start, or removed
	Retained                   int64 // segments removed by retention
	ResultFrames, ResultBytes  int64 // frames and bytes appended to the results log
	ResultsDropped             int64 // frames lost to write failures
	ResultsTorn                int64 // torn results-log tails cut at start
}

// RecordingStatser reports the recording's figures (metrics); ok is false when nothing is
// recorded.
type RecordingStatser interface {
	RecordingStats() (s RecordingStats, ok bool)
}
