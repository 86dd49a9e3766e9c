package api_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vinfer/vinfer/config"
)

// metricValue returns the value of the /metrics series line that starts with series (name and
// labels, exactly), or -1 when there is none.
func metricValue(metrics, series string) float64 {
	for _, l := range strings.Split(metrics, "\n") {
		if v, ok := strings.CutPrefix(l, series+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err == nil {
				return f
			}
		}
	}
	return -1
}

// TestIdleProbesKeepDecoder (issue 30): an idle camera's key frames (x264, B-frames: the
// decoder holds each picture back for reordering) are probed on the shared decoders without a
// drain to the end of stream and without setting a decoder up again per probe: /metrics
// counts the probes, pictures pushed out by an end of sequence, no drain, and at most one
// set-up per shared decoder.
func TestIdleProbesKeepDecoder(t *testing.T) {
	clip := stillClip(t, 30)
	e := start(t, "")
	if err := e.app.AddStream(config.Stream{ID: "still", Source: clip, Model: "yolox", Loop: true, Realtime: true,
		Activity: &config.Activity{Mode: config.ActivityIdle, IdleAfter: config.Duration(time.Second)}}); err != nil {
		t.Fatal(err)
	}
	var metrics string
	for end := time.Now().Add(2 * time.Minute); ; {
		metrics = string(e.want("GET", "/metrics", "", 200, nil))
		if metricValue(metrics, "vinfer_decoder_pool_probes_total") >= 4 {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("fewer than 4 idle key frames probed in 2 minutes:\n%s", metrics)
		}
		time.Sleep(100 * time.Millisecond)
	}
	probes := metricValue(metrics, "vinfer_decoder_pool_probes_total")
	drains := metricValue(metrics, "vinfer_decoder_pool_probe_drains_total")
	pushes := metricValue(metrics, "vinfer_decoder_pool_probe_pushes_total")
	setups := metricValue(metrics, "vinfer_decoder_pool_probe_setups_total")
	probers := metricValue(metrics, `vinfer_decoder_pool_decoders{role="probe"}`)
	if drains != 0 || pushes < 1 || setups < 0 || setups > probers || probers < 1 {
		t.Errorf("%v probes: %v drains, %v pushes, %v set-ups on %v shared decoders; want no drain, pictures pushed out, at most a set-up per shared decoder",
			probes, drains, pushes, setups, probers)
	}
}
