package metrics_test

import (
	"strings"
	"testing"

	"github.com/vinfer/vinfer/internal/defs"
)

// rtspMetaApp serves output.rtsp with two clients, one slow client dropped.
type rtspMetaApp struct{ twoGPUs }

func (rtspMetaApp) RTSPMeta() (defs.RTSPMetaInfo, bool) {
	return defs.RTSPMetaInfo{Clients: 2, Dropped: 1, Documents: 40}, true
}

// TestRTSPMetaSeries: output.rtsp's clients and counters are exported; none without it.
func TestRTSPMetaSeries(t *testing.T) {
	body := scrape(t, rtspMetaApp{})
	for _, want := range []string{
		`vinfer_rtsp_clients 2`,
		`vinfer_rtsp_events_total{kind="dropped"} 1`,
		`vinfer_rtsp_events_total{kind="refused"} 0`,
		`vinfer_rtsp_events_total{kind="documents"} 40`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("missing %s", want)
		}
	}
	if strings.Contains(scrape(t, twoGPUs{}), "vinfer_rtsp_") {
		t.Error("rtsp series without output.rtsp")
	}
}
