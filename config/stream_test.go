package config

import (
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
)

// TestStreamSameInYAMLAndJSON: the config file and the HTTP API carry one stream shape with the
// same field names, and every field survives a round trip through both.
func TestStreamSameInYAMLAndJSON(t *testing.T) {
	gpu := 1
	want := Stream{ID: "cam-1", Source: "rtsp://cam/x", Model: "m", Loop: true, Realtime: true, Interval: 2, MaxFPS: 7.5,
		Drop: DropOldest, Concealed: ConcealedDrop, Transport: TransportUDP, Decoder: DecoderNVDEC, GPU: &gpu}
	j, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	y, err := yaml.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	var fromJSON, fromYAML Stream
	if err := json.Unmarshal(j, &fromJSON); err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalWithOptions(y, &fromYAML, yaml.Strict()); err != nil {
		t.Fatal(err)
	}
	for _, got := range []Stream{fromJSON, fromYAML} {
		if got.ID != want.ID || got.Drop != want.Drop || got.Concealed != want.Concealed || got.Transport != want.Transport || got.Decoder != want.Decoder ||
			got.GPU == nil || *got.GPU != 1 || got.MaxFPS != 7.5 || !got.Loop || !got.Realtime || got.Interval != 2 {
			t.Fatalf("round trip: %+v, want %+v", got, want)
		}
	}
	var keys map[string]any
	json.Unmarshal(j, &keys)
	for _, k := range []string{"id", "source", "model", "loop", "realtime", "interval", "max_fps", "drop", "concealed", "transport", "decoder", "gpu"} {
		if _, ok := keys[k]; !ok {
			t.Errorf("JSON lacks %q: %s", k, j)
		}
		if !strings.Contains(string(y), k+":") {
			t.Errorf("YAML lacks %q: %s", k, y)
		}
	}
}

func TestStreamValidate(t *testing.T) {
	cases := []struct {
		name string
		s    Stream
		want error
	}{
		{"ok", Stream{ID: "a.b_c-1", Source: "x.mp4", Model: "m"}, nil},
		{"path in id", Stream{ID: "../etc", Source: "x", Model: "m"}, ErrStreamID},
		{"dot id", Stream{ID: "..", Source: "x", Model: "m"}, ErrStreamID},
		{"long id", Stream{ID: strings.Repeat("a", 65), Source: "x", Model: "m"}, ErrStreamID},
		{"no source", Stream{ID: "a", Model: "m"}, ErrNoSource},
		{"no model", Stream{ID: "a", Source: "x"}, ErrNoModel},
		{"max_fps bounds", Stream{ID: "a", Source: "x", Model: "m", MaxFPS: 0.001}, nil},
		{"max_fps top", Stream{ID: "a", Source: "x", Model: "m", MaxFPS: 1000}, nil},
		{"max_fps tiny", Stream{ID: "a", Source: "x", Model: "m", MaxFPS: 1e-300}, ErrMaxFPS},
		{"max_fps huge", Stream{ID: "a", Source: "x", Model: "m", MaxFPS: 1e308}, ErrMaxFPS},
		{"max_fps negative", Stream{ID: "a", Source: "x", Model: "m", MaxFPS: -1}, ErrMaxFPS},
		{"max_fps NaN", Stream{ID: "a", Source: "x", Model: "m", MaxFPS: math.NaN()}, ErrMaxFPS},
	}
	for _, c := range cases {
		err := c.s.Validate()
		if (c.want == nil) != (err == nil) || (c.want != nil && !errors.Is(err, c.want)) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
}

func TestEnumWords(t *testing.T) {
	var d DropPolicy
	if err := json.Unmarshal([]byte(`"newest"`), &d); err == nil || !strings.Contains(err.Error(), "use oldest or block") {
		t.Fatalf("bad drop word: %v", err)
	}
	if DropAuto.Resolve(true) != DropOldest || DropAuto.Resolve(false) != DropBlock || DropBlock.Resolve(true) != DropBlock {
		t.Fatal("Resolve")
	}
	var c Concealed
	if err := json.Unmarshal([]byte(`"keep"`), &c); err == nil || !strings.Contains(err.Error(), "use infer or drop") {
		t.Fatalf("bad concealed word: %v", err)
	}
	var tr Transport
	if err := tr.UnmarshalText(nil); err != nil || tr != TransportAuto {
		t.Fatal("empty transport is auto")
	}
}

func TestSinkDecl(t *testing.T) {
	c, err := Parse([]byte(`
output:
  sinks:
    - {type: jsonl, path: out.jsonl, all_frames: true}
    - {type: jsonl, pth: typo}
`))
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Path      string `yaml:"path"`
		AllFrames bool   `yaml:"all_frames"`
	}
	if err := c.Output.Sinks[0].Decode(&s); err != nil || s.Path != "out.jsonl" || !s.AllFrames {
		t.Fatalf("decode: %+v %v", s, err)
	}
	if err := c.Output.Sinks[1].Decode(&s); err == nil || !strings.Contains(err.Error(), "pth") {
		t.Fatalf("unknown field: %v", err)
	}
	if _, err := Parse([]byte("output: {sinks: [{path: x}]}")); err == nil || !strings.Contains(err.Error(), "type is required") {
		t.Fatalf("no type: %v", err)
	}
}

