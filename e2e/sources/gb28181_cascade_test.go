package sources_test

import (
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vinfer/vinfer/analytics"
	"github.com/vinfer/vinfer/app"
	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/gb28181/upsim"
	"github.com/vinfer/vinfer/internal/apptest"
	"github.com/vinfer/vinfer/internal/sourcetest"
	"github.com/vinfer/vinfer/internal/testutil"
	"github.com/vinfer/vinfer/sink"
	"github.com/vinfer/vinfer/source/gb28181/ps"
)

// eventTypes counts the events of each type (a sink).
type eventTypes struct {
	mu sync.Mutex
	n  map[string]int
}

func (e *eventTypes) Write(r *sink.Result) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.n == nil {
		e.n = map[string]int{}
	}
	for _, ev := range r.Events {
		e.n[ev.Type.String()]++
	}
	e.n["results"]++
	return nil
}

func (e *eventTypes) counts() map[string]int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return maps.Clone(e.n)
}

// TestGB28181Cascade runs the app as a lower platform of an upper platform written from raw
// SIP text (upsim; over UDP, and over TCP with TCP media): vinfer registers with its
// password, the upper platform's catalog shows the one channel configured for it, its INVITE
// of that channel brings the stream's own video as PS (vinfer's demuxer and FFmpeg decode
// it), and the run of one-by-one-person-detection.mp4 with a line and a zone gives Alarm
// MESSAGEs of the channel: tripwire (5), intrusion (6) and loitering (8).
func TestGB28181Cascade(t *testing.T) {
	for _, tr := range []string{"UDP", "TCP"} {
		t.Run(tr, func(t *testing.T) { testCascade(t, tr) })
	}
}

func testCascade(t *testing.T, transport string) {
	const (
		upperID = "34020000002000000001"
		lowerID = "34020000002000000078"
		channel = "34020000001320000021"
		pass    = "cascade-pass"
	)
	up := upsim.New(t, transport, upperID, pass)
	cfg := &config.Config{
		Models: []config.Model{{Name: "yolox", Path: sourcetest.Asset(t, "models/yolox_nano_416.onnx")}},
		GB28181: &config.GB28181{ID: lowerID, Listen: "127.0.0.1:0", Upstream: []config.GB28181Upstream{{ServerID: upperID,
			Address: up.Addr(), Transport: strings.ToLower(transport), Password: pass, Local: "127.0.0.1:0", Keepalive: config.Duration(time.Second),
			Channels: []config.GB28181UpChannel{{ID: channel, Stream: "office", Name: "办公室"}}}}},
	}
	logs := &testutil.LogBuffer{}
	evs := &eventTypes{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("events by type: %v", evs.counts())
		}
	})
	a := apptest.MustApp(t, cfg, app.Options{Sinks: []sink.Sink{evs}, Log: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))})
	t.Cleanup(func() {
		a.Stop()
		if t.Failed() {
			t.Log(logs)
		}
	})
	testutil.Eventually(t, 30*time.Second, "vinfer registered with the upper platform", func() bool { return up.Lower() == lowerID })

	// People walk in, sit at the table and leave through the exit (e2e/pipeline's scene).
	scene := analytics.Config{
		Zones: []analytics.Zone{{Name: "table", Polygon: []analytics.Point{{380, 350}, {570, 350}, {570, 432}, {380, 432}},
			Classes: []string{"person"}, Inertia: 3, Loiter: analytics.Duration(2 * time.Second)}},
		Lines: []analytics.Line{{Name: "exit", Points: []analytics.Point{{620, 300}, {620, 432}}, Classes: []string{"person"}}},
	}
	if err := a.AddStream(config.Stream{ID: "office", Source: sourcetest.Asset(t, "videos/one-by-one-person-detection.mp4"), Model: "yolox",
		Interval: 2, Loop: true, Config: scene}); err != nil {
		t.Fatal(err)
	}

	_, sn := up.Query("Catalog", lowerID)
	testutil.Eventually(t, 30*time.Second, "the catalog: the one channel, on", func() bool {
		ms := up.Messages(func(m *upsim.Msg) bool { return m.Field("CmdType") == "Catalog" && m.Field("SN") == sn })
		return len(ms) == 1 && strings.Count(string(ms[0].Body), "<Item>") == 1 && ms[0].Field("SumNum") == "1" &&
			strings.Contains(string(ms[0].Body), "<DeviceID>"+channel+"</DeviceID>") && strings.Contains(string(ms[0].Body), "<Status>ON</Status>")
	})

	rx := upsim.NewReceiver(t, map[string]string{"UDP": "udp", "TCP": "tcp-passive"}[transport])
	m, callID := up.Invite(channel, rx, "0100000009")
	if m.Status() != 200 {
		t.Fatalf("INVITE: %s", m.Start)
	}
	frames := 0
	testutil.Eventually(t, 60*time.Second, "50 frames of the stream's video as PS", func() bool {
		frames = 0
		d := ps.Demuxer{OnFrame: func(*ps.Frame) { frames++ }}
		d.Write(rx.PS())
		return frames >= 50
	})
	if m := up.Bye(channel, callID, upsim.ToTag(m)); m.Status() != 200 {
		t.Fatalf("BYE: %s", m.Start)
	}
	file := filepath.Join(t.TempDir(), "rx.ps")
	if err := os.WriteFile(file, rx.PS(), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(sourcetest.Tool(t, "ffmpeg"), "-v", "error", "-f", "mpeg", "-i", file, "-f", "framecrc", "-").CombinedOutput()
	if err != nil {
		t.Fatalf("ffmpeg: %v\n%s", err, out)
	}
	if n := strings.Count(string(out), "\n") - strings.Count(string(out), "#"); n < 50 {
		t.Fatalf("FFmpeg decoded %d frames, want ≥ 50:\n%s", n, out)
	}

	var types []string
	testutil.Eventually(t, 120*time.Second, "tripwire, intrusion and loitering alarms", func() bool {
		types = nil
		for _, m := range up.Messages(func(m *upsim.Msg) bool { return m.Field("CmdType") == "Alarm" }) {
			if m.Field("DeviceID") != channel || m.Field("AlarmMethod") != "5" || !strings.Contains(m.Field("AlarmDescription"), "class=person") {
				t.Fatalf("alarm:\n%s", m.Body)
			}
			if ty := m.Field("AlarmType"); !slices.Contains(types, ty) {
				types = append(types, ty)
			}
		}
		slices.Sort(types)
		return slices.Equal(types, []string{"5", "6", "8"})
	})
	t.Logf("demuxer %d frames; alarm types %v", frames, types)
}
