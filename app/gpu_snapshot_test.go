package app_test

import (
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/vinfer/vinfer/app"
	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/frame"
	"github.com/vinfer/vinfer/internal/apptest"
	"github.com/vinfer/vinfer/internal/testutil"
)

// TestGPUSnapshotFrame: the latest frame an nvdec stream keeps for snapshots is in GPU memory
// and frame.ToHost copies it to the host on demand (what the web view's snapshot does): an NV12
// 1920x1080 picture with the frame's index, with picture content, and no frame leaks.
func TestGPUSnapshotFrame(t *testing.T) {
	needGPU(t)
	clip, dyn := gpuTestdata(t)
	frame.SetDebug(true)
	t.Cleanup(func() { frame.SetDebug(false) })
	logs := &testutil.LogBuffer{}
	a := apptest.MustApp(t, &config.Config{Models: gpuModels(dyn)}, app.Options{KeepLatest: true,
		Log: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))})
	if err := a.AddStream(config.Stream{ID: "gpu", Source: clip, Model: "gpu", Decoder: config.DecoderNVDEC, Loop: true}); err != nil {
		a.Stop()
		t.Fatal(err)
	}
	var f *frame.Frame
	testutil.Eventually(t, 60*time.Second, "a decoded frame kept for snapshots", func() bool {
		f = a.LatestFrame("gpu")
		return f != nil
	})
	if !f.OnDevice() {
		t.Errorf("the nvdec stream's latest frame is in host memory")
	}
	h, err := frame.ToHost(f)
	index := f.Index
	f.Release()
	if err != nil {
		a.Stop()
		t.Fatal(err)
	}
	w, ht := h.Width, h.Height
	lo, hi := byte(255), byte(0)
	for _, v := range h.Planes[0] {
		lo, hi = min(lo, v), max(hi, v)
	}
	desc := fmt.Sprintf("%s %dx%d index %d (frame %d), planes %d/%d bytes, luma %d…%d", h.Format, w, ht, h.Index, index,
		len(h.Planes[0]), len(h.Planes[1]), lo, hi)
	ok := !h.OnDevice() && h.Format == frame.FormatNV12 && w == 1920 && ht == 1080 && h.Index == index &&
		len(h.Planes[0]) == w*ht && len(h.Planes[1]) == w*ht/2 && hi-lo > 64
	h.Release()
	if err := a.Stop(); err != nil {
		t.Error(err)
	}
	if !ok {
		t.Fatalf("host copy: %s", desc)
	}
	testutil.CheckNoFrameLeaks(t, logs)
}
