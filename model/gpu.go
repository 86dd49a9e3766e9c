package model

import (
	"fmt"
	"maps"

	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/cuda"
	"github.com/vinfer/vinfer/detect"
	"github.com/vinfer/vinfer/frame"
	"github.com/vinfer/vinfer/gpuexec"
	"github.com/vinfer/vinfer/preprocess"
	"github.com/vinfer/vinfer/tensor"
)

// Defaults of config.Model.Workers and InFlight on a GPU (gpuexec's).
const (
	DefaultGPUWorkers  = gpuexec.DefaultWorkers
	DefaultGPUInFlight = gpuexec.DefaultInFlight
)

// ErrForeignFence is returned by Submit for a frame whose Ready fence is not a CUDA event.
var ErrForeignFence = gpuexec.ErrForeignFence

// openGPU loads decl on GPU ordinal as a gpuexec.Engine: decl.Workers lanes of decl.InFlight
// batches in flight, CUDA graphs unless decl.CUDAGraph is false, each lane's session loaded
// by l on the lane's stream (no optimized-model cache: the stream is part of the provider
// options). The returned model is lane 0's, for the version's description; the engine's Close
// frees it.
func (l *Loader) openGPU(decl config.Model, ordinal int) (*Model, *gpuexec.Engine, error) {
	if decl.Provider != config.ProviderCUDA {
		return nil, nil, fmt.Errorf("model %s: provider %q: GPU frames need provider: cuda", decl.Name, decl.Provider)
	}
	floatInput, halfUsed := false, false
	load := func(stream *cuda.Stream, graph bool) (gpuexec.Session, error) {
		d := decl
		if graph {
			d.ProviderOptions = maps.Clone(decl.ProviderOptions)
			if d.ProviderOptions == nil {
				d.ProviderOptions = map[string]string{}
			}
			d.ProviderOptions["enable_cuda_graph"] = "1"
		}
		m, err := l.load(d, &onDevice{ordinal: ordinal, stream: stream, floatInput: floatInput})
		if err != nil {
			return nil, err
		}
		halfUsed = halfUsed || m.sess.InputHalf()
		return m, nil
	}
	opt := gpuexec.Options{Name: decl.Name, Workers: decl.Workers, InFlight: decl.InFlight,
		Graph: decl.CUDAGraph == nil || *decl.CUDAGraph, Logf: l.Logf}
	e, err := gpuexec.Open(ordinal, opt, load)
	if err != nil && halfUsed {
		// The float16 input (the preprocessing kernel writing float16) failed on this GPU: the
		// float16 rewrite with a Cast after a float32 input instead.
		if l.Logf != nil {
			l.Logf("model %s: the float16-input path failed on cuda:%d (%v): a Cast after the input instead", decl.Name, ordinal, err)
		}
		floatInput = true
		e, err = gpuexec.Open(ordinal, opt, load)
	}
	if err != nil {
		return nil, nil, err
	}
	return e.First().(*Model), e, nil
}

// DeviceVersion is a Version loaded on a GPU (Registry.GetDevice). It takes decoded frames in
// that GPU's memory (codec.NVDECStream's) and preprocesses them itself: it implements
// pipeline.FrameRunner through its gpuexec.Engine, with one lane per worker
// (config.Model.Workers) and InFlight batches per lane. Its Input and Run are the host-memory
// path of lane 0's session (ONNX Runtime copies), which the pipeline does not use for it.
type DeviceVersion struct{ *Version }

// OnDevice returns v as a DeviceVersion when it runs on a GPU; ok is false for a host version.
func (v *Version) OnDevice() (d DeviceVersion, ok bool) {
	return DeviceVersion{v}, v.gpu != nil
}

// Device is the GPU ordinal.
func (d DeviceVersion) Device() int { return d.gpu.Device() }

// Lanes is how many workers run the version at once.
func (d DeviceVersion) Lanes() int { return d.gpu.Lanes() }

// InFlight is how many batches one lane keeps queued.
func (d DeviceVersion) InFlight() int { return d.gpu.InFlight() }

// CUDAGraph reports whether batches replay CUDA graphs (queued without a host wait).
func (d DeviceVersion) CUDAGraph() bool { return d.gpu.CUDAGraph() }

// Bind binds the calling worker to the GPU for its life (gpuexec.Engine.Bind).
func (d DeviceVersion) Bind() error { return d.gpu.Bind() }

// Submit queues a batch of device frames on slot of lane (gpuexec.Engine.Submit).
func (d DeviceVersion) Submit(lane, slot int, frames []*frame.Frame, tr []preprocess.Transform) error {
	return d.gpu.Submit(lane, slot, frames, tr)
}

// Wait blocks until slot's batch is done and returns its outputs (gpuexec.Engine.Wait).
func (d DeviceVersion) Wait(lane, slot int) ([]tensor.Tensor, error) { return d.gpu.Wait(lane, slot) }

// LaneDecoder is lane's post-processor.
func (d DeviceVersion) LaneDecoder(lane int) detect.Decoder { return d.gpu.LaneDecoder(lane) }
