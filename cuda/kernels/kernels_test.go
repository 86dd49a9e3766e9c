package kernels

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEmbeddedPTX checks that the committed PTX holds both kernels with the parameter layout
// preprocess/gpu packs (a 152-byte Params struct, the output pointer, the pad value).
func TestEmbeddedPTX(t *testing.T) {
	t.Setenv("VINFER_PREPROCESS_PTX", "")
	ptx, err := Preprocess()
	if err != nil {
		t.Fatal(err)
	}
	s := string(ptx)
	for _, want := range []string{".entry nv12_nchw_f32(", ".entry nv12_nchw_f16(", ".param .align 8 .b8 nv12_nchw_f32_param_0[152]"} {
		if !strings.Contains(s, want) {
			t.Errorf("PTX lacks %q (rebuild it, see the package doc)", want)
		}
	}
}

func TestPTXOverride(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x.ptx")
	os.WriteFile(p, []byte("no kernels here"), 0o644)
	t.Setenv("VINFER_PREPROCESS_PTX", p)
	if _, err := Preprocess(); err == nil {
		t.Error("a PTX without kernels was accepted")
	}
	t.Setenv("VINFER_PREPROCESS_PTX", filepath.Join(t.TempDir(), "missing.ptx"))
	if _, err := Preprocess(); err == nil {
		t.Error("a missing PTX file was accepted")
	}
}
