package e2e_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/vinfer/vinfer/app"
	"github.com/vinfer/vinfer/codec"
	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/frame"
	"github.com/vinfer/vinfer/internal/apptest"
	"github.com/vinfer/vinfer/media"
	"github.com/vinfer/vinfer/sink"
	"github.com/vinfer/vinfer/source/file"
)

// tenthActiveClip makes a 60 s camera that is active 10 % of the time: 54 s of the sample's
// first picture (an empty room, still) then 6 s of a person walking in (the sample from 4 s),
// 768×432, 10 fps, 1 s GOPs with B-frames.
func tenthActiveClip(b *testing.B) string {
	b.Helper()
	if _, err := exec.LookPath("ffmpeg"); err != nil {
		b.Skip("ffmpeg not installed (scripts/setup.sh installs it)")
	}
	dst := filepath.Join(b.TempDir(), "tenth.mp4")
	src := filepath.Join(assets(b), "videos", "one-by-one-person-detection.mp4")
	out, err := exec.Command("ffmpeg", "-v", "error", "-nostdin", "-ss", "4", "-t", "6", "-i", src,
		"-vf", "tpad=start_duration=54:start_mode=clone", "-an", "-c:v", "libx264", "-preset", "veryfast",
		"-g", "10", "-bf", "2", "-pix_fmt", "yuv420p", dst).CombinedOutput()
	if err != nil {
		b.Fatalf("ffmpeg: %v\n%s", err, out)
	}
	return dst
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

type activityRun struct {
	cpu                   time.Duration // process CPU time (user + system) from the stream's start to its end
	decoded, inferred     int64
	events                int
	wakes, burst, burstNS int64
}

// runActivity runs clip once, as fast as it decodes, with inference on one intra-op thread
// (the model loaded before the clock starts).
func runActivity(b *testing.B, clip string, act *config.Activity) activityRun {
	rec := &eventSink{}
	cfg := &config.Config{Models: []config.Model{{Name: "m", Path: filepath.Join(assets(b), "models/yolox_nano_416.onnx"), IntraOpThreads: 1}}}
	a := apptest.MustApp(b, cfg, app.Options{Sinks: []sink.Sink{rec}})
	if err := a.Registry.Preload(false); err != nil {
		a.Stop()
		b.Fatal(err)
	}
	t0 := cpuTime()
	if err := a.AddStream(config.Stream{ID: "cam", Source: clip, Model: "m", Config: sampleScene, Activity: act}); err != nil {
		a.Stop()
		b.Fatal(err)
	}
	a.Pipeline.Wait()
	r := activityRun{cpu: cpuTime() - t0}
	st, _ := a.Stream("cam")
	if err := a.Stop(); err != nil {
		b.Fatal(err)
	}
	r.decoded, r.inferred, r.events = st.Counters.Decoded, st.Counters.Inferred, len(rec.events)
	if g := st.Activity; g != nil {
		r.wakes, r.burst, r.burstNS = g.Wakes, g.BurstUnits, g.BurstNanos
	}
	return r
}

// BenchmarkActivityCPU: how many cameras active 10 % of the time one CPU core serves in real
// time with every frame analysed (full), motion-gated (gate) and with idle key-frame-only
// decoding (idle): a 60 s 768×432 10 fps camera (tenthActiveClip) runs through the whole
// pipeline as fast as it decodes, the three modes alternately ($VINFER_BENCH_ROUNDS rounds,
// default 3), and the process CPU time (user + system) per second of video gives
// cameras/core = 1 / (CPU seconds per video second). Reported: each mode's median
// cameras/core, the gated and idle ratios to full, frames decoded and inferred per run, events
// (the same in the three modes: nothing missed), and the idle mode's wake: access units
// decoded in its burst and the burst's decode time.
//
//	nice go test -run XXX -bench ActivityCPU -benchtime 1x ./e2e/pipeline/
func BenchmarkActivityCPU(b *testing.B) {
	clip := tenthActiveClip(b)
	const video = 60.0 // seconds
	modes := []struct {
		name string
		act  *config.Activity
	}{
		{"full", nil},
		{"gate", &config.Activity{Mode: config.ActivityGate}},
		{"idle", &config.Activity{Mode: config.ActivityIdle}},
	}
	rounds := benchInts("VINFER_BENCH_ROUNDS", []int{3}, 1)[0]
	perCore := map[string][]float64{}
	last := map[string]activityRun{}
	for i := 0; i < b.N*rounds; i++ {
		for _, m := range modes {
			r := runActivity(b, clip, m.act)
			perCore[m.name] = append(perCore[m.name], video/r.cpu.Seconds())
			last[m.name] = r
			b.Logf("round %d %s: cpu %.2fs, %.1f cameras/core, decoded %d, inferred %d, events %d, wakes %d, burst %d units in %.1f ms",
				i, m.name, r.cpu.Seconds(), video/r.cpu.Seconds(), r.decoded, r.inferred, r.events, r.wakes, r.burst, float64(r.burstNS)/1e6)
		}
	}
	full, gate, idle := median(perCore["full"]), median(perCore["gate"]), median(perCore["idle"])
	b.ReportMetric(full, "full-cams/core")
	b.ReportMetric(gate, "gate-cams/core")
	b.ReportMetric(idle, "idle-cams/core")
	b.ReportMetric(gate/full, "gate-ratio")
	b.ReportMetric(idle/full, "idle-ratio")
	for _, m := range modes {
		r := last[m.name]
		b.ReportMetric(float64(r.decoded), m.name+"-decoded")
		b.ReportMetric(float64(r.inferred), m.name+"-inferred")
		b.ReportMetric(float64(r.events), m.name+"-events")
	}
	if r := last["idle"]; r.wakes > 0 {
		b.ReportMetric(float64(r.burst)/float64(r.wakes), "burst-units/wake")
		b.ReportMetric(float64(r.burstNS)/1e6/float64(r.wakes), "burst-ms/wake")
	}
}

// BenchmarkWakeBurst is the decoding part of a wake: an idle stream's decoder has just decoded a
// key frame alone and been drained (the probe); the wake decodes the GOP held since that key
// frame (the sample's first GOP: 10 access units of 768×432 H.264 with B-frames) and drains.
// Reported per burst (ns/op) and per access unit; the frames are released at once (no motion
// check, no inference).
//
//	nice go test -run XXX -bench WakeBurst -count 5 ./e2e/pipeline/
func BenchmarkWakeBurst(b *testing.B) {
	src := &file.Source{Path: filepath.Join(assets(b), "videos", "one-by-one-person-detection.mp4")}
	if err := src.Init(); err != nil {
		b.Fatal(err)
	}
	defer src.Close()
	ctx := context.Background()
	var gop []media.AccessUnit
	for {
		au, err := src.Read(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if au.Key && len(gop) > 0 {
			break
		}
		c := *au
		c.Data = append([]byte(nil), au.Data...)
		gop = append(gop, c)
	}
	d := &codec.Decoder{Codec: src.Info().Codec}
	if err := d.Init(); err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	frames := 0
	emit := func(f *frame.Frame) error { frames++; f.Release(); return nil }
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		d.Decode(ctx, &gop[0], emit) // the probe: the key frame alone, drained
		d.Flush(ctx, emit)
		frames = 0
		b.StartTimer()
		for j := range gop {
			if err := d.Decode(ctx, &gop[j], emit); err != nil {
				b.Fatal(err)
			}
		}
		if err := d.Flush(ctx, emit); err != nil {
			b.Fatal(err)
		}
		if frames != len(gop) {
			b.Fatalf("burst of %d access units gave %d frames", len(gop), frames)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(gop))/1e6, "ms/unit")
	b.ReportMetric(float64(len(gop)), "units/burst")
}
