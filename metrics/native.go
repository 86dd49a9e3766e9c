package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/vinfer/vinfer/internal/memstat"
)

// The C heap (glibc malloc: FFmpeg, ONNX Runtime, vinfer's native buffers), read at scrape
// time, beside Go's own go_memstats_* and process_resident_memory_bytes: RSS minus Go's
// memory minus these is the binary's text and the libraries' mappings (issue 29, item 8).
var (
	descNativeInUse = desc("native_heap_inuse_bytes", "C heap bytes allocated and not freed (glibc mallinfo2: uordblks + hblkhd).")
	descNativeHeld  = desc("native_heap_held_bytes", "C heap bytes malloc holds from the system, in use or kept free for reuse (glibc mallinfo2: arena + hblkhd).")
	descArenas      = desc("native_heap_arenas", "glibc malloc arenas (malloc_info); each keeps its own free memory.")
)

// nativeCollector reports the C heap; mallinfo2 and malloc_info walk every malloc arena under
// its lock, well under a millisecond a scrape.
type nativeCollector struct{}

// Describe implements prometheus.Collector.
func (nativeCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descNativeInUse
	ch <- descNativeHeld
	ch <- descArenas
}

// Collect implements prometheus.Collector.
func (nativeCollector) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(descNativeInUse, prometheus.GaugeValue, float64(memstat.NativeInUse()))
	ch <- prometheus.MustNewConstMetric(descNativeHeld, prometheus.GaugeValue, float64(memstat.NativeHeld()))
	if n := memstat.Arenas(); n > 0 {
		ch <- prometheus.MustNewConstMetric(descArenas, prometheus.GaugeValue, float64(n))
	}
}
