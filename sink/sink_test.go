package sink

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/detect"
	"github.com/vinfer/vinfer/event"
)

func sample() *Result {
	return &Result{Stream: "cam\"1", Frame: 7, PTS: 700 * time.Millisecond, Width: 768, Height: 432, Model: "m",
		Detections: []detect.Detection{{ClassID: 0, Label: "person", Score: 0.9, Box: [4]float32{1, 2, 3, 4}, TrackID: 5}},
		Events: []event.Event{{ID: event.NewID(time.Unix(1, 0)), Type: event.LineCross, Stream: "cam\"1", TrackID: 5,
			Label: "person", Line: "exit", Direction: event.In, Time: time.Unix(1, 0)}}}
}

func TestAppendJSON(t *testing.T) {
	b := AppendJSON(nil, sample())
	var v struct {
		Source     string
		Detections []struct {
			TrackID int64 `json:"track_id"`
		}
		Events []event.Event
	}
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	if v.Source != "cam\"1" || len(v.Detections) != 1 || v.Detections[0].TrackID != 5 || len(v.Events) != 1 || v.Events[0].Line != "exit" {
		t.Fatalf("%s", b)
	}
	if n := testing.AllocsPerRun(100, func() { b = AppendJSON(b[:0], sample()) }); n > 8 { // sample() itself allocates
		t.Fatalf("AppendJSON allocates %v", n)
	}
}

func TestJSONLCarry(t *testing.T) {
	cases := []struct {
		settings map[string]any
		lines    int
		want     string
	}{
		{map[string]any{"path": "-"}, 1, `"detections"`},
		{map[string]any{"path": "-", "carry": "events"}, 1, `"type":"line.cross"`},
	}
	for _, c := range cases {
		var out bytes.Buffer
		s, err := JSONLKind.Open(config.NewSink("jsonl", c.settings), Env{Stdout: &out})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Write(sample()); err != nil {
			t.Fatal(err)
		}
		if err := s.Write(&Result{Stream: "empty"}); err != nil { // nothing detected, no event: no line
			t.Fatal(err)
		}
		if n := strings.Count(out.String(), "\n"); n != c.lines || !strings.Contains(out.String(), c.want) {
			t.Fatalf("%v: %q", c.settings, out.String())
		}
	}
	if _, err := JSONLKind.Open(config.NewSink("jsonl", map[string]any{"carry": "frames"}), Env{}); err == nil {
		t.Fatal("unknown carry accepted")
	}
	if _, err := JSONLKind.Open(config.NewSink("jsonl", map[string]any{"pth": "x"}), Env{}); err == nil || !strings.Contains(err.Error(), "pth") {
		t.Fatalf("unknown setting: %v", err)
	}
}

func TestOpenUnknownType(t *testing.T) {
	if _, err := Open(config.NewSink("carrier-pigeon", nil), Env{}); !errors.Is(err, ErrUnknownType) {
		t.Fatal(err)
	}
}
