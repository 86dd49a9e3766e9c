package codec

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/vinfer/vinfer/internal/testutil"

	"github.com/vinfer/vinfer/cuda"
	"github.com/vinfer/vinfer/frame"
	"github.com/vinfer/vinfer/internal/annexb"
	"github.com/vinfer/vinfer/media"
)

func repoRoot(t testing.TB) string { return testutil.Root(t) }

// clip returns the first access units of the shared car-detection clip (H.264 Baseline, 768x432,
// 377 frames) in Annex-B form, and its first 10 pictures decoded by FFmpeg's software decoder
// as packed NV12. They are made with the ffmpeg CLI, or read from $VINFER_GPU_TESTDATA
// (car-detection.h264, car-detection.nv12; scripts/gpu/testdata.sh makes them) on machines
// without it, such as the GPU machine.
func clip(t testing.TB) (aus []media.AccessUnit, nv12 []byte) {
	var es []byte
	if dir := os.Getenv("VINFER_GPU_TESTDATA"); dir != "" {
		var err error
		if es, err = os.ReadFile(filepath.Join(dir, "car-detection.h264")); err != nil {
			t.Fatal(err)
		}
		if nv12, err = os.ReadFile(filepath.Join(dir, "car-detection.nv12")); err != nil {
			t.Fatal(err)
		}
	} else {
		if _, err := exec.LookPath("ffmpeg"); err != nil {
			t.Skip("needs the ffmpeg CLI or VINFER_GPU_TESTDATA")
		}
		path := filepath.Join(repoRoot(t), "assets", "videos", "car-detection.mp4")
		var err error
		es, err = exec.Command("ffmpeg", "-v", "error", "-i", path, "-map", "0:v", "-c", "copy", "-bsf:v", "h264_mp4toannexb", "-f", "h264", "-").Output()
		if err != nil {
			t.Fatalf("ffmpeg: %v", err)
		}
		if nv12, err = exec.Command("ffmpeg", "-v", "error", "-i", path, "-frames:v", "10", "-pix_fmt", "nv12", "-f", "rawvideo", "-").Output(); err != nil {
			t.Fatalf("ffmpeg: %v", err)
		}
	}
	units, key := annexb.SplitH264(es)
	for i, u := range units {
		pts := time.Duration(i) * time.Second * 2 / 25
		aus = append(aus, media.AccessUnit{Codec: media.CodecH264, Data: u, PTS: pts, DTS: pts, Key: key[i]})
	}
	return aus, nv12
}

func device(t testing.TB) *cuda.Device {
	d, err := cuda.Open(0)
	if errors.Is(err, cuda.ErrNoDriver) || errors.Is(err, cuda.ErrNoDevice) {
		t.Skipf("no CUDA device: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// TestNVDECMatchesSoftware decodes a real clip with NVDEC and checks that every picture equals
// FFmpeg's software decode (H.264 decoding is bit-exact), downloading the NV12 planes.
func TestNVDECMatchesSoftware(t *testing.T) {
	aus, want := clip(t)
	if len(aus) != 377 {
		t.Fatalf("%d access units, want 377", len(aus))
	}
	d := device(t)
	s, err := d.NewStream()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Destroy()
	const w, h = 768, 432
	host, err := d.AllocHost(w * h * 3 / 2)
	if err != nil {
		t.Fatal(err)
	}
	defer host.Free()
	var frames int
	err = d.RunLocked(func() error {
		dec := &NVDEC{Device: d, Stream: s, Codec: media.CodecH264, Frames: 2}
		if err := dec.Init(); err != nil {
			return err
		}
		defer func() {
			if err := dec.Close(); err != nil {
				t.Error(err)
			}
		}()
		emit := func(f *frame.Frame) error {
			defer f.Release()
			if f.Width != w || f.Height != h || !f.OnDevice() {
				t.Fatalf("frame %dx%d on device %v", f.Width, f.Height, f.OnDevice())
			}
			if want != nil && frames < 10 {
				if err := downloadNV12(s, host, f); err != nil {
					t.Fatal(err)
				}
				ref := want[frames*w*h*3/2 : (frames+1)*w*h*3/2]
				if !bytes.Equal(host.Bytes[:len(ref)], ref) {
					t.Errorf("frame %d differs from the software decode", frames)
				}
			}
			frames++
			return nil
		}
		for i := range aus {
			if err := dec.Decode(context.Background(), &aus[i], emit); err != nil {
				return err
			}
		}
		return dec.Flush(context.Background(), emit)
	})
	if err != nil {
		t.Fatal(err)
	}
	if frames != 377 {
		t.Errorf("decoded %d frames, want 377", frames)
	}
}

// downloadNV12 copies a device NV12 frame into host, tightly packed.
func downloadNV12(s *cuda.Stream, host *cuda.HostBuffer, f *frame.Frame) error {
	w, h := f.Width, f.Height
	if err := s.CopyDtoH2D(host, 0, w, cuda.Ptr(f.DevicePlanes[0]), f.Strides[0], w, h); err != nil {
		return err
	}
	if err := s.CopyDtoH2D(host, w*h, w, cuda.Ptr(f.DevicePlanes[1]), f.Strides[1], w, h/2); err != nil {
		return err
	}
	return s.Synchronize()
}

// TestNVDECDiscard decodes the clip with one access unit marked Discard (an RTP timestamp
// outlier, an MP4 edit-list pre-roll): its picture is decoded for reference and not output, so
// every other picture comes out, with its own PTS.
func TestNVDECDiscard(t *testing.T) {
	aus, _ := clip(t)
	d := device(t)
	s, err := d.NewStream()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Destroy()
	const bad = 40
	aus[bad].Discard = true
	var pts []time.Duration
	err = d.RunLocked(func() error {
		dec := &NVDEC{Device: d, Stream: s, Codec: media.CodecH264, Frames: 2}
		if err := dec.Init(); err != nil {
			return err
		}
		defer dec.Close()
		emit := func(f *frame.Frame) error { pts = append(pts, f.PTS); f.Release(); return nil }
		for i := range aus {
			if err := dec.Decode(context.Background(), &aus[i], emit); err != nil {
				return err
			}
		}
		return dec.Flush(context.Background(), emit)
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(pts) != len(aus)-1 {
		t.Fatalf("%d frames of %d access units, want all but the discarded one", len(pts), len(aus))
	}
	for _, p := range pts {
		if p == aus[bad].PTS {
			t.Fatalf("the discarded access unit's picture (PTS %v) was output", p)
		}
	}
}
