package defs

import (
	"encoding/json"
	"errors"
	"os"
	"time"
)

// Errors of Evidence, for observers to map to their answers.
var (
	// ErrEvidenceNotFound: no event with that id was recorded (or it aged out of the index).
	ErrEvidenceNotFound = errors.New("no recorded event with that id")
	// ErrEvidenceGone: the event is recorded but its file is not there; the error says why
	// (retention, disk pressure, a write failure, removed by hand).
	ErrEvidenceGone = errors.New("evidence file not available")
	// ErrBadEvidenceID: the id is not a ULID.
	ErrBadEvidenceID = errors.New("not an event id (26 characters of Crockford base32)")
)

// Evidence lists recorded scene events with their clips and snapshots (package evidence).
type Evidence interface {
	// EvidenceList returns a page of recorded events, newest first, and the cursor for the
	// next page ("" after the last).
	EvidenceList(q EvidenceQuery) (items []EvidenceItem, next string, err error)
	// EvidenceItem returns one recorded event (ErrEvidenceNotFound, ErrBadEvidenceID).
	EvidenceItem(id string) (EvidenceItem, error)
	// EvidenceFile opens an event's clip or snapshot for reading; errors wrap
	// ErrBadEvidenceID, ErrEvidenceNotFound or ErrEvidenceGone (with the reason).
	EvidenceFile(id string, kind EvidenceFileKind) (*os.File, error)
}

// EvidenceStatser reports the evidence recorder's figures (metrics); ok is false when evidence
// is not recorded.
type EvidenceStatser interface {
	EvidenceStats() (s EvidenceStats, ok bool)
}

// EvidenceFileKind is one of an event's files.
type EvidenceFileKind int

// Evidence files.
const (
	EvidenceClipFile      EvidenceFileKind = iota // the MP4 clip
	EvidenceSnapshot                              // the track's best frame in the clip, JPEG
	EvidenceSnapshotBoxed                         // the same with the object's box drawn
	EvidenceFrame                                 // the event's own frame, JPEG
	EvidenceFrameBoxed                            // the same with the object's box drawn
)

// EvidenceQuery selects recorded events.
type EvidenceQuery struct {
	// Stream and Type ("line.cross", …), when set, must match.
	Stream, Type string
	// Since keeps events at or after it, Until those before it (zero: no bound).
	Since, Until time.Time
	// Cursor continues a listing (the next of the previous page).
	Cursor string
	// Limit is the page size (default 100, at most 1000).
	Limit int
}

// EvidenceItem is one recorded event and what shows it.
type EvidenceItem struct {
	ID     string    `json:"id"`
	Stream string    `json:"stream"`
	Type   string    `json:"type"`
	Time   time.Time `json:"time"`
	// PTS in seconds since the start of the stream.
	PTS float64 `json:"pts"`
	// Event is the event as every sink has it (docs/events.schema.json).
	Event json.RawMessage `json:"event"`
	// HasClip reports a clip file to play; Clip describes it (also while pending or gone).
	HasClip bool          `json:"has_clip"`
	Clip    *EvidenceClip `json:"clip,omitempty"`
	// HasSnapshot reports a JPEG of the track's best frame (and one of the event's frame);
	// Best describes that frame.
	HasSnapshot bool          `json:"has_snapshot"`
	Best        *EvidenceBest `json:"best,omitempty"`
	// HasFrame reports a JPEG of the event's own frame.
	HasFrame bool `json:"has_frame"`
	// ClipURL, SnapshotURL (the best frame) and FrameURL (the event's frame) are filled by
	// the API when the files are there.
	ClipURL     string `json:"clip_url,omitempty"`
	SnapshotURL string `json:"snapshot_url,omitempty"`
	FrameURL    string `json:"frame_url,omitempty"`
}

// EvidenceBest is the frame of an event's track chosen for its snapshot: the highest
// score × box area in the clip, boxes cut by the frame border only when there is no other.
type EvidenceBest struct {
	// PTS in seconds since the start of the stream; Score and Box ([x1,y1,x2,y2], frame
	// pixels) the track's detection on it; Cut: the box touches the frame border.
	PTS   float64    `json:"pts"`
	Score float32    `json:"score"`
	Box   [4]float32 `json:"box"`
	Cut   bool       `json:"cut,omitempty"`
}

// EvidenceClip describes the clip of one or more events of a stream.
type EvidenceClip struct {
	// ID is the clip's first event.
	ID string `json:"id"`
	// Start and End are the stream PTS (seconds) the clip covers; Want the start asked for
	// (first event − pre). Truncated: the buffer did not reach back that far.
	Start     float64 `json:"start"`
	End       float64 `json:"end"`
	Want      float64 `json:"want"`
	Truncated bool    `json:"truncated"`
	Bytes     int64   `json:"bytes"`
	// Events are the ids of the events the clip shows.
	Events []string `json:"events"`
	// State is "written", "pending" (still collecting or being written) or "gone" (also a
	// clip never written: Reason says why).
	State string `json:"state"`
	// Reason says why a clip is gone or was never written.
	Reason string `json:"reason,omitempty"`
}

// EvidenceStats are the recorder's figures.
type EvidenceStats struct {
	Streams []EvidenceStream
	// Recorded counts events indexed; Clips and Snapshots files written; ClipBytes their size.
	Recorded, Clips, Snapshots, ClipBytes int64
	// Failures counts clips not written, by reason (queue_full, no_keyframe, too_large,
	// disk_full, write, index); Deleted files removed, by reason (max_age,
	// max_bytes_per_stream, max_bytes, min_free, missing, orphan).
	Failures, Deleted map[string]int64
	// StoredBytes is the size of every clip and snapshot on disk.
	StoredBytes int64
}

// EvidenceStream is one stream's buffer and storage.
type EvidenceStream struct {
	Stream string
	// BufferBytes and BufferUnits are buffered now, BufferCapacity the arena's size; Span
	// the buffered PTS range; BufferOverruns GOPs dropped for room while a clip needed them.
	BufferBytes, BufferUnits, BufferCapacity, BufferOverruns int64
	BufferSpan                                               time.Duration
	// StoredBytes and StoredClips on disk.
	StoredBytes, StoredClips int64
}
