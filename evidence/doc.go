// Package evidence keeps what shows a scene event: a clip of the stream's own coded video
// around it (no re-encoding), JPEGs of the event's frame and of its track's best frame, and a
// row in an index that survives restarts, within size, age and free-space bounds.
//
//	source ──AU──► Ring (per stream, GOP-aligned, bounded) ──units──► writer ──► STREAM/DAY/ID.mp4
//	pipeline ──sink.Result.Events──► Recorder.Write ──rows──► writer ──► index.db (bbolt)
//
// Files (under Recorder.Dir): STREAM/YYYY-MM-DD/ID.mp4 (ID: the clip's first event),
// ID.jpg and ID.boxes.jpg (the event's frame), ID.best.jpg and ID.best.boxes.jpg (its track's
// best frame) per event with snapshots, and index.db. docs/evidence.md has the configuration,
// the guarantees and the API.
package evidence
