package gpu

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/vinfer/vinfer/cuda"
	"github.com/vinfer/vinfer/frame"
	"github.com/vinfer/vinfer/preprocess"
)

func openDevice(t testing.TB) *cuda.Device {
	t.Helper()
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

// devicePicture uploads a host NV12 picture to device memory laid out as NVDEC does (Y then UV
// in one allocation, same pitch).
type devicePicture struct {
	buf   *cuda.Buffer
	frame frame.Frame
}

func upload(t testing.TB, d *cuda.Device, s *cuda.Stream, p nv12Picture) *devicePicture {
	t.Helper()
	pitch := max(p.yPitch, p.uvPitch)
	rowsUV := (p.h + 1) / 2
	size := pitch * (p.h + rowsUV)
	h, err := d.AllocHost(size)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Free()
	for r := range p.h {
		copy(h.Bytes[r*pitch:], p.y[r*p.yPitch:r*p.yPitch+p.w])
	}
	for r := range rowsUV {
		copy(h.Bytes[(p.h+r)*pitch:], p.uv[r*p.uvPitch:r*p.uvPitch+p.w+p.w%2])
	}
	buf, err := d.Alloc(size)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { buf.Free(nil) })
	if err := s.CopyHtoD(buf.Ptr, h, size); err != nil {
		t.Fatal(err)
	}
	if err := s.Synchronize(); err != nil {
		t.Fatal(err)
	}
	return &devicePicture{buf: buf, frame: frame.Frame{Format: frame.FormatNV12, Width: p.w, Height: p.h,
		FullRange: p.full, Device: d.Ordinal(), Strides: [3]int{pitch, pitch},
		DevicePlanes: [3]uintptr{uintptr(buf.Ptr), uintptr(buf.Ptr.Add(pitch * p.h))}}}
}

// TestKernelMatchesCPU runs the kernel on real and random frames and compares the downloaded
// tensor slot with preprocess.CPU: float32 must be identical, float16 within half's rounding.
func TestKernelMatchesCPU(t *testing.T) {
	d := openDevice(t)
	s, err := d.NewStream()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Destroy()
	r := rand.New(rand.NewPCG(3, 4))
	pics := videoNV12(t, "car-detection.mp4", 2, 768, 432)
	pics = append(pics, randomNV12(r, 1920, 1080, false), randomNV12(r, 641, 359, true), randomNV12(r, 3, 5, false))
	err = d.RunLocked(func() error {
		for name, spec := range testSpecs {
			for _, half := range []bool{false, true} {
				g := &Preprocessor{Device: d, Spec: spec, Half: half}
				if err := g.Init(); err != nil {
					return err
				}
				const slots = 3
				out, err := d.Alloc(slots * g.SlotBytes())
				if err != nil {
					return err
				}
				host, err := d.AllocHost(g.SlotBytes())
				if err != nil {
					return err
				}
				for _, pic := range pics {
					if _, err := plan(spec, pic.w, pic.h); err != nil {
						continue
					}
					cpu, _ := preprocess.NewCPU(spec)
					want := make([]float32, 3*spec.Width*spec.Height)
					if _, err := cpu.Run(pic.frame(), want); err != nil {
						return err
					}
					dp := upload(t, d, s, pic)
					s.Fill32(out.Ptr, 0x7fc00000, slots*g.SlotBytes()/4) // NaN (f32), NaN pairs (f16)
					if _, err := g.Run(s, &dp.frame, out.Ptr, 1); err != nil {
						return err
					}
					if err := s.CopyDtoH(host, out.Ptr.Add(g.SlotBytes()), g.SlotBytes()); err != nil {
						return err
					}
					if err := s.Synchronize(); err != nil {
						return err
					}
					got := make([]float32, len(want))
					if half {
						h16 := host.Bytes
						for i := range got {
							got[i] = halfToFloat(uint16(h16[2*i]) | uint16(h16[2*i+1])<<8)
						}
					} else {
						copy(got, host.Float32s())
					}
					tol := float32(0)
					if half {
						tol = 0.125 // half of float16's step at 255
					}
					if n, i := countDiff(got, want, tol); n > 0 {
						t.Errorf("%s half=%v %dx%d: %d values differ, first at %d: %v vs %v", name, half, pic.w, pic.h, n, i, got[i], want[i])
					}
					dp.buf.Free(nil)
				}
				out.Free(nil)
				host.Free()
				g.Close()
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// halfToFloat converts IEEE 754 binary16 to float32.
func halfToFloat(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := int(h>>10) & 0x1f
	mant := uint32(h & 0x3ff)
	switch {
	case exp == 0x1f:
		return math.Float32frombits(sign | 0x7f800000 | mant<<13)
	case exp == 0:
		return float32(mant) / (1 << 24) * float32(1-2*int(sign>>31))
	}
	return math.Float32frombits(sign | uint32(exp-15+127)<<23 | mant<<13)
}

// BenchmarkKernel1080p times the kernel alone (device events) on a 1920x1080 frame into a
// 416x416 float32 slot: the per-frame GPU cost of preprocessing.
func BenchmarkKernel1080p(b *testing.B) {
	d := openDevice(b)
	s, _ := d.NewStream()
	defer s.Destroy()
	pic := upload(b, d, s, randomNV12(rand.New(rand.NewPCG(5, 6)), 1920, 1080, false))
	g := &Preprocessor{Device: d, Spec: testSpecs["yolox416"]}
	if err := g.Init(); err != nil {
		b.Fatal(err)
	}
	defer g.Close()
	out, _ := d.Alloc(g.SlotBytes())
	defer out.Free(nil)
	e0, _ := d.NewEvent(true)
	e1, _ := d.NewEvent(true)
	d.RunLocked(func() error {
		for range 10 {
			g.Run(s, &pic.frame, out.Ptr, 0)
		}
		b.ReportAllocs()
		b.ResetTimer()
		e0.Record(s)
		for range b.N {
			if _, err := g.Run(s, &pic.frame, out.Ptr, 0); err != nil {
				b.Fatal(err)
			}
		}
		e1.Record(s)
		e1.Synchronize()
		ms, _ := cuda.Elapsed(e0, e1)
		b.ReportMetric(float64(ms)*1e6/float64(b.N), "gpu-ns/frame")
		return nil
	})
}
