package cuda

/*
#include "driver.h"
*/
import "C"

import "unsafe"

// Stream is an ordered queue of device work (CUstream), created non-blocking so it never
// synchronizes with the legacy default stream. Its work-queueing methods (copies, fills,
// waits) use the calling thread's current context: call them from a GPU worker inside
// Device.RunLocked. Function.Launch checks the context itself.
type Stream struct {
	dev *Device
	s   C.CUstream
}

// NewStream creates a non-blocking stream (cuStreamCreate with CU_STREAM_NON_BLOCKING).
func (d *Device) NewStream() (*Stream, error) {
	st := &Stream{dev: d}
	err := d.with(func() error { return check("cuStreamCreate", C.vf_cuStreamCreate(&st.s, 1)) })
	if err != nil {
		return nil, err
	}
	return st, nil
}

// Device returns the stream's device.
func (s *Stream) Device() *Device { return s.dev }

// Handle returns the CUstream value, for libraries that take one (ONNX Runtime's
// user_compute_stream, FFmpeg's AVCUDADeviceContext.stream).
func (s *Stream) Handle() uintptr { return uintptr(unsafe.Pointer(s.s)) }

// Synchronize waits until all work queued on the stream is done.
func (s *Stream) Synchronize() error {
	return check("cuStreamSynchronize", C.vf_cuStreamSynchronize(s.s))
}

// Wait makes later work on s wait for e (cuStreamWaitEvent); the host does not block.
func (s *Stream) Wait(e *Event) error {
	return check("cuStreamWaitEvent", C.vf_cuStreamWaitEvent(s.s, e.e, 0))
}

// Destroy releases the stream after its queued work completes.
func (s *Stream) Destroy() error {
	if s.s == nil {
		return nil
	}
	err := s.dev.with(func() error { return check("cuStreamDestroy", C.vf_cuStreamDestroy(s.s)) })
	s.s = nil
	return err
}

// Event marks a point in a stream, for ordering streams and timing device work.
type Event struct {
	dev *Device
	e   C.CUevent
}

// NewEvent creates an event; timing events can be passed to Elapsed, others
// (CU_EVENT_DISABLE_TIMING) are cheaper for pure ordering.
func (d *Device) NewEvent(timing bool) (*Event, error) {
	ev := &Event{dev: d}
	flags := C.uint(0)
	if !timing {
		flags = 2
	}
	if err := d.with(func() error { return check("cuEventCreate", C.vf_cuEventCreate(&ev.e, flags)) }); err != nil {
		return nil, err
	}
	return ev, nil
}

// Handle returns the CUevent value (frame.Fence).
func (e *Event) Handle() uintptr { return uintptr(unsafe.Pointer(e.e)) }

// Record captures the work queued on s so far.
func (e *Event) Record(s *Stream) error {
	return check("cuEventRecord", C.vf_cuEventRecord(e.e, s.s))
}

// Synchronize waits until the recorded work is done.
func (e *Event) Synchronize() error { return check("cuEventSynchronize", C.vf_cuEventSynchronize(e.e)) }

// Done reports whether the recorded work is done, without blocking.
func (e *Event) Done() (bool, error) {
	r := C.vf_cuEventQuery(e.e)
	if r == codeNotReady {
		return false, nil
	}
	return r == 0, check("cuEventQuery", r)
}

// Elapsed returns the device time between two completed timing events, in milliseconds
// (resolution about 0.5 µs).
func Elapsed(start, end *Event) (float32, error) {
	var ms C.float
	if err := check("cuEventElapsedTime", C.vf_cuEventElapsedTime(&ms, start.e, end.e)); err != nil {
		return 0, err
	}
	return float32(ms), nil
}

// Destroy releases the event.
func (e *Event) Destroy() error {
	if e.e == nil {
		return nil
	}
	err := e.dev.with(func() error { return check("cuEventDestroy", C.vf_cuEventDestroy(e.e)) })
	e.e = nil
	return err
}
