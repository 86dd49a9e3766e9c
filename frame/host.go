package frame

import "errors"

// ErrOnDevice is returned by ToHost for a frame in device memory whose Backing cannot copy it
// to host memory.
var ErrOnDevice = errors.New("frame: the picture is in GPU memory and its decoder cannot copy it to the host")

// Downloader is implemented by the Backing of frames in device memory that can be copied to host
// memory on demand (NVDEC's frames: package codec), for the rare reader that needs the pixels
// on the host (a snapshot); the frame path never copies.
type Downloader interface {
	// Download waits for f's Ready fence, copies its planes into a new host frame (NewHost,
	// packed: strides equal to the row bytes) with f's format, geometry and metadata, and
	// returns it with one reference for the caller. f stays held by the caller throughout.
	Download(f *Frame) (*Frame, error)
}

// NewHost returns an empty frame in host memory outside any pool, with one reference; its last
// Release drops its planes (for copies made on demand).
func NewHost() *Frame {
	f := &Frame{Device: -1}
	f.refs.Store(1)
	return f
}

// ToHost returns f's picture in host memory, with a reference the caller must Release: f itself
// (retained) when it is there already, else a copy from its Backing's Downloader. Errors:
// ErrOnDevice when the backing cannot download, or the Downloader's.
func ToHost(f *Frame) (*Frame, error) {
	if !f.OnDevice() {
		f.Retain()
		return f, nil
	}
	d, ok := f.Backing.(Downloader)
	if !ok {
		return nil, ErrOnDevice
	}
	return d.Download(f)
}
