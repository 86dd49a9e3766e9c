package event

import (
	"strings"

	"github.com/vinfer/vinfer/internal/jsonenc"
)

// Evidence is what the evidence recorder keeps of an event (package evidence,
// docs/evidence.md), encoded on the event as has_clip, has_snapshot, clip_url and
// snapshot_url. Values are shared by many events and never changed once set.
type Evidence struct {
	// Base is put before the URLs' paths: "" (paths on vinfer's own API, e.g.
	// /api/evidence/ID/clip.mp4) or an origin such as "http://vinfer.local:8080".
	Base string
	// Clip: a clip of the event is being recorded; clip_url serves it once written (a few
	// seconds after the event: post), 404 with the reason before and when it failed or expired.
	Clip bool
	// Snapshot: a JPEG of the track's best frame is taken with the clip; snapshot_url serves it.
	Snapshot bool
}

// ClipPath and SnapshotPath are the API's paths of event id's clip and snapshot.
func ClipPath(id ID) string     { return "/api/evidence/" + id.String() + "/clip.mp4" }
func SnapshotPath(id ID) string { return "/api/evidence/" + id.String() + "/snapshot.jpg" }

// appendEvidence writes the evidence keys of e (none when e.Evidence is nil).
func (e *Event) appendEvidence(b []byte) []byte {
	ev := e.Evidence
	if ev == nil {
		return b
	}
	b = append(b, `,"has_clip":`...)
	b = appendBool(b, ev.Clip)
	b = append(b, `,"has_snapshot":`...)
	b = appendBool(b, ev.Snapshot)
	if ev.Clip {
		b = append(b, `,"clip_url":`...)
		b = e.appendURL(b, "/clip.mp4")
	}
	if ev.Snapshot {
		b = append(b, `,"snapshot_url":`...)
		b = e.appendURL(b, "/snapshot.jpg")
	}
	return b
}

// appendURL writes "BASE/api/evidence/ID/FILE" as a JSON string, without allocating (the
// path after Base needs no escaping: ASCII letters and digits).
func (e *Event) appendURL(b []byte, file string) []byte {
	b = jsonenc.String(b, e.Evidence.Base)
	b = append(b[:len(b)-1], "/api/evidence/"...)
	b = e.ID.Append(b)
	b = append(b, file...)
	return append(b, '"')
}

func appendBool(b []byte, v bool) []byte {
	if v {
		return append(b, "true"...)
	}
	return append(b, "false"...)
}

// decodeEvidence rebuilds Evidence from the decoded keys (nil when has_clip is absent); Base
// is what precedes the API path in clip_url or snapshot_url.
func decodeEvidence(w *wire) *Evidence {
	if w.HasClip == nil {
		return nil
	}
	ev := &Evidence{Clip: *w.HasClip}
	if w.HasSnapshot != nil {
		ev.Snapshot = *w.HasSnapshot
	}
	for _, u := range []*string{w.ClipURL, w.SnapshotURL} {
		if u == nil {
			continue
		}
		if i := strings.Index(*u, "/api/evidence/"); i > 0 {
			ev.Base = (*u)[:i]
		}
		break
	}
	return ev
}
