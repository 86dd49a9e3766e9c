package sources_test

import (
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/vinfer/vinfer/app"
	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/internal/apptest"
	"github.com/vinfer/vinfer/internal/sourcetest"
	"github.com/vinfer/vinfer/internal/testutil"
	"github.com/vinfer/vinfer/internal/testutil/gbsim"
	"github.com/vinfer/vinfer/sink"
)

// TestGB28181Platform runs the app as a GB28181 platform with two signalled streams on one
// simulated NVR (gbsim: raw SIP, digest registration, a GBK catalog), one over UDP and one over
// TCP (the camera connects: tcp-passive), beside the clip as a file stream. vinfer INVITEs both
// channels; the simulator sends car-detection.mp4 once from its first frame, as MPEG-PS over RTP,
// in real time; every live result must equal the file's result at the same PTS.
func TestGB28181Platform(t *testing.T) {
	const (
		serverID = "34020000002000000001"
		devID    = "34020000001320000011"
		password = "e2e-pass"
	)
	clip := sourcetest.LoadClip(t, mixedClip)
	clipPath := sourcetest.Asset(t, mixedClip)
	model := sourcetest.Asset(t, "models/yolox_nano_416.onnx")
	first := 43000 + int(time.Now().UnixNano()%8000)
	th := float32(scoreThreshold)
	cfg := &config.Config{
		Models:  []config.Model{{Name: "yolox", Path: model, ScoreThreshold: &th}},
		GB28181: &config.GB28181{ID: serverID, Listen: "127.0.0.1:0", Password: password, MediaPorts: fmt.Sprintf("%d-%d", first, first+10)},
	}
	rec := &resultLog{}
	logs := &logBuffer{}
	a := apptest.MustApp(t, cfg, app.Options{Sinks: []sink.Sink{rec},
		Log: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	t.Cleanup(func() { a.Stop() })
	info, ok := a.GB28181()
	if !ok {
		t.Fatal("no GB28181 platform")
	}
	d := gbsim.New(t, serverID, info.Listen, "UDP", devID, password)
	d.Clip, d.Speed = clip, 1
	if m := d.Register(password, 3600); m.Status() != 200 {
		t.Fatalf("register: %s", m.Start)
	}
	stopKeepalives := make(chan struct{})
	defer close(stopKeepalives)
	d.Keepalives(time.Second, stopKeepalives)
	live := map[string]string{
		"gb-udp": fmt.Sprintf("gb28181://%s/%s", devID, d.Channels[0]),
		"gb-tcp": fmt.Sprintf("gb28181://%s/%s?transport=tcp-passive", devID, d.Channels[1]),
	}
	for _, s := range []config.Stream{{ID: "file", Source: clipPath, Model: "yolox"},
		{ID: "gb-udp", Source: live["gb-udp"], Model: "yolox"}, {ID: "gb-tcp", Source: live["gb-tcp"], Model: "yolox"}} {
		if err := a.AddStream(s); err != nil {
			t.Fatal(err)
		}
	}

	// Both sessions send the whole clip once (30 s at 12.5 fps); then the live streams go, before
	// a media timeout could INVITE again (which would start the clip over on the same timeline).
	n := int64(len(clip.Samples))
	testutil.Eventually(t, 120*time.Second, "both channels INVITEd and the clip sent on each", func() bool {
		return d.Sent.Load() >= 2*n
	})
	if got := d.Invites.Load(); got != 2 {
		t.Fatalf("%d INVITEs, want one per channel", got)
	}
	for id := range live {
		testutil.Eventually(t, 20*time.Second, id+" decodes the clip and infers or drops every frame", func() bool {
			st, ok := a.Pipeline.Stream(id)
			dec := st.Stats.Decoded.Load()
			return ok && dec >= n-2 && st.Stats.Inferred.Load()+st.Stats.DroppedTotal() >= dec
		})
	}
	for id := range live {
		if err := a.RemoveStream(id); err != nil {
			t.Fatal(err)
		}
	}
	testutil.Eventually(t, 180*time.Second, "the file stream infers the whole clip", func() bool {
		return int64(len(rec.get("file"))) >= n
	})
	testutil.Eventually(t, 10*time.Second, "BYE for both sessions", func() bool { return d.Byes.Load() == 2 })

	file := rec.byPTS("file")
	offset := time.Duration(clip.Samples[0].PTS) * time.Second / 90000
	for id := range live {
		res := rec.get(id)
		compared, dets, bad := 0, 0, 0
		for _, r := range res {
			f, ok := file[r.pts+offset]
			if !ok {
				t.Errorf("%s: frame %d (PTS %v): no file result at that PTS", id, r.frame, r.pts)
				continue
			}
			if f.frame != r.frame {
				t.Errorf("%s: PTS %v is frame %d, the file's frame %d", id, r.pts, r.frame, f.frame)
			}
			if err := sameDetections(f.dets, r.dets); err != nil {
				if bad++; bad <= 5 {
					t.Errorf("%s: frame %d: %v\n  file: %v\n  %s: %v", id, r.frame, err, f.dets, id, r.dets)
				}
			}
			compared++
			dets += len(r.dets)
		}
		if compared < 50 || dets < 10 {
			t.Errorf("%s: only %d results (%d detections) compared with the file's", id, compared, dets)
		}
		t.Logf("%s: %d results compared with the file's (%d detections): %d differ", id, compared, dets, bad)
	}
}
