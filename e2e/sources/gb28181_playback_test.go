package sources_test

import (
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vinfer/vinfer/app"
	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/gb28181/upsim"
	"github.com/vinfer/vinfer/internal/apptest"
	"github.com/vinfer/vinfer/internal/sourcetest"
	"github.com/vinfer/vinfer/internal/testutil"
)

// TestGB28181CascadePlayback runs the app with a record section and a recorded stream as a
// lower platform of upsim: the upper platform's RecordInfo lists the recorded span, its
// playback INVITE of a range of it brings that video as PS that FFmpeg decodes, and
// MediaStatus 121 ends it.
func TestGB28181CascadePlayback(t *testing.T) {
	const (
		upperID = "34020000002000000001"
		lowerID = "34020000002000000079"
		channel = "34020000001320000022"
		pass    = "cascade-pass"
	)
	up := upsim.New(t, "UDP", upperID, pass)
	cfg := &config.Config{
		Models: []config.Model{{Name: "yolox", Path: sourcetest.Asset(t, "models/yolox_nano_416.onnx")}},
		Record: &config.Record{Dir: filepath.Join(t.TempDir(), "rec"), Segment: config.Duration(2 * time.Second)},
		GB28181: &config.GB28181{ID: lowerID, Listen: "127.0.0.1:0", Upstream: []config.GB28181Upstream{{ServerID: upperID,
			Address: up.Addr(), Transport: "udp", Password: pass, Local: "127.0.0.1:0", Keepalive: config.Duration(time.Second),
			Channels: []config.GB28181UpChannel{{ID: channel, Stream: "office", Name: "办公室"}}}}},
	}
	logs := &testutil.LogBuffer{}
	a := apptest.MustApp(t, cfg, app.Options{Log: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))})
	t.Cleanup(func() {
		a.Stop()
		if t.Failed() {
			t.Log(logs)
		}
	})
	testutil.Eventually(t, 30*time.Second, "vinfer registered with the upper platform", func() bool { return up.Lower() == lowerID })
	if err := a.AddStream(config.Stream{ID: "office", Source: sourcetest.Asset(t, "videos/one-by-one-person-detection.mp4"), Model: "yolox",
		Interval: 5, Loop: true, Record: true}); err != nil {
		t.Fatal(err)
	}

	// RecordInfo of the last hour, asked until a closed segment of 4 s or more shows
	const layout = "2006-01-02T15:04:05"
	var start, end time.Time
	sn := "" // the query waiting for its response
	testutil.Eventually(t, 60*time.Second, "a recorded span of 4 s in RecordInfo", func() bool {
		if sn == "" {
			_, sn = up.RecordInfo(channel, time.Now().Add(-time.Hour).Format(layout), time.Now().Add(time.Hour).Format(layout), "all")
		}
		ms := up.Messages(func(m *upsim.Msg) bool { return m.Field("CmdType") == "RecordInfo" && m.Field("SN") == sn })
		if len(ms) == 0 {
			return false
		}
		sn = "" // answered: ask again next time
		if ms[0].Field("SumNum") != "1" {
			return false
		}
		start, _ = time.ParseInLocation(layout, ms[0].Field("StartTime"), time.Local)
		end, _ = time.ParseInLocation(layout, ms[0].Field("EndTime"), time.Local)
		return end.Sub(start) >= 4*time.Second
	})

	rx := upsim.NewReceiver(t, "udp")
	from := start.Add(time.Second)
	m, callID := up.Playback(channel, rx, "1200000001", from.Unix(), from.Unix()+2, 0)
	if m.Status() != 200 {
		t.Fatalf("playback INVITE: %s", m.Start)
	}
	testutil.Eventually(t, 60*time.Second, "MediaStatus 121", func() bool {
		return len(up.Messages(func(m *upsim.Msg) bool {
			return m.Field("CmdType") == "MediaStatus" && m.Field("NotifyType") == "121" && m.Get("Call-ID") == callID
		})) == 1
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
	// 2 s of a 10 fps clip with a key frame a second: its two or three GOPs
	if n := strings.Count(string(out), "\n") - strings.Count(string(out), "#"); n < 20 {
		t.Fatalf("FFmpeg decoded %d frames of the playback, want ≥ 20:\n%s", n, out)
	}
	if m, _ := up.Playback(channel, upsim.NewReceiver(t, "udp"), "1200000002", end.Unix()+3600, end.Unix()+3700, 0); m.Status() != 404 {
		t.Fatalf("playback of a range not recorded: %s, want 404", m.Start)
	}
}
