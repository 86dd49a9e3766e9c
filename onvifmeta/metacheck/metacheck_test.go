package metacheck_test

import (
	"strings"
	"testing"
	"time"

	"github.com/vinfer/vinfer/onvifmeta"
	"github.com/vinfer/vinfer/onvifmeta/metacheck"
)

func doc() string {
	f := onvifmeta.Frame{Time: time.Date(2026, 12, 6, 3, 0, 0, 250e6, time.UTC), Width: 800, Height: 400, Source: "cam&1",
		Objects: []onvifmeta.Object{{ID: 4, Box: [4]float32{0, 0, 400, 100}, Label: "person", Score: 0.9},
			{ID: 5, Box: [4]float32{-10, 390, 900, 410}, Label: "kite", Score: 1.2}},
		Events: []onvifmeta.Notification{{Topic: onvifmeta.TopicLineCrossed, Rule: `"door"`, ObjectID: 4},
			{Topic: onvifmeta.TopicObjectsInside, Rule: "lot", ObjectID: 5, Inside: true}}}
	return string(f.AppendXML(nil))
}

// TestFrameValidates: a document of Frame validates and carries its objects in ONVIF's
// default transformation (y up), clamped, escaped, classes mapped, events as written.
func TestFrameValidates(t *testing.T) {
	m, err := metacheck.Validate([]byte(doc()))
	if err != nil {
		t.Fatalf("%v\n%s", err, doc())
	}
	if !m.UTC.Equal(time.Date(2026, 12, 6, 3, 0, 0, 250e6, time.UTC)) || len(m.Objects) != 2 || len(m.Events) != 2 {
		t.Fatalf("%+v", m)
	}
	o := m.Objects[0]
	if o.ID != 4 || o.Left != -1 || o.Right != 0 || o.Top != 1 || o.Bottom != 0.5 || o.Class != "Human" || o.Likelihood != 0.9 {
		t.Fatalf("object 0: %+v", o)
	}
	o = m.Objects[1]
	if o.Left != -1 || o.Right != 1 || o.Bottom != -1 || o.Class != "kite" || o.Likelihood != 1 {
		t.Fatalf("object 1 not clamped: %+v", o)
	}
	want := []metacheck.Event{{Topic: onvifmeta.TopicLineCrossed, Rule: `"door"`, ObjectID: "4"},
		{Topic: onvifmeta.TopicObjectsInside, Rule: "lot", ObjectID: "5", Inside: "true"}}
	for i := range want {
		if m.Events[i] != want[i] {
			t.Fatalf("event %d: %+v, want %+v", i, m.Events[i], want[i])
		}
	}
}

// TestRejects: the checker refuses documents that break the schema.
func TestRejects(t *testing.T) {
	good := doc()
	for name, bad := range map[string]string{
		"namespace":          strings.Replace(good, `xmlns:tt="http://www.onvif.org/ver10/schema"`, `xmlns:tt="urn:x"`, 1),
		"no UtcTime":         strings.Replace(good, `UtcTime="2026-12-06T03:00:00.250Z">`, `>`, 1),
		"bad UtcTime":        strings.Replace(good, `UtcTime="2026-12-06T03:00:00.250Z">`, `UtcTime="noon">`, 1),
		"box range":          strings.Replace(good, `left="-1.0000"`, `left="-1.5"`, 1),
		"no CenterOfGravity": cut(good, "<tt:CenterOfGravity", "/>"),
		"order":              strings.Replace(good, `<tt:Class>`, `<tt:Extension/><tt:Class>`, 1),
		"ObjectId":           strings.Replace(good, `ObjectId="4"`, `ObjectId="four"`, 1),
		"Likelihood":         strings.Replace(good, `Likelihood="0.900"`, `Likelihood="2"`, 1),
		"no Message":         cut(good, "<wsnt:Message>", "</wsnt:Message>"),
		"no Dialect":         strings.Replace(good, ` Dialect="`+onvifmeta.TopicDialect+`"`, ``, 1),
		"no Value":           strings.Replace(good, `Name="Rule" Value="lot"`, `Name="Rule"`, 1),
	} {
		if bad == good {
			t.Fatalf("%s: mutation did not apply", name)
		}
		if _, err := metacheck.Validate([]byte(bad)); err == nil {
			t.Errorf("%s: accepted\n%s", name, bad)
		}
	}
}

// cut removes the first span from start through end.
func cut(s, start, end string) string {
	i := strings.Index(s, start)
	if i < 0 {
		return s
	}
	j := strings.Index(s[i:], end)
	return s[:i] + s[i+j+len(end):]
}
