package metrics_test

import (
	"strings"
	"testing"

	"github.com/vinfer/vinfer/internal/defs"
)

// onvifApp is an app with one onvif:// stream watching its camera's events.
type onvifApp struct{ twoGPUs }

func (onvifApp) CameraEvents() []defs.CameraEventCounts {
	return []defs.CameraEventCounts{{Stream: "lobby", Received: 7, Wakes: 3, Failures: 2}}
}

// TestONVIFSeries: a stream's camera event counters are exported by kind; none without.
func TestONVIFSeries(t *testing.T) {
	body := scrape(t, onvifApp{})
	for _, want := range []string{
		`vinfer_onvif_events_total{kind="received",stream="lobby"} 7`,
		`vinfer_onvif_events_total{kind="wakes",stream="lobby"} 3`,
		`vinfer_onvif_events_total{kind="failures",stream="lobby"} 2`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("missing %s", want)
		}
	}
	if strings.Contains(scrape(t, twoGPUs{}), "vinfer_onvif_") {
		t.Error("ONVIF series without camera events")
	}
}
