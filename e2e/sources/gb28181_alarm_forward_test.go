package sources_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/vinfer/vinfer/app"
	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/gb28181/upsim"
	"github.com/vinfer/vinfer/internal/apptest"
	"github.com/vinfer/vinfer/internal/sourcetest"
	"github.com/vinfer/vinfer/internal/testutil"
	"github.com/vinfer/vinfer/internal/testutil/gbsim"
)

// TestGB28181AlarmForwarded: a GB28181 device registered with vinfer sends Alarm
// notifications (raw SIP, GBK, GB/T 28181-2016 §A.2.5.5); the upper platform (upsim) with a
// channel of that device's stream receives each as its own channel's alarm with the device's
// priority, method, type, event type, time and description: by MESSAGE without a
// subscription, by NOTIFY through a subscription whose filter wants the method, and not at
// all (counted alarms_filtered) when the filter does not. An alarm of a channel no upper
// channel carries, and one with a priority out of range, go nowhere (the latter counted
// alarms_dropped).
func TestGB28181AlarmForwarded(t *testing.T) {
	const (
		serverID = "34020000002000000001" // vinfer as the devices' platform and as a lower platform
		upperID  = "34020000002000000002"
		devID    = "34020000001320000031"
		upChan   = "34020000001310000041" // the door stream's channel at the upper platform
		pass     = "cascade-pass"
	)
	up := upsim.New(t, "UDP", upperID, pass)
	cfg := &config.Config{
		Models: []config.Model{{Name: "yolox", Path: sourcetest.Asset(t, "models/yolox_nano_416.onnx")}},
		GB28181: &config.GB28181{ID: serverID, Listen: "127.0.0.1:0", Upstream: []config.GB28181Upstream{{ServerID: upperID,
			Address: up.Addr(), Transport: "udp", Password: pass, Local: "127.0.0.1:0", Keepalive: config.Duration(time.Second),
			Channels: []config.GB28181UpChannel{{ID: upChan, Stream: "door", Name: "门"}}}}},
	}
	a := apptest.MustApp(t, cfg, app.Options{})
	t.Cleanup(func() { a.Stop() })
	testutil.Eventually(t, 30*time.Second, "vinfer registered with the upper platform", func() bool { return up.Lower() == serverID })

	info, _ := a.GB28181()
	d := gbsim.New(t, serverID, info.Listen, "UDP", devID, "")
	d.NoMedia.Store(true)
	if m := d.Register("", 3600); m.Status() != 200 {
		t.Fatalf("register: %s", m.Start)
	}
	for _, s := range []config.Stream{
		{ID: "door", Source: fmt.Sprintf("gb28181://%s/%s", devID, d.Channels[0]), Model: "yolox"},
		{ID: "yard", Source: fmt.Sprintf("gb28181://%s/%s", devID, d.Channels[1]), Model: "yolox"},
	} {
		if err := a.AddStream(s); err != nil {
			t.Fatal(err)
		}
	}
	testutil.Eventually(t, 20*time.Second, "both streams on their channels", func() bool {
		info, _ := a.GB28181()
		var ids []string
		for _, dev := range info.Devices {
			for _, ch := range dev.Channels {
				for _, st := range ch.Streams {
					ids = append(ids, st.ID)
				}
			}
		}
		return slices.Contains(ids, "door") && slices.Contains(ids, "yard")
	})
	counters := func() map[string]uint64 { return a.GB28181Upstreams()[0].Counters }
	alarm := func(channel string, priority, method, typ int, desc string) {
		t.Helper()
		body := fmt.Sprintf("<?xml version=\"1.0\" encoding=\"GB2312\"?>\r\n<Notify>\r\n<CmdType>Alarm</CmdType>\r\n<SN>%d</SN>\r\n<DeviceID>%s</DeviceID>\r\n<AlarmPriority>%d</AlarmPriority>\r\n<AlarmMethod>%d</AlarmMethod>\r\n<AlarmTime>2026-03-04T05:06:07</AlarmTime>\r\n<AlarmDescription>%s</AlarmDescription>\r\n<Info>\r\n<AlarmType>%d</AlarmType>\r\n<AlarmTypeParam>\r\n<EventType>2</EventType>\r\n</AlarmTypeParam>\r\n</Info>\r\n</Notify>\r\n",
			rand.IntN(1e6), channel, priority, method, desc, typ)
		if m := d.Message(body, true); m.Status() != 200 {
			t.Fatalf("alarm for %s: %s", channel, m.Start)
		}
	}
	alarms := func(method string) []*upsim.Msg {
		return up.Messages(func(m *upsim.Msg) bool { return m.Method() == method && m.Field("CmdType") == "Alarm" })
	}

	// no subscription: a MESSAGE on the upper channel, the device's fields kept
	alarm(d.Channels[0], 2, 5, 2, "移动侦测")
	testutil.Eventually(t, 20*time.Second, "the device's alarm at the upper platform", func() bool { return len(alarms("MESSAGE")) == 1 })
	m := alarms("MESSAGE")[0]
	for k, want := range map[string]string{"DeviceID": upChan, "AlarmPriority": "2", "AlarmMethod": "5", "AlarmType": "2",
		"EventType": "2", "AlarmTime": "2026-03-04T05:06:07", "AlarmDescription": "移动侦测"} {
		if got := m.Field(k); got != want {
			t.Fatalf("forwarded alarm's %s = %q, want %q:\n%s", k, got, want, m.Text())
		}
	}

	// a channel no upper channel carries, and a priority out of range: nothing sent
	alarm(d.Channels[1], 1, 5, 2, "yard")
	alarm(d.Channels[0], 9, 5, 2, "bad priority")
	testutil.Eventually(t, 20*time.Second, "the bad alarm counted dropped", func() bool { return counters()["alarms_dropped"] == 1 })

	// a subscription to device alarms (method 2): a video alarm (5) is filtered, a device one
	// (2, type 1: an emergency button) comes by NOTIFY
	sm, sub := up.SubscribeAlarms(serverID, 600, "2", "", "")
	if sm.Status() != 200 {
		t.Fatalf("SUBSCRIBE: %s", sm.Start)
	}
	alarm(d.Channels[0], 1, 5, 2, "video")
	testutil.Eventually(t, 20*time.Second, "the video alarm filtered", func() bool { return counters()["alarms_filtered"] == 1 })
	alarm(d.Channels[0], 1, 2, 1, "紧急按钮")
	testutil.Eventually(t, 20*time.Second, "the device alarm by NOTIFY", func() bool { return len(alarms("NOTIFY")) == 1 })
	n := alarms("NOTIFY")[0]
	if n.Get("Call-ID") != sub || n.Field("DeviceID") != upChan || n.Field("AlarmMethod") != "2" || n.Field("AlarmType") != "1" || n.Field("AlarmDescription") != "紧急按钮" {
		t.Fatalf("NOTIFY:\n%s", n.Text())
	}
	testutil.Eventually(t, 20*time.Second, "two alarms counted sent", func() bool { return counters()["alarms_sent"] == 2 })
	if ms := alarms("MESSAGE"); len(ms) != 1 {
		for _, m := range ms {
			t.Log(m.Text())
		}
		t.Fatalf("%d alarm MESSAGEs, want the first only", len(ms))
	}
}
