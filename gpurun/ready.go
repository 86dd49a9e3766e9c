package gpurun

import (
	"sync"

	"github.com/vinfer/vinfer/cuda"
	"github.com/vinfer/vinfer/frame"
)

// ready maps each frame of a Decoder's pool (a fixed set of *frame.Frame, reused) to the event
// recorded on the decoder's stream when that frame's picture was mapped. Entries are added
// once per pool frame and removed by the decoder's Close.
var ready sync.Map // *frame.Frame → *cuda.Event

// Ready returns the event that marks f's picture as ready in device memory, recorded on its
// decoder's CUDA stream when the frame was emitted, or nil for a frame that did not come from
// a Decoder. A consumer on another CUDA stream queues a wait on it (cuda.Stream.Wait) before
// reading f's planes; the event stays valid while f is held. Ready does not allocate.
func Ready(f *frame.Frame) *cuda.Event {
	if ev, ok := ready.Load(f); ok {
		return ev.(*cuda.Event)
	}
	return nil
}
