package metrics_test

import (
	"strings"
	"testing"
)

// rtspAuthApp checks RTSP credentials: two clients came without, three guessed wrong.
type rtspAuthApp struct{ twoGPUs }

func (rtspAuthApp) RTSPAuthFailures() (map[string]uint64, bool) {
	return map[string]uint64{"missing": 2, "wrong": 3, "method": 0}, true
}

// TestRTSPAuthSeries: refused RTSP credentials are exported by reason; no series from an app
// without an RTSP server that checks them.
func TestRTSPAuthSeries(t *testing.T) {
	body := scrape(t, rtspAuthApp{})
	for _, want := range []string{
		`vinfer_rtsp_auth_failures_total{reason="missing"} 2`,
		`vinfer_rtsp_auth_failures_total{reason="wrong"} 3`,
		`vinfer_rtsp_auth_failures_total{reason="method"} 0`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("missing %s", want)
		}
	}
	if strings.Contains(scrape(t, twoGPUs{}), "vinfer_rtsp_auth_failures_total") {
		t.Error("rtsp auth series without an RTSP server")
	}
}
