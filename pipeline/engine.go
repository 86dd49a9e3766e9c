package pipeline

import (
	"github.com/vinfer/vinfer/detect"
	"github.com/vinfer/vinfer/preprocess"
	"github.com/vinfer/vinfer/tensor"
)

// Engine is one served model as the pipeline drives it (package model's registry entries).
type Engine interface {
	// Name is the model's name in the configuration.
	Name() string
	// Acquire pins the model version serving now for one batch; nil once the model is closed.
	// A hot reload swaps versions between batches, never during one.
	Acquire() Runner
}

// Runner is one pinned model version. One inference worker uses it at a time: Input, Run and
// the Decoder are not called concurrently.
type Runner interface {
	// Preprocess is the model's input geometry and normalization.
	Preprocess() preprocess.Spec
	// MaxBatch is the largest batch Run accepts (1 for fixed-batch models).
	MaxBatch() int
	// Input returns the [batch,3,H,W] float32 input buffer for a run of batch frames; slot b is
	// Input(batch)[b·3·H·W : (b+1)·3·H·W]. The buffer is reused across runs.
	Input(batch int) ([]float32, error)
	// Run infers the batch written into Input(batch) and returns the outputs, valid until the
	// next Run.
	Run(batch int) ([]tensor.Tensor, error)
	// InputSet and RunSet are Input and Run for input sets 1 and 2, which the worker of host
	// frames fills with the next batch while the current one runs (Input is set 0, for
	// cascades, which hold the model's session lock). Outputs are shared by every set: valid
	// until the next Run or RunSet.
	InputSet(set, batch int) ([]float32, error)
	RunSet(set, batch int) ([]tensor.Tensor, error)
	// Decoder is the version's post-processor.
	Decoder() detect.Decoder
	// Release unpins the version.
	Release()
}
