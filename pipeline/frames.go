package pipeline

import (
	"context"

	"github.com/vinfer/vinfer/frame"
	"github.com/vinfer/vinfer/preprocess"
	"github.com/vinfer/vinfer/tensor"
)

// FrameRunner is a Runner that takes decoded frames and preprocesses them itself, for frames
// that live in GPU memory (StreamConfig.DeviceFrames): the pipeline queues such frames without
// preprocessing them and hands each batch to the runner of the model for the frames' device
// (Options.DeviceEngine). The inference worker, locked to its OS thread for its life, calls
// Bind once before its first RunFrames.
type FrameRunner interface {
	Runner
	// Bind prepares the calling OS thread for RunFrames (a GPU runner makes its device's
	// context current there).
	Bind() error
	// RunFrames preprocesses frames[b] into slot b of the model input, infers the batch and
	// returns the outputs (batch dimension len(frames)), valid until the next call; tr[b]
	// receives frame b's model-input→frame mapping. The frames may be released once it
	// returns.
	RunFrames(frames []*frame.Frame, tr []preprocess.Transform) ([]tensor.Tensor, error)
}

// queueFrame queues a device frame for its model's FrameRunner: the queue holds a reference
// to the frame (released after inference or when the item is dropped) instead of an input
// slot.
func (s *stream) queueFrame(ctx context.Context, it item, f *frame.Frame) error {
	f.Retain()
	it.frame = f
	it.queued = it.decoded
	return s.enqueue(ctx, it)
}
