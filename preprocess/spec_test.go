package preprocess

import (
	"math"
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
	nan := float32(math.NaN())
	for _, tc := range []struct {
		name string
		spec Spec
		want string // "" for valid
	}{
		{"yolox", specYOLOX, ""},
		{"fastestdet", specFastestDet, ""},
		{"ultraface", specUltraFace, ""},
		{"zero width", with(specYOLOX, func(s *Spec) { s.Width = 0 }), "must be positive"},
		{"huge", with(specYOLOX, func(s *Spec) { s.Height = 1 << 15 }), "at most 16384"},
		{"std 0", with(specYOLOX, func(s *Spec) { s.Std[1] = 0 }), "std[1] is 0"},
		{"std NaN", with(specYOLOX, func(s *Spec) { s.Std[2] = nan }), "std[2] is NaN"},
		{"mean Inf", with(specYOLOX, func(s *Spec) { s.Mean[0] = float32(math.Inf(1)) }), "mean[0] is +Inf"},
		{"scale 0", with(specYOLOX, func(s *Spec) { s.Scale = 0 }), "scale is 0"},
		{"bad enum", with(specYOLOX, func(s *Spec) { s.Interp = 7 }), "unknown color order"},
	} {
		err := tc.spec.Validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
}

func TestEnumStrings(t *testing.T) {
	got := []string{BGR.String(), RGB.String(), Letterbox.String(), Stretch.String(), TopLeft.String(),
		Center.String(), Bilinear.String(), Area.String(), Interp(9).String()}
	want := []string{"bgr", "rgb", "letterbox", "stretch", "top-left", "center", "bilinear", "area", "invalid(9)"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("got %v, want %v", got, want)
	}
}