func TestStreamTrackerAndScene(t *testing.T) {
	c, err := Parse([]byte(`
models: [{name: m, path: x.onnx}]
streams:
  - id: a
    source: a.mp4
    model: m
    tracker: {track_thresh: 0.6, track_buffer: 2s}
    zones: [{name: table, polygon: [[100, 100], [300, 100], [300, 300]]}]
    lines: [{name: door, points: [[0, 200], [400, 200]]}]
  - {id: b, source: b.mp4, model: m, tracker: none}
`))
	if err != nil {
		t.Fatal(err)
	}
	a, b := c.Streams[0], c.Streams[1]
	if !a.Tracker.Enabled() || a.Tracker.TrackThresh != 0.6 || len(a.Zones) != 1 || len(a.Lines) != 1 || b.Tracker.Enabled() {
		t.Fatalf("%+v %+v", a, b)
	}
	j, _ := json.Marshal(b)
	if !strings.Contains(string(j), `"tracker":"none"`) {
		t.Fatalf("JSON %s", j)
	}
	var back Stream
	if err := json.Unmarshal([]byte(`{"id":"x","source":"y","model":"m","tracker":"none","zones":[{"name":"z","polygon":[[1,1],[50,1],[50,50]]}]}`), &back); err != nil {
		t.Fatal(err)
	}
	if back.Tracker.Enabled() || len(back.Zones) != 1 {
		t.Fatalf("%+v", back)
	}
	if err := back.Validate(); err == nil || !strings.Contains(err.Error(), "need the tracker") {
		t.Fatalf("zones without tracker: %v", err)
	}
	if _, err := Parse([]byte("models: [{name: m, path: x}]\nstreams: [{id: a, source: f, model: m, lines: [{name: l, points: [[1,1],[1,1]]}]}]")); err == nil {
		t.Fatal("zero-length line accepted")
	}
}

// TestConfigStreamIDs: ids in a config file follow the API's rules (issue 14, item 9): no
// newlines, quotes or path steps.
func TestConfigStreamIDs(t *testing.T) {
	for _, id := range []string{"a\nb", `a"b`, "../x", "..", "a/b", "a b"} {
		y := "models: [{name: m, path: x}]\nstreams: [{id: " + strconv.Quote(id) + ", source: f, model: m}]"
		if _, err := Parse([]byte(y)); err == nil || !errors.Is(err, ErrStreamID) {
			t.Errorf("id %q: %v, want ErrStreamID", id, err)
		}
	}
}
