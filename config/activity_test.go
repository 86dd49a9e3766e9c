package config

import (
	"strings"
	"testing"
	"time"
)

// TestActivitySection: activity settings parse at the top level and per stream (a stream's
// fields over the defaults, mode: off turning a default mode off), and are off by default.
func TestActivitySection(t *testing.T) {
	c, err := Parse([]byte(`
activity: {mode: gate, refresh: 3s, mask: [[[0, 0], [100, 0], [100, 50]]]}
models: [{name: m, path: m.onnx}]
streams:
  - {id: a, source: a.mp4, model: m}
  - {id: b, source: b.mp4, model: m, activity: {mode: idle, idle_after: 20s, max_gop: 2s, gop_bytes: 1048576}}
  - {id: c, source: c.mp4, model: m, activity: {mode: off}}
`))
	if err != nil {
		t.Fatal(err)
	}
	a := c.Streams[0].Activity.Over(c.Activity)
	if !a.Enabled() || a.Mode != ActivityGate || time.Duration(a.Refresh) != 3*time.Second || len(a.Mask) != 1 {
		t.Fatalf("a: %+v", a)
	}
	b := c.Streams[1].Activity.Over(c.Activity)
	if b.Mode != ActivityIdle || time.Duration(b.IdleAfter) != 20*time.Second || time.Duration(b.Refresh) != 3*time.Second || b.GOPBytes != 1<<20 {
		t.Fatalf("b: %+v", b)
	}
	if o := c.Streams[2].Activity.Over(c.Activity); o.Enabled() {
		t.Fatalf("c: mode off enabled: %+v", o)
	}
	plain, err := Parse([]byte("models: [{name: m, path: m.onnx}]\nstreams: [{id: a, source: a.mp4, model: m}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if a := plain.Streams[0].Activity.Over(plain.Activity); a.Enabled() {
		t.Fatalf("gating on by default: %+v", a)
	}
}

// TestActivityInvalid: each bad setting is refused with an error naming its field.
func TestActivityInvalid(t *testing.T) {
	for _, c := range []struct{ yaml, field string }{
		{"{mode: sometimes}", "activity.mode"},
		{"{refresh: 10ms}", "activity.refresh"},
		{"{refresh: 2h}", "activity.refresh"},
		{"{idle_after: 100ms}", "activity.idle_after"},
		{"{max_gop: -1s}", "activity.max_gop"},
		{"{gop_bytes: 100}", "activity.gop_bytes"},
		{"{gop_bytes: 1099511627776}", "activity.gop_bytes"},
		{"{crop: everything}", "activity.crop"},
		{"{min_fraction: 1.5}", "activity.min_fraction"},
		{"{threshold: 300}", "activity.threshold"},
		{"{width: 4}", "activity.width"},
		{"{lighting: -0.5}", "activity.lighting"},
		{"{mask: [[[0, 0], [1, 1]]]}", "activity.mask[0]"},
		{"{mask: [[[0, 0], [1, 1], [-5, 2]]]}", "activity.mask[0]"},
	} {
		for _, doc := range []string{"activity: " + c.yaml + "\n",
			"models: [{name: m, path: m.onnx}]\nstreams: [{id: a, source: a.mp4, model: m, activity: " + c.yaml + "}]\n"} {
			_, err := Parse([]byte(doc))
			if err == nil || !strings.Contains(err.Error(), c.field) {
				t.Errorf("%q: error %v, want one naming %s", doc, err, c.field)
			}
		}
	}
}

// TestActivitySampleConfig: configs/activity.yaml loads, with idle decoding on its stream.
func TestActivitySampleConfig(t *testing.T) {
	c, err := Load("../configs/activity.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if a := c.Streams[0].Activity.Over(c.Activity); a.Mode != ActivityIdle || len(c.Streams[0].Zones) != 1 || len(c.Streams[0].Lines) != 1 {
		t.Fatalf("%+v", c.Streams[0])
	}
}

// TestSkipNonRefValidate: skip_nonref only with interval > 1 or max_fps, on the FFmpeg decoder.
func TestSkipNonRefValidate(t *testing.T) {
	for doc, ok := range map[string]bool{
		"{id: a, source: a.mp4, model: m, skip_nonref: true}":                             false,
		"{id: a, source: a.mp4, model: m, skip_nonref: true, interval: 3}":                true,
		"{id: a, source: a.mp4, model: m, skip_nonref: true, max_fps: 5}":                 true,
		"{id: a, source: a.mp4, model: m, skip_nonref: true, max_fps: 5, decoder: nvdec}": false,
	} {
		_, err := Parse([]byte("models: [{name: m, path: m.onnx}]\nstreams: [" + doc + "]\n"))
		if (err == nil) != ok || err != nil && !strings.Contains(err.Error(), "skip_nonref") {
			t.Errorf("%s: %v", doc, err)
		}
	}
}

// TestActivityNVDEC: gating is accepted on an nvdec stream with the same field checks; idle
// decoding only with VINFER_NVDEC_IDLE=experimental (its first GPU run stalled).
func TestActivityNVDEC(t *testing.T) {
	cfg := func(act string) []byte {
		return []byte("models: [{name: m, path: m.onnx, provider: cuda}]\nstreams: [{id: a, source: a.mp4, model: m, decoder: nvdec, activity: {" + act + "}}]\n")
	}
	if _, err := Parse(cfg("mode: gate")); err != nil {
		t.Errorf("mode gate on nvdec: %v", err)
	}
	t.Setenv(NVDECIdleEnv, "")
	if _, err := Parse(cfg("mode: idle")); err == nil || !strings.Contains(err.Error(), "activity.mode: idle") {
		t.Errorf("mode idle on nvdec without %s: %v", NVDECIdleEnv, err)
	}
	t.Setenv(NVDECIdleEnv, "experimental")
	if _, err := Parse(cfg("mode: idle")); err != nil {
		t.Errorf("mode idle on nvdec with %s: %v", NVDECIdleEnv, err)
	}
	_, err := Parse(cfg("mode: idle, threshold: 300"))
	if err == nil || !strings.Contains(err.Error(), "activity.threshold") {
		t.Errorf("bad threshold on nvdec: %v", err)
	}
}
