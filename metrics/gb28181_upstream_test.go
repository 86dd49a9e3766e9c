package metrics_test

import (
	"strings"
	"testing"

	"github.com/vinfer/vinfer/internal/defs"
)

// gbUpApp is an app cascading to one upper platform that refused its password twice.
type gbUpApp struct{ twoGPUs }

func (gbUpApp) GB28181Upstreams() []defs.GB28181Upstream {
	return []defs.GB28181Upstream{{ServerID: "34020000002000000001", Counters: map[string]uint64{"refused": 2, "alarms_sent": 4}}}
}

// TestGB28181UpstreamSeries: an upstream's registration state and counters are exported by
// server ID; no series without upstreams.
func TestGB28181UpstreamSeries(t *testing.T) {
	body := scrape(t, gbUpApp{})
	for _, want := range []string{
		`vinfer_gb28181_upstream_registered{server_id="34020000002000000001"} 0`,
		`vinfer_gb28181_upstream_events_total{kind="refused",server_id="34020000002000000001"} 2`,
		`vinfer_gb28181_upstream_events_total{kind="alarms_sent",server_id="34020000002000000001"} 4`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("missing %s", want)
		}
	}
	if strings.Contains(scrape(t, twoGPUs{}), "vinfer_gb28181_upstream") {
		t.Error("upstream series without upstreams")
	}
}
