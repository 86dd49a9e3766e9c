package event

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

func compileSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	f, err := os.Open("../docs/events.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource("events.schema.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("events.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func instance(t *testing.T, b []byte) any {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestSchemaAcceptsEvents validates an encoded event of every type against docs/events.schema.json.
func TestSchemaAcceptsEvents(t *testing.T) {
	s := compileSchema(t)
	seen := map[Type]bool{}
	for _, e := range sampleEvents() {
		b := e.AppendJSON(nil)
		if err := s.Validate(instance(t, b)); err != nil {
			t.Errorf("%s: %v", b, err)
		}
		seen[e.Type] = true
	}
	if len(seen) != len(Types) {
		t.Fatalf("covered %d of %d types", len(seen), len(Types))
	}
}

// TestSchemaRejects checks that the schema is tight: fields a type does not carry, missing
// fields and malformed values fail.
func TestSchemaRejects(t *testing.T) {
	s := compileSchema(t)
	evs := sampleEvents()
	edit := func(e Event, f func(m map[string]any)) []byte {
		var m map[string]any
		_ = json.Unmarshal(e.AppendJSON(nil), &m)
		f(m)
		b, _ := json.Marshal(m)
		return b
	}
	cases := []struct {
		name string
		doc  []byte
	}{
		{"cross without direction", edit(evs[0], func(m map[string]any) { delete(m, "direction") })},
		{"cross with zone", edit(evs[0], func(m map[string]any) { m["zone"] = "z" })},
		{"enter with dwell", edit(evs[1], func(m map[string]any) { m["dwell"] = 1.0 })},
		{"leave without dwell", edit(evs[2], func(m map[string]any) { delete(m, "dwell") })},
		{"loiter without zone", edit(evs[3], func(m map[string]any) { delete(m, "zone") })},
		{"start with line", edit(evs[4], func(m map[string]any) { m["line"] = "l" })},
		{"unknown type", edit(evs[4], func(m map[string]any) { m["type"] = "zone.exit" })},
		{"unknown key", edit(evs[5], func(m map[string]any) { m["extra"] = 1 })},
		{"lower-case id", edit(evs[5], func(m map[string]any) { m["id"] = strings.ToLower(m["id"].(string)) })},
		{"time without ms", edit(evs[5], func(m map[string]any) { m["time"] = "2026-03-01T12:00:00Z" })},
		{"short box", edit(evs[5], func(m map[string]any) { m["box"] = []float64{1, 2, 3} })},
		{"bad direction", edit(evs[0], func(m map[string]any) { m["direction"] = "up" })},
	}
	for _, c := range cases {
		if err := s.Validate(instance(t, c.doc)); err == nil {
			t.Errorf("%s: accepted %s", c.name, c.doc)
		}
	}
}
