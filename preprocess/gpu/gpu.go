// Package gpu is the GPU counterpart of preprocess.CPU: a fused CUDA kernel
// (cuda/kernels/preprocess.cu) that turns an NV12 frame in device memory (NVDEC's output) into
// one slot of an NCHW batch tensor in device memory, float32 or float16, with the CPU path's
// geometry and arithmetic (its float32 output is bit-identical to preprocess.CPU's on the same
// frame). Nothing crosses PCIe and nothing is allocated per frame.
package gpu

import (
	"errors"
	"fmt"
	"sync"

	"github.com/vinfer/vinfer/cuda"
	"github.com/vinfer/vinfer/cuda/kernels"
	"github.com/vinfer/vinfer/frame"
	"github.com/vinfer/vinfer/preprocess"
)

// Block is the kernel's thread-block shape: 32 consecutive output pixels of a row per warp, so
// each plane store of a warp is one coalesced 128-byte (float32) transaction.
var Block = cuda.Dim3{X: 32, Y: 8, Z: 1}

// Errors returned by Run.
var (
	ErrHostFrame = errors.New("preprocess/gpu: frame is in host memory; use preprocess.CPU or upload it")
	ErrFormat    = errors.New("preprocess/gpu: only NV12 device frames are supported (NVDEC output)")
)

// Preprocessor runs the fused preprocessing kernel on one device. It is not safe for concurrent
// use: give each GPU worker its own (they share the device's context).
type Preprocessor struct {
	// Device whose frames and tensors are processed; required.
	Device *cuda.Device
	// Spec is the model's preprocessing; Interp Area is supported only when enlarging.
	Spec preprocess.Spec
	// Half writes float16 instead of float32.
	Half bool

	mod  *cuda.Module
	fn   *cuda.Function
	args cuda.Args
	// geometry cache for the last source size
	srcW, srcH int
	p          params
}

// Init validates the spec and loads the kernel module into the device's context (JIT compiling
// the PTX: do it at start-up). It returns the spec's error, or the driver's.
func (g *Preprocessor) Init() error {
	if g.Device == nil {
		return errors.New("preprocess/gpu: Device is required")
	}
	if err := g.Spec.Validate(); err != nil {
		return err
	}
	var err error
	if g.mod, err = acquireModule(g.Device); err != nil {
		return err
	}
	name := "nv12_nchw_f32"
	if g.Half {
		name = "nv12_nchw_f16"
	}
	if g.fn, err = g.mod.Function(name); err != nil {
		releaseModule(g.Device)
		g.mod = nil
		return err
	}
	g.srcW, g.srcH = 0, 0
	return nil
}

// Close drops the preprocessor's use of the device's kernel module (unloaded with the last).
func (g *Preprocessor) Close() error {
	if g.mod == nil {
		return nil
	}
	g.mod, g.fn = nil, nil
	return releaseModule(g.Device)
}

// The kernel module is loaded once per device and shared by its preprocessors, so that a
// worker or stream started after the warm-up does not JIT-compile or load anything.
var (
	modulesMu sync.Mutex
	modules   = map[*cuda.Device]*sharedModule{}
)

type sharedModule struct {
	mod  *cuda.Module
	refs int
}

func acquireModule(d *cuda.Device) (*cuda.Module, error) {
	modulesMu.Lock()
	defer modulesMu.Unlock()
	if m := modules[d]; m != nil {
		m.refs++
		return m.mod, nil
	}
	ptx, err := kernels.Preprocess()
	if err != nil {
		return nil, err
	}
	mod, err := d.LoadModule(ptx)
	if err != nil {
		return nil, err
	}
	modules[d] = &sharedModule{mod: mod, refs: 1}
	return mod, nil
}

func releaseModule(d *cuda.Device) error {
	modulesMu.Lock()
	defer modulesMu.Unlock()
	m := modules[d]
	if m == nil {
		return nil
	}
	if m.refs--; m.refs > 0 {
		return nil
	}
	delete(modules, d)
	return m.mod.Unload()
}

