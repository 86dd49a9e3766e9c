// Package record keeps each selected stream's coded video continuously, in fragmented MP4
// segments (ISO/IEC 14496-12 §8.8, one fragment per GOP, no re-encoding), within age, size and
// free-space bounds; evidence (package evidence) keeps its event clips apart, longer.
//
//	source ──AU──► Observer (per stream: GOP in memory, bounded) ──GOP──► writer goroutine
//	                                   └─► DIR/STREAM/START.part (init + fragments, appended)
//	                                       ──closed──► DIR/STREAM/START-END.mp4
//
// START and END are wall times in Unix milliseconds (15 digits). A segment cut by a crash is
// cut back to its last whole fragment (still playable) when the recorder starts, or removed
// when it has none. docs/recording.md has the configuration, the guarantees and the API.
package record
