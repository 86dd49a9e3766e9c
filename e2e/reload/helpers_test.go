package reload_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/detect"
	"github.com/vinfer/vinfer/internal/testutil"
	"github.com/vinfer/vinfer/model"
)

func yoloxDecl(t testing.TB) config.Model {
	t.Helper()
	d, err := model.Declare(filepath.Join(assets(t), "models", "yolox_nano_416.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func assets(t testing.TB) string { return filepath.Join(testutil.Root(t), "assets") }

// describe prints detections rounded (for comparing runs).
func describe(ds []detect.Detection) string {
	var b strings.Builder
	for _, d := range ds {
		fmt.Fprintf(&b, "%s %.3f %.1f\n", d.Label, d.Score, d.Box)
	}
	return b.String()
}
