package frame

import (
	"fmt"
	"sync/atomic"
	"time"
)

// PixelFormat is the memory layout of a frame's planes.
type PixelFormat uint8

// Pixel formats vinfer's preprocessing reads.
const (
	FormatUnknown PixelFormat = iota
	// FormatI420 is YUV 4:2:0 planar: Y (W×H), U and V (⌈W/2⌉×⌈H/2⌉), BT.601 limited range
	// unless FullRange is set (FFmpeg yuv420p / yuvj420p).
	FormatI420
	// FormatNV12 is YUV 4:2:0 with Y then interleaved UV (FFmpeg nv12; NVDEC's output).
	FormatNV12
	// FormatBGR24 is packed 8-bit B,G,R (OpenCV's order), one plane.
	FormatBGR24
	// FormatRGB24 is packed 8-bit R,G,B, one plane.
	FormatRGB24
)

func (f PixelFormat) String() string {
	switch f {
	case FormatI420:
		return "i420"
	case FormatNV12:
		return "nv12"
	case FormatBGR24:
		return "bgr24"
	case FormatRGB24:
		return "rgb24"
	}
	return fmt.Sprintf("format(%d)", uint8(f))
}

// Backing is the native memory behind a frame's planes. Reset drops the content (it runs on the
// last Release, before the frame returns to its pool); Free releases the memory for good (run
// by Pool.Close).
type Backing interface {
	Reset()
	Free()
}

// Frame is one decoded picture. The plane slices may point into native memory owned by Backing:
// never keep them past Release.
type Frame struct {
	Format PixelFormat
	// Width and Height in pixels.
	Width, Height int
	// Planes and Strides (bytes per row) in host memory; unused planes are nil.
	Planes  [3][]byte
	Strides [3]int
	// DevicePlanes are device pointers (CUDA) when the picture lives in GPU memory; Device is the
	// GPU ordinal then, -1 for host frames.
	DevicePlanes [3]uintptr
	Device       int
	// Ready, for a picture in device memory, is where it becomes complete on its decoder's
	// stream (set at each emit, valid while the frame is held); nil: complete already.
	Ready Fence
	// FullRange marks YUV with 0–255 luma (JPEG range) instead of 16–235.
	FullRange bool

	// PTS is the presentation time since the start of the stream.
	PTS time.Duration
	// Wallclock is the capture time when known, else zero.
	Wallclock time.Time
	// Index counts the stream's decoded frames in presentation order, from 0.
	Index int64

	// Backing is the native memory behind the planes; nil for Go-allocated frames.
	Backing Backing

	refs  atomic.Int32
	pool  *Pool
	taken string // debug mode: where the frame was taken from the pool
}

// OnDevice reports whether the picture lives in GPU memory.
func (f *Frame) OnDevice() bool { return f.Device >= 0 && f.DevicePlanes[0] != 0 }

// Retain adds a reference for another holder, who must call Release.
func (f *Frame) Retain() {
	if f.refs.Add(1) <= 1 {
		f.misuse("Retain on a released frame")
	}
}

// Release drops one reference. The last one resets the backing and returns the frame to its pool.
// Releasing more often than taken panics (or, in debug mode, is recorded and reported by
// Pool.Close).
func (f *Frame) Release() {
	n := f.refs.Add(-1)
	switch {
	case n > 0:
		return
	case n < 0:
		f.refs.Add(1)
		f.misuse("double Release")
		return
	}
	if f.Backing != nil {
		f.Backing.Reset()
	}
	f.Planes = [3][]byte{}
	f.DevicePlanes = [3]uintptr{}
	f.Ready = nil
	if f.pool != nil {
		f.pool.put(f)
	}
}

// Refs returns the current reference count (for tests and accounting).
func (f *Frame) Refs() int32 { return f.refs.Load() }

func (f *Frame) misuse(what string) {
	if f.pool != nil && debugEnabled() {
		f.pool.recordMisuse(fmt.Sprintf("%s of frame %d (taken at %s)", what, f.Index, f.taken))
		return
	}
	panic("frame: " + what)
}
