package metrics_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/vinfer/vinfer/internal/testutil"
)

// TestMetricsTableOnce: docs/http-api.md's metrics table had the GPU memory row twice (issue
// 29, item 8c). Every series is in one row only, and the stream state series are there.
func TestMetricsTableOnce(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(testutil.Root(t), "docs", "http-api.md"))
	if err != nil {
		t.Fatal(err)
	}
	name := regexp.MustCompile("`(vinfer_[a-z0-9_]+)`")
	rows := map[string]int{}
	for _, l := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(l, "| `vinfer_") {
			continue
		}
		cells := strings.Split(l, "|")
		for _, m := range name.FindAllStringSubmatch(cells[1], -1) {
			if rows[m[1]]++; rows[m[1]] == 2 {
				t.Errorf("%s in more than one row of the metrics table: %s", m[1], l)
			}
		}
	}
	for _, want := range []string{"vinfer_gpu_memory_used_bytes", "vinfer_streams", "vinfer_stream_start_attempts", "vinfer_stream_state"} {
		if rows[want] == 0 {
			t.Errorf("%s missing from the metrics table", want)
		}
	}
}