// ElemSize returns the bytes per tensor element (4, or 2 with Half).
func (g *Preprocessor) ElemSize() int {
	if g.Half {
		return 2
	}
	return 4
}

// SlotBytes returns the size of one [3,H,W] slot of the batch tensor in bytes.
func (g *Preprocessor) SlotBytes() int { return 3 * g.Spec.Width * g.Spec.Height * g.ElemSize() }

// Run queues the preprocessing of f (an NV12 frame on g.Device) into slot of the NCHW batch
// tensor at batch (device memory holding at least slot+1 slots) on stream s, and returns the
// mapping from model-input pixels back to f's pixels. The tensor is ready when s passes the
// launch; f must stay alive until then (release it after an event or the stream sync that
// follows inference). Call it from the worker's locked thread (cuda.Device.RunLocked).
func (g *Preprocessor) Run(s *cuda.Stream, f *frame.Frame, batch cuda.Ptr, slot int) (preprocess.Transform, error) {
	if !f.OnDevice() {
		return preprocess.Transform{}, ErrHostFrame
	}
	if f.Format != frame.FormatNV12 {
		return preprocess.Transform{}, fmt.Errorf("%w (got %s)", ErrFormat, f.Format)
	}
	return g.RunNV12(s, NV12{
		Y: cuda.Ptr(f.DevicePlanes[0]), UV: cuda.Ptr(f.DevicePlanes[1]),
		YPitch: f.Strides[0], UVPitch: f.Strides[1],
		Width: f.Width, Height: f.Height, FullRange: f.FullRange, Device: f.Device,
	}, batch, slot)
}

// NV12 describes an NV12 picture in device memory.
type NV12 struct {
	Y, UV           cuda.Ptr // luma plane; interleaved Cb,Cr plane of ⌈Height/2⌉ rows
	YPitch, UVPitch int      // bytes per row
	Width, Height   int      // pixels
	FullRange       bool     // JPEG-range (0–255) YUV instead of 16–235
	Device          int      // GPU ordinal holding the planes
}

// RunNV12 is Run for a picture described directly (e.g. one not held in a frame.Frame).
func (g *Preprocessor) RunNV12(s *cuda.Stream, src NV12, batch cuda.Ptr, slot int) (preprocess.Transform, error) {
	if g.fn == nil {
		return preprocess.Transform{}, errors.New("preprocess/gpu: Preprocessor used before Init")
	}
	if src.Device != g.Device.Ordinal() {
		return preprocess.Transform{}, fmt.Errorf("preprocess/gpu: frame is on cuda:%d, preprocessor on cuda:%d", src.Device, g.Device.Ordinal())
	}
	if src.Y == 0 || src.UV == 0 || src.YPitch < src.Width || src.UVPitch < src.Width+src.Width%2 {
		return preprocess.Transform{}, fmt.Errorf("preprocess/gpu: bad NV12 planes (pitches %d,%d for width %d)", src.YPitch, src.UVPitch, src.Width)
	}
	if slot < 0 {
		return preprocess.Transform{}, fmt.Errorf("preprocess/gpu: slot %d is negative", slot)
	}
	if src.Width != g.srcW || src.Height != g.srcH {
		p, err := plan(g.Spec, src.Width, src.Height)
		if err != nil {
			return preprocess.Transform{}, err
		}
		g.p, g.srcW, g.srcH = p, src.Width, src.Height
	}
	dst := batch.Add(slot * g.SlotBytes())
	g.p.pack(&g.args, src.Y, src.UV, src.YPitch, src.UVPitch, src.FullRange, dst)
	grid := cuda.GridFor(g.Spec.Width, g.Spec.Height, Block)
	if err := g.fn.Launch(grid, Block, 0, s, &g.args); err != nil {
		return preprocess.Transform{}, err
	}
	return g.p.transform, nil
}
