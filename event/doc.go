// Package event is the event model every vinfer output shares: JSON Lines, SSE and WebSocket,
// and the brokers fed through the outbox. One Event is one thing that happened to one tracked
// object in one stream: a line crossing, a zone entry, exit or loitering, a track's start or end.
//
// # Wire format
//
// An Event is one JSON object (docs/events.schema.json, JSON Schema draft 2020-12):
//
//	{"id":"01JNX7Q2M8C3Z5V6W7Y8Z9ABCD","type":"zone.leave","stream":"lobby","frame":1234,
//	 "pts":41.2,"time":"2026-03-01T12:00:00.123Z","track_id":17,"class_id":0,"label":"person",
//	 "score":0.8812,"box":[408.7,0.0,561.8,400.3],"zone":"table","dwell":12.5}
//
// pts and dwell are seconds, time is RFC 3339 UTC with milliseconds, box is [x1,y1,x2,y2] in
// pixels of the decoded frame (1 decimal), score has 4 decimals. zone is present on zone.*
// events, line and direction on line.cross, dwell on zone.leave and zone.loiter. With an
// evidence section (docs/evidence.md) every event also carries has_clip and has_snapshot, and
// the recorded ones clip_url and snapshot_url:
//
//	…,"has_clip":true,"has_snapshot":true,"clip_url":"/api/evidence/01JNX…/clip.mp4",
//	 "snapshot_url":"/api/evidence/01JNX…/snapshot.jpg"}
//
// # Identifiers
//
// ID is a ULID: 48 bits of Unix milliseconds then 80 random bits, written as 26 Crockford
// base32 characters, so that IDs sort by time as bytes and as text. A Generator makes them
// strictly increasing, also within one millisecond.
package event
