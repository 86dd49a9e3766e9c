package e2e_test

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/vinfer/vinfer/app"
	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/internal/apptest"
	"github.com/vinfer/vinfer/internal/testutil"
)

// BenchmarkIdleMemory: what 24 realtime cameras watching a still 768×432 scene hold once
// settled, idle without decoders of their own (mode idle, the shared pool) against gated ones
// (mode gate: each decodes every frame on its own FFmpeg decoder): decoders per camera and the
// gate's own host memory per camera (GOP buffer). (Process RSS is not reported: in one process
// the decoders closed as idle cameras park stay resident in the C allocator, and the second
// mode runs in memory the first one grew; scripts/gpu/check30.py measures RSS per camera in a
// process of its own.)
func BenchmarkIdleMemory(b *testing.B) {
	clip := stillClip(b)
	const n = 24
	for _, mode := range []config.ActivityMode{config.ActivityIdle, config.ActivityGate} {
		b.Run(mode.String(), func(b *testing.B) {
			cfg := &config.Config{Models: []config.Model{{Name: "m", Path: filepath.Join(testutil.Asset(b, "models/yolox_nano_416.onnx"))}},
				Sources: config.Sources{MaxStreams: 64}}
			a := apptest.MustApp(b, cfg, app.Options{})
			defer a.Stop()
			for i := range n {
				s := config.Stream{ID: fmt.Sprintf("cam%02d", i), Source: clip, Model: "m", Loop: true, Realtime: true,
					Activity: &config.Activity{Mode: mode, IdleAfter: config.Duration(time.Second)}}
				if err := a.AddStream(s); err != nil {
					b.Fatal(err)
				}
			}
			settled := func() bool {
				for i := range n {
					st, ok := a.Stream(fmt.Sprintf("cam%02d", i))
					if !ok || st.Activity == nil || st.Counters.Decoded == 0 || mode == config.ActivityIdle && !st.Activity.Parked {
						return false
					}
				}
				return true
			}
			for end := time.Now().Add(60 * time.Second); !settled(); time.Sleep(100 * time.Millisecond) {
				if time.Now().After(end) {
					b.Fatal("cameras did not settle")
				}
			}
			time.Sleep(3 * time.Second) // benchmark only: let pools and buffers reach their size
			held := 0
			for i := range n {
				st, _ := a.Stream(fmt.Sprintf("cam%02d", i))
				held += st.Activity.HeldBytes
			}
			b.ReportMetric(float64(held)/n/1024, "gate-KiB/camera")
			decoders := n // mode gate: one each
			if mode == config.ActivityIdle {
				p := a.DecoderPools()
				decoders = p.Probers + p.Warm + p.Taken
			}
			b.ReportMetric(float64(decoders)/n, "decoders/camera")
		})
	}
}
