package config

import (
	"strings"
	"testing"
)

func TestPrecision(t *testing.T) {
	c, err := Parse([]byte("models: [{name: a, path: x, provider: cuda, precision: fp16}, {name: b, path: y, precision: AUTO}, {name: c, path: z}]"))
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []Precision{PrecisionFP16, PrecisionAuto, PrecisionFP32} {
		if got := c.Models[i].Precision; got != want {
			t.Errorf("model %s: precision %v, want %v", c.Models[i].Name, got, want)
		}
	}
	for _, tc := range []struct{ name, yaml, want string }{
		{"unknown word", "models: [{name: m, path: x, precision: fp8}]", `precision "fp8": unknown value (use fp32, fp16 or auto)`},
		{"tensorrt", "models: [{name: m, path: x, provider: tensorrt, precision: fp16}]", "models[0].precision fp16: provider tensorrt builds its own engines"},
	} {
		_, err := Parse([]byte(tc.yaml))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
}
