package event

import (
	"encoding/json"
	"testing"
)

// TestEvidenceJSON: the evidence keys after the type's own, relative and absolute URLs, a
// left-out event with has_clip false and no URLs; each reads back and passes the schema.
func TestEvidenceJSON(t *testing.T) {
	s := compileSchema(t)
	e := sampleEvents()[0]
	e.ID, _ = ParseID("01JNX7Q2M8C3Z5V6W7Y8Z9ABCD")
	e.Direction = Out
	head := `{"id":"01JNX7Q2M8C3Z5V6W7Y8Z9ABCD","type":"line.cross","stream":"lobby","frame":1234,"pts":41.2,"time":"2026-03-01T12:00:00.123Z","track_id":17,"class_id":0,"label":"person","score":0.8812,"box":[408.7,0.0,561.8,400.3],"line":"door","direction":"out"`
	cases := []struct {
		ev   *Evidence
		want string
	}{
		{&Evidence{Clip: true, Snapshot: true}, head + `,"has_clip":true,"has_snapshot":true,"clip_url":"/api/evidence/01JNX7Q2M8C3Z5V6W7Y8Z9ABCD/clip.mp4","snapshot_url":"/api/evidence/01JNX7Q2M8C3Z5V6W7Y8Z9ABCD/snapshot.jpg"}`},
		{&Evidence{Base: "http://vinfer.local:8080", Clip: true}, head + `,"has_clip":true,"has_snapshot":false,"clip_url":"http://vinfer.local:8080/api/evidence/01JNX7Q2M8C3Z5V6W7Y8Z9ABCD/clip.mp4"}`},
		{&Evidence{}, head + `,"has_clip":false,"has_snapshot":false}`},
	}
	for _, c := range cases {
		e.Evidence = c.ev
		got := string(e.AppendJSON(nil))
		if got != c.want {
			t.Fatalf("\n got %s\nwant %s", got, c.want)
		}
		if err := s.Validate(instance(t, []byte(got))); err != nil {
			t.Errorf("schema: %s: %v", got, err)
		}
		var back Event
		if err := json.Unmarshal([]byte(got), &back); err != nil {
			t.Fatal(err)
		}
		if back.Evidence == nil || *back.Evidence != *c.ev {
			t.Fatalf("read back %+v, want %+v", back.Evidence, c.ev)
		}
		if again := string(back.AppendJSON(nil)); again != got {
			t.Fatalf("re-encoded\n%s\n%s", again, got)
		}
	}
	e.Evidence = &Evidence{Base: "http://h:1", Clip: true, Snapshot: true}
	buf := make([]byte, 0, 1024)
	if n := testing.AllocsPerRun(100, func() { buf = e.AppendJSON(buf[:0]) }); n != 0 {
		t.Errorf("AppendJSON with evidence: %v allocations, want 0", n)
	}
}

// TestSchemaRejectsEvidence: URLs without their flag, a flag without its URL, a foreign path.
func TestSchemaRejectsEvidence(t *testing.T) {
	s := compileSchema(t)
	e := sampleEvents()[1]
	e.Evidence = &Evidence{Clip: true, Snapshot: true}
	edit := func(f func(m map[string]any)) []byte {
		var m map[string]any
		_ = json.Unmarshal(e.AppendJSON(nil), &m)
		f(m)
		b, _ := json.Marshal(m)
		return b
	}
	for name, doc := range map[string][]byte{
		"has_clip without clip_url":  edit(func(m map[string]any) { delete(m, "clip_url") }),
		"clip_url with has_clip off": edit(func(m map[string]any) { m["has_clip"] = false }),
		"snapshot_url alone":         edit(func(m map[string]any) { delete(m, "has_snapshot"); delete(m, "has_clip"); delete(m, "clip_url") }),
		"has_clip alone":             edit(func(m map[string]any) { delete(m, "has_snapshot"); delete(m, "snapshot_url") }),
		"foreign clip path":          edit(func(m map[string]any) { m["clip_url"] = "/etc/passwd" }),
		"clip_url not a string":      edit(func(m map[string]any) { m["clip_url"] = 1 }),
	} {
		if err := s.Validate(instance(t, doc)); err == nil {
			t.Errorf("%s: accepted %s", name, doc)
		}
	}
}
