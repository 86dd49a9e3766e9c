package sources_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/vinfer/vinfer/app"
	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/internal/apptest"
	"github.com/vinfer/vinfer/internal/defs"
	"github.com/vinfer/vinfer/internal/sourcetest"
	"github.com/vinfer/vinfer/internal/testutil"
	"github.com/vinfer/vinfer/internal/testutil/gbsim"
)

// TestGB28181AlarmWakes: a device's Alarm notification (raw SIP MESSAGE, MANSCDP Notify in
// GBK, GB/T 28181-2016 §A.2.5.5) wakes the activity-gated stream of its channel as POST
// /api/streams/{id}/wake does; an alarm naming the device wakes all its gated streams. Each is
// counted (alarms, alarm_wakes; alarm_not_woken for a stream without gating, alarm_unmatched
// for a channel no stream plays), shown on the channel's stream, and answered with an Alarm
// Response. A device that did not register is refused (403) and wakes nothing.
func TestGB28181AlarmWakes(t *testing.T) {
	const (
		serverID = "34020000002000000001"
		devID    = "34020000001320000021"
	)
	model := sourcetest.Asset(t, "models/yolox_nano_416.onnx")
	cfg := &config.Config{
		Models:  []config.Model{{Name: "yolox", Path: model}},
		GB28181: &config.GB28181{ID: serverID, Listen: "127.0.0.1:0"},
	}
	a := apptest.MustApp(t, cfg, app.Options{})
	t.Cleanup(func() { a.Stop() })
	info, _ := a.GB28181()
	d := gbsim.New(t, serverID, info.Listen, "UDP", devID, "")
	d.NoMedia.Store(true)
	if m := d.Register("", 3600); m.Status() != 200 {
		t.Fatalf("register: %s", m.Start)
	}
	for _, s := range []config.Stream{
		{ID: "door", Source: fmt.Sprintf("gb28181://%s/%s", devID, d.Channels[0]), Model: "yolox",
			Activity: &config.Activity{Mode: config.ActivityIdle}},
		{ID: "yard", Source: fmt.Sprintf("gb28181://%s/%s", devID, d.Channels[1]), Model: "yolox"},
	} {
		if err := a.AddStream(s); err != nil {
			t.Fatal(err)
		}
	}
	requests := func(id string) int64 {
		st, ok := a.Stream(id)
		if !ok || st.Activity == nil {
			return -1
		}
		return st.Activity.Requests
	}
	counters := func() map[string]uint64 { info, _ := a.GB28181(); return info.Counters }
	alarm := func(channel string) {
		t.Helper()
		if m := d.Alarm(channel, "移动侦测"); m.Status() != 200 {
			t.Fatalf("alarm for %s: %s", channel, m.Start)
		}
	}

	alarm(d.Channels[0])
	testutil.Eventually(t, 20*time.Second, "the door stream asked to wake, the alarm answered", func() bool {
		return requests("door") == 1 && d.AlarmAnswers.Load() == 1
	})
	if c := counters(); c["alarms"] != 1 || c["alarm_wakes"] != 1 || c["alarm_not_woken"] != 0 || c["alarm_unmatched"] != 0 {
		t.Fatalf("counters %v", c)
	}
	var door defs.GB28181Stream
	info, _ = a.GB28181()
	for _, dev := range info.Devices {
		for _, ch := range dev.Channels {
			for _, st := range ch.Streams {
				if st.ID == "door" {
					door = st
				}
			}
		}
	}
	if door.Alarms != 1 || !strings.Contains(door.LastAlarm, "priority 1 method 5: 移动侦测") {
		t.Fatalf("door's session shows %d alarms, last %q", door.Alarms, door.LastAlarm)
	}

	alarm(d.Channels[1]) // a stream without gating: counted, not woken
	alarm(d.Channels[3]) // no stream on the channel
	alarm(devID)         // the whole device: every gated stream of it
	testutil.Eventually(t, 20*time.Second, "three more alarms counted and answered", func() bool {
		c := counters()
		return c["alarms"] == 4 && d.AlarmAnswers.Load() == 4
	})
	if c := counters(); c["alarm_wakes"] != 2 || c["alarm_not_woken"] != 2 || c["alarm_unmatched"] != 1 || requests("door") != 2 || requests("yard") != -1 {
		t.Fatalf("counters %v, door's wake requests %d, yard's %d", c, requests("door"), requests("yard"))
	}

	// a device that did not register cannot wake anything, even naming the door's channel
	stranger := gbsim.New(t, serverID, info.Listen, "UDP", "34020000001320000099", "")
	if m := stranger.Alarm(d.Channels[0], "forged"); m.Status() != 403 {
		t.Fatalf("alarm from an unregistered device: %s, want 403", m.Start)
	}
	if c := counters(); c["alarms"] != 4 || requests("door") != 2 {
		t.Fatalf("after a forged alarm: counters %v, door's wake requests %d", c, requests("door"))
	}
}
