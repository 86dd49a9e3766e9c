package event

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestGroupJSON: an object of a class group carries "group" after "label"; it reads back, the
// schema accepts it, and an event without a group has no such key (an empty one is refused).
func TestGroupJSON(t *testing.T) {
	s := compileSchema(t)
	e := sampleEvents()[0]
	e.Label, e.Group = "car", "vehicle"
	b := e.AppendJSON(nil)
	if !strings.Contains(string(b), `"label":"car","group":"vehicle","score"`) {
		t.Fatalf("%s", b)
	}
	var back Event
	if err := json.Unmarshal(b, &back); err != nil || back.Group != "vehicle" {
		t.Fatalf("%s: %v, group %q", b, err, back.Group)
	}
	if err := s.Validate(instance(t, b)); err != nil {
		t.Errorf("%s: %v", b, err)
	}
	e.Group = ""
	b = e.AppendJSON(nil)
	if strings.Contains(string(b), "group") {
		t.Errorf("%s", b)
	}
	bad := strings.Replace(string(b), `"label":"car"`, `"label":"car","group":""`, 1)
	if err := s.Validate(instance(t, []byte(bad))); err == nil {
		t.Errorf("schema accepts %s", bad)
	}
}
