package objects

import (
	"errors"
	"strings"
	"testing"

	"github.com/vinfer/vinfer/analytics"
	"github.com/vinfer/vinfer/detect"
)

func det(label string, score float32, x1, y1, x2, y2 float32) detect.Detection {
	return detect.Detection{Label: label, Score: score, Box: [4]float32{x1, y1, x2, y2}}
}

func labels(ds []detect.Detection) string {
	s := make([]string, len(ds))
	for i, d := range ds {
		s[i] = d.Label
	}
	return strings.Join(s, ",")
}

// TestApply: masks, filters (pixels and fractions, per class and per group) and the NMS inside a
// group, on one 1000×500 frame.
func TestApply(t *testing.T) {
	rules := Rules{
		Groups: map[string][]string{"vehicle": {"car", "truck", "bus"}},
		Filters: []Filter{
			{Classes: []string{"vehicle"}, MinArea: 0.001, Normalized: true}, // 500 px²
			{Classes: []string{"person"}, MaxAspect: 1},                      // standing people only
			{MaxArea: 100000},
		},
		Masks: []Mask{{Name: "billboard", Polygon: []analytics.Point{{0, 0}, {0.2, 0}, {0.2, 0.2}, {0, 0.2}}, Normalized: true}},
	}
	s, err := Compile(rules)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		in   []detect.Detection
		want string
	}{
		{"car and truck on one vehicle", []detect.Detection{det("car", 0.9, 100, 100, 200, 200), det("truck", 0.6, 102, 101, 203, 198)}, "car"},
		{"truck scores higher", []detect.Detection{det("truck", 0.7, 100, 100, 200, 200), det("car", 0.6, 100, 100, 200, 200)}, "truck"},
		{"two vehicles side by side", []detect.Detection{det("car", 0.9, 300, 100, 400, 200), det("bus", 0.8, 420, 100, 520, 200)}, "car,bus"},
		{"ungrouped classes keep their overlap", []detect.Detection{det("dog", 0.9, 300, 300, 400, 400), det("cat", 0.8, 300, 300, 400, 400)}, "dog,cat"},
		{"in the mask", []detect.Detection{det("car", 0.9, 10, 10, 100, 90), det("car", 0.8, 500, 300, 600, 400)}, "car"},
		{"centre outside the mask", []detect.Detection{det("car", 0.9, 150, 50, 300, 150)}, "car"},
		{"small vehicle", []detect.Detection{det("bus", 0.9, 500, 300, 520, 320), det("dog", 0.8, 600, 300, 620, 320)}, "dog"},
		{"lying person", []detect.Detection{det("person", 0.9, 500, 300, 700, 350), det("person", 0.8, 800, 200, 850, 400)}, "person"},
		{"too large for all", []detect.Detection{det("dog", 0.9, 300, 0, 1000, 500)}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := s.Apply(append([]detect.Detection(nil), tc.in...), 1000, 500)
			if labels(got) != tc.want {
				t.Fatalf("kept %q, want %q: %+v", labels(got), tc.want, got)
			}
		})
	}
	if s.Masked.Load() != 1 || s.Filtered.Load() != 3 || s.Merged.Load() != 2 {
		t.Errorf("masked %d, filtered %d, merged %d; want 1, 3, 2", s.Masked.Load(), s.Filtered.Load(), s.Merged.Load())
	}
	in := []detect.Detection{det("car", 0.9, 100, 100, 200, 200), det("truck", 0.6, 102, 101, 203, 198), det("dog", 0.5, 10, 10, 90, 90)}
	buf := make([]detect.Detection, len(in))
	if a := testing.AllocsPerRun(20, func() { copy(buf, in); s.Apply(buf, 1000, 500) }); a != 0 {
		t.Errorf("%v allocations per Apply", a)
	}
	var none *Stage
	if got := none.Apply(in, 10, 10); len(got) != 3 {
		t.Errorf("nil stage kept %d", len(got))
	}
}

// TestValidate: each bad rule is refused with an error naming its field.
func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		r    Rules
		want error
		in   string
	}{
		{Rules{Groups: map[string][]string{"vehicle": {"car"}, "auto": {"car"}}}, ErrTwoGroups, "groups.vehicle[0]"},
		{Rules{Groups: map[string][]string{"car": {"car", "truck"}}}, ErrGroupIsLabel, "groups.car"},
		{Rules{Groups: map[string][]string{"vehicle": {}}}, ErrRange, "groups.vehicle"},
		{Rules{Groups: map[string][]string{" v": {"car"}}}, ErrName, "groups"},
		{Rules{Filters: []Filter{{MinArea: 2, Normalized: true}}}, ErrRange, "filters[0]: min_area"},
		{Rules{Filters: []Filter{{MinAspect: 3, MaxAspect: 2}}}, ErrRange, "filters[0]: min_aspect 3 above"},
		{Rules{Masks: []Mask{{Name: "m", Polygon: []analytics.Point{{0, 0}, {1, 1}}}}}, ErrPolygon, `masks[0] "m"`},
		{Rules{Masks: []Mask{{Polygon: []analytics.Point{{0, 0}, {1, 0}, {2, 1}}, Normalized: true}}}, ErrPolygon, "masks[0]"},
		{Rules{Masks: []Mask{{Polygon: []analytics.Point{{0, 0}, {1, 0}, {1, 1}}, Anchor: "middle"}}}, ErrAnchor, "masks[0]: anchor"},
		{Rules{GroupNMSIoU: 1.5}, ErrRange, "group_nms_iou"},
	} {
		err := tc.r.Validate()
		if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.in) {
			t.Errorf("%+v: %v, want %v naming %s", tc.r, err, tc.want, tc.in)
		}
		if _, err := Compile(tc.r); err == nil {
			t.Errorf("%+v compiled", tc.r)
		}
	}
	r := Rules{Groups: map[string][]string{"vehicle": {"car", "truk"}}, Masks: []Mask{{Polygon: []analytics.Point{{0, 0}, {1, 0}, {1, 1}}, Classes: []string{"vehicle", "persn"}}}}
	err := r.Check([]string{"person", "car"})
	if err == nil || !strings.Contains(err.Error(), `groups.vehicle[1] "truk"`) || !strings.Contains(err.Error(), `masks[0]: classes[1] "persn"`) || strings.Contains(err.Error(), `"vehicle"`) {
		t.Errorf("Check: %v", err)
	}
	r = Rules{Groups: map[string][]string{"car": {"truck", "bus"}}}
	if err := r.Check([]string{"car", "truck", "bus"}); err == nil || !strings.Contains(err.Error(), "groups.car: is a label of the model") {
		t.Errorf("group named after a label: %v", err)
	}
	if got := r.Names([]string{"person"}); strings.Join(got, ",") != "person,car" {
		t.Errorf("Names = %v", got)
	}
}
