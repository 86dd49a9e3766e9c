package metrics_test

import (
	"strings"
	"testing"

	"github.com/vinfer/vinfer/internal/defs"
)

// gbApp is an app running a GB28181 platform with one device online, one offline.
type gbApp struct{ twoGPUs }

func (gbApp) GB28181() (defs.GB28181Info, bool) {
	return defs.GB28181Info{Devices: []defs.GB28181Device{{ID: "a", Online: true}, {ID: "b"}},
		Counters: map[string]uint64{"registers": 3, "nonce_refused": 2, "wrong_source": 5, "tcp_refused": 7}}, true
}

// TestGB28181Series: the platform's counters are exported by kind, its devices by state; no
// series without a platform.
func TestGB28181Series(t *testing.T) {
	body := scrape(t, gbApp{})
	for _, want := range []string{
		`vinfer_gb28181_events_total{kind="nonce_refused"} 2`,
		`vinfer_gb28181_events_total{kind="wrong_source"} 5`,
		`vinfer_gb28181_events_total{kind="tcp_refused"} 7`,
		`vinfer_gb28181_devices{state="online"} 1`,
		`vinfer_gb28181_devices{state="offline"} 1`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("missing %s", want)
		}
	}
	if strings.Contains(scrape(t, twoGPUs{}), "vinfer_gb28181_") {
		t.Error("GB28181 series without a platform")
	}
}
