// Package source defines where access units come from. Each kind of source lives in its own
// package (source/file, source/rtsp, source/rtp, source/gb28181) and implements Source.
package source

import (
	"context"

	"github.com/vinfer/vinfer/media"
)

// Source delivers the access units of one video stream in decoding order.
type Source interface {
	// Read blocks until the next access unit. The returned value is owned by the source and
	// valid until the next Read. It returns io.EOF at the end of a finite source, ctx.Err()
	// when ctx is cancelled, and another error when the source failed for good.
	Read(ctx context.Context) (*media.AccessUnit, error)
	// Info describes the stream; fields may be zero until the first access unit was read.
	Info() media.StreamInfo
	// Live reports a real-time source (camera, network): the pipeline drops frames rather than
	// slowing it down. Files are not live: they are read as fast as the pipeline consumes.
	Live() bool
	// Close releases the source. Safe to call more than once.
	Close() error
}
