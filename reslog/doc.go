// Package reslog keeps each stream's per-frame results: an append-only log of every inferred
// frame's tracked objects (PTS, wall time, track id, class, score, box, zone membership) beside
// the stream's recording, compact and indexed by time.
//
//	pipeline ──sink.Result──► Log.Write ──frames──► block (delta/varint, ≤ Block of frames)
//	                                        └─ zstd ──► DIR/STREAM/START.rlog (append, CRC per block)
//
// A chunk file (named by its first frame's wall time in Unix microseconds, 20 digits) is the
// magic "VRL1" then blocks: a 24-byte header (payload length, CRC-32C of the payload, first and
// last wall time in Unix µs, little endian) and the zstd-compressed payload (format.go). A torn
// tail (a crash mid-append) is cut when the log opens, and counted. docs/recording.md has the
// configuration and the API.
package reslog
