package pipeline

import (
	"github.com/vinfer/vinfer/detect"
	"github.com/vinfer/vinfer/frame"
	"github.com/vinfer/vinfer/preprocess"
	"github.com/vinfer/vinfer/tensor"
)

// FrameRunner is a Runner that takes decoded frames and preprocesses them itself, for frames
// that live in GPU memory (StreamConfig.Device): the pipeline queues such frames without
// preprocessing them and hands each batch to the runner of the model for the frames' device.
//
// The runner has Lanes() lanes, one per inference worker of its (model, device), each with
// InFlight() batch slots: worker i submits a batch into a free slot of lane i (Submit returns
// once the work is queued), gathers and submits the next one, and post-processes a slot's
// outputs after Wait. Only worker i calls lane i's methods, from the goroutine it bound
// (Bind); lanes run concurrently.
type FrameRunner interface {
	Runner
	// Lanes is how many workers run the model for this device at once (≥ 1).
	Lanes() int
	// InFlight is how many batches one lane keeps queued at once (≥ 1).
	InFlight() int
	// Bind prepares the calling goroutine for Submit and Wait: a GPU runner locks it to its
	// OS thread, for the goroutine's life, with the device's context current. A worker calls
	// it once, before its first Submit.
	Bind() error
	// Submit queues slot's batch on lane: frames[b] is preprocessed into item b of the model
	// input, the batch inferred, its outputs made ready for Wait; tr[b] receives frame b's
	// model-input→frame mapping. The frames must stay held until Wait(lane, slot) returned.
	// After an error the slot is free again (its frames may still be read by work queued
	// before: Wait on it before releasing them).
	Submit(lane, slot int, frames []*frame.Frame, tr []preprocess.Transform) error
	// Wait blocks until slot's batch is done and returns its outputs (batch dimension: the
	// frames submitted), valid until the slot's next Submit.
	Wait(lane, slot int) ([]tensor.Tensor, error)
	// LaneDecoder is lane's post-processor (not shared with other lanes).
	LaneDecoder(lane int) detect.Decoder
}
