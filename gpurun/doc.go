// Package gpurun is the glue of vinfer's GPU path inside `vinfer run`: which GPU a stream runs
// on (Devices: an explicit ordinal or round-robin over every visible device, each device's
// primary context retained once), and the stream decoder (Decoder: NVDEC through
// codec.NVDEC on the stream's own CUDA stream, frames left in device memory) whose frames
// carry a ready event (frame.Frame.Ready) that the model's GPU lane waits on before its fused
// preprocessing kernel reads them.
//
// The pipeline stays GPU-agnostic: it queues such frames without preprocessing them and hands
// each batch to the model's runner for the frames' device (package model, DeviceVersion).
// Nothing here runs unless a stream asks for decoder: nvdec; on a machine without a GPU the
// CPU path never touches the CUDA driver.
package gpurun
