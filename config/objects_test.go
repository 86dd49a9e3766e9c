package config

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestStreamObjectRules: groups, group_nms_iou, filters and masks are read from a stream's YAML
// next to its zones and lines, and a bad rule is refused naming the stream and the field.
func TestStreamObjectRules(t *testing.T) {
	const doc = `
models: [{name: m, path: m.onnx}]
streams:
  - id: lot
    source: lot.mp4
    model: m
    groups: {vehicle: [car, truck, bus]}
    group_nms_iou: 0.6
    filters: [{classes: [vehicle], min_area: 0.001, max_aspect: 4, normalized: true}]
    masks: [{name: sign, polygon: [[0,0],[100,0],[100,50]]}]
    lines: [{name: gate, points: [[0,200],[768,200]], classes: [vehicle]}]
`
	c, err := Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	s := c.Streams[0]
	if len(s.Groups["vehicle"]) != 3 || s.GroupNMSIoU != 0.6 || len(s.Filters) != 1 || s.Filters[0].MaxAspect != 4 ||
		len(s.Masks) != 1 || s.Masks[0].Name != "sign" || len(s.Lines) != 1 {
		t.Fatalf("read %+v", s)
	}
	bad := strings.Replace(doc, "[car, truck, bus]}", "[car, truck, bus], auto: [car]}", 1)
	if _, err := Parse([]byte(bad)); err == nil || !strings.Contains(err.Error(), "lot") || !strings.Contains(err.Error(), `groups.vehicle[0] "car": label in two groups (also groups.auto[0])`) {
		t.Fatalf("car in two groups: %v", err)
	}
}

// TestStreamObjectRulesJSON: the API's JSON form of a stream (unknown fields refused) takes the
// same rules and gives them back.
func TestStreamObjectRulesJSON(t *testing.T) {
	const doc = `{"id":"lot","source":"lot.mp4","model":"m","groups":{"vehicle":["car","bus"]},
"filters":[{"classes":["vehicle"],"min_aspect":0.2}],"masks":[{"polygon":[[0,0],[1,0],[1,1]],"normalized":true}]}`
	var s Stream
	dec := json.NewDecoder(strings.NewReader(doc))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(); err != nil || len(s.Groups["vehicle"]) != 2 || s.Filters[0].MinAspect != 0.2 || !s.Masks[0].Normalized {
		t.Fatalf("%+v: %v", s.Rules, err)
	}
	b, err := json.Marshal(s)
	if err != nil || !strings.Contains(string(b), `"groups":{"vehicle":["car","bus"]}`) || !strings.Contains(string(b), `"masks":[{"polygon":[[0,0],[1,0],[1,1]],"normalized":true}]`) {
		t.Fatalf("%s: %v", b, err)
	}
}
