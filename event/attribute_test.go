package event

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// TestAttributes: a track's voted attributes encode as "attributes":{"plate":{…}}, valid
// against docs/events.schema.json, and read back the same.
func TestAttributes(t *testing.T) {
	s := compileSchema(t)
	e := sampleEvents()[0]
	e.Attributes = &Attributes{{Name: "colour", Text: "red", Score: 0.5, Reads: 2}, {Name: "plate", Text: "B6H920", Score: 0.9125, Reads: 7}}
	b := e.AppendJSON(nil)
	if !strings.Contains(string(b), `"attributes":{"colour":{"text":"red","score":0.5000,"reads":2},"plate":{"text":"B6H920","score":0.9125,"reads":7}}`) {
		t.Fatalf("encoded %s", b)
	}
	if err := s.Validate(instance(t, b)); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	var back Event
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.Attributes, e.Attributes) {
		t.Fatalf("read back %+v, want %+v", back.Attributes, e.Attributes)
	}
}

// TestEmbedding: a track.end's embedding encodes as "embedding":[…], valid against the schema,
// and reads back.
func TestEmbedding(t *testing.T) {
	s := compileSchema(t)
	e := sampleEvents()[len(Types)-1]
	if e.Type != TrackEnd {
		t.Fatalf("sample %s", e.Type)
	}
	e.Embedding = &Embedding{0.6, -0.8}
	b := e.AppendJSON(nil)
	if !strings.Contains(string(b), `"embedding":[0.6000,-0.8000]`) {
		t.Fatalf("encoded %s", b)
	}
	if err := s.Validate(instance(t, b)); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	var back Event
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.Embedding, e.Embedding) {
		t.Fatalf("read back %v", back.Embedding)
	}
}
