package metrics_test

import (
	"io"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/vinfer/vinfer/metrics"
)

// TestNativeHeapSeries: /metrics tells the C heap (FFmpeg, ONNX Runtime) apart from Go's, so a
// soak can say which side grows (issue 29, item 8): the series are there, in use ≤ held, and
// malloc's arenas counted.
func TestNativeHeapSeries(t *testing.T) {
	srv := httptest.NewServer(metrics.New().Handler())
	defer srv.Close()
	res, err := srv.Client().Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	val := func(name string) float64 {
		for _, l := range strings.Split(string(b), "\n") {
			if f := strings.Fields(l); len(f) == 2 && f[0] == name {
				v, err := strconv.ParseFloat(f[1], 64)
				if err != nil {
					t.Fatalf("%s: %v", l, err)
				}
				return v
			}
		}
		t.Fatalf("no %s in /metrics", name)
		return 0
	}
	in, held := val("vinfer_native_heap_inuse_bytes"), val("vinfer_native_heap_held_bytes")
	if in <= 0 || held < in {
		t.Errorf("native heap in use %.0f, held %.0f: want 0 < in use ≤ held", in, held)
	}
	if n := val("vinfer_native_heap_arenas"); n < 1 {
		t.Errorf("%v malloc arenas, want ≥ 1", n)
	}
}
