package api_test

import (
	"strings"
	"testing"

	"github.com/vinfer/vinfer/config"
)

// TestModelPrecision: GET /api/models says what each model computes in: "fp32" by default, the
// float16 rewrite with its load check's figures for precision: fp16.
func TestModelPrecision(t *testing.T) {
	e := startWith(t, token, func(c *config.Config) {
		half := c.Models[0]
		half.Name, half.Precision, half.IntraOpThreads = "yolox-fp16", config.PrecisionFP16, 1
		c.Models = append(c.Models, half)
	}, nil)
	if _, err := e.app.Registry.Get("yolox-fp16"); err != nil {
		t.Fatal(err)
	}
	var list struct {
		Models []struct {
			Name      string `json:"name"`
			Precision string `json:"precision"`
		} `json:"models"`
	}
	e.want("GET", "/api/models", "", 200, &list)
	got := map[string]string{}
	for _, m := range list.Models {
		got[m.Name] = m.Precision
	}
	if got["yolox"] != "fp32" || !strings.HasPrefix(got["yolox-fp16"], "fp16 (checked: relative RMS error") {
		t.Errorf("precisions %q", got)
	}
}
