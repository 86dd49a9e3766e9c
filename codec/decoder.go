// Package codec decodes access units into frames: Decoder (FFmpeg's libavcodec, on the CPU) and
// NVDEC (NVIDIA's hardware decoder through FFmpeg's cuda hwaccel). Every stream has its own
// decoder instance; there is no global lock. Decoded pictures are not copied: a frame.Frame's
// planes point into the AVFrame held by its pool slot until the frame's last Release.
package codec

/*
#cgo pkg-config: libavcodec libavutil
#include <stdlib.h>
#include <libavutil/frame.h>
#include <libavutil/error.h>
#include "ffmpeg.h"

static int vc_eagain(void) { return AVERROR(EAGAIN); }
static int vc_eof(void) { return AVERROR_EOF; }
*/
import "C"

import (
	"context"
	"errors"
	"fmt"
	"time"
	"unsafe"

	"github.com/vinfer/vinfer/frame"
	"github.com/vinfer/vinfer/media"
)

// ErrCorrupt marks an access unit the decoder rejected; the decoder stays usable and resumes at
// the next key frame. Callers count it as a dropped frame.
var ErrCorrupt = errors.New("codec: corrupt access unit")

// Decoder decodes H.264 or H.265 Annex-B access units with FFmpeg's software decoders.
type Decoder struct {
	// Codec of the access units.
	Codec media.Codec
	// Threads per decoder (default 1: many streams decode in parallel already; more adds
	// frame-threading latency of one frame per thread).
	Threads int
	// Frames is the most decoded frames the consumer may hold at once (the pool's size,
	// default 8). When all are held Decode waits (backpressure).
	Frames int
	// Name labels the frame pool in accounting and leak reports.
	Name string

	d      *C.vc_dec
	pool   *frame.Pool
	info   C.vc_frame_info
	errs   [256]C.char
	n      int64
	synced bool // a key frame was sent since Init or the last discontinuity
}

// Init opens the decoder.
func (d *Decoder) Init() error {
	var id C.int
	switch d.Codec {
	case media.CodecH264:
		id = C.AV_CODEC_ID_H264
	case media.CodecH265:
		id = C.AV_CODEC_ID_HEVC
	default:
		return fmt.Errorf("codec: cannot decode %v (H.264 and H.265 only)", d.Codec)
	}
	if d.Frames <= 0 {
		d.Frames = 8
	}
	if r := C.vc_dec_open(&d.d, id, C.int(d.Threads), &d.errs[0], C.int(len(d.errs))); r < 0 {
		return fmt.Errorf("codec: opening the %v decoder: %s", d.Codec, C.GoString(&d.errs[0]))
	}
	name := d.Name
	if name == "" {
		name = "ffmpeg-" + d.Codec.String()
	}
	d.pool = frame.NewPool(name, d.Frames, func() (frame.Backing, error) {
		f := C.av_frame_alloc()
		if f == nil {
			return nil, errors.New("codec: av_frame_alloc failed")
		}
		return &swFrame{f: f}, nil
	})
	return nil
}

// swFrame is the native backing of a decoded frame: its AVFrame (buffers from the decoder's
// own buffer pool, returned by av_frame_unref).
type swFrame struct{ f *C.AVFrame }

func (b *swFrame) Reset() { C.av_frame_unref(b.f) }
func (b *swFrame) Free()  { C.av_frame_free(&b.f) }

// Pool returns the decoder's frame pool (accounting).
func (d *Decoder) Pool() *frame.Pool { return d.pool }

// Decode sends one access unit and calls emit for every frame that comes out, in presentation
// order (B-frames are reordered by the decoder). emit owns one reference to the frame. An access
// unit the decoder rejects returns an error wrapping ErrCorrupt; non-key access units before the
// first key frame, and after au.Discontinuity until the next key frame, are skipped and also
// reported as ErrCorrupt. When the consumer holds every frame of the pool Decode waits until ctx
// ends.
func (d *Decoder) Decode(ctx context.Context, au *media.AccessUnit, emit func(*frame.Frame) error) error {
	if au.Discontinuity {
		d.synced = false
	}
	if !d.synced {
		if !au.Key {
			return fmt.Errorf("%w: waiting for a key frame (access unit at %v)", ErrCorrupt, au.PTS)
		}
		d.synced = true
	}
	if len(au.Data) == 0 {
		return nil
	}
	key, discard := 0, 0
	if au.Key {
		key = 1
	}
	if au.Discard {
		discard = 1
	}
	r := C.vc_dec_send(d.d, (*C.uint8_t)(unsafe.Pointer(&au.Data[0])), C.int(len(au.Data)), C.int64_t(au.PTS), C.int(key), C.int(discard))
	var sendErr error
	if r < 0 && r != C.vc_eagain() {
		sendErr = fmt.Errorf("%w at %v: %s", ErrCorrupt, au.PTS, averr(r))
	}
	if err := d.receive(ctx, emit); err != nil {
		return err
	}
	return sendErr
}

// Flush drains the frames the decoder still holds at the end of the stream; the decoder can
// then decode a new stream from a key frame.
func (d *Decoder) Flush(ctx context.Context, emit func(*frame.Frame) error) error {
	C.vc_dec_send(d.d, nil, 0, 0, 0, 0)
	err := d.receive(ctx, emit)
	C.vc_dec_flush(d.d)
	return err
}

func (d *Decoder) receive(ctx context.Context, emit func(*frame.Frame) error) error {
	for {
		f, err := d.pool.Get(ctx)
		if err != nil {
			return err
		}
		b := f.Backing.(*swFrame)
		r := C.vc_dec_receive(d.d, b.f)
		if r == C.vc_eagain() || r == C.vc_eof() {
			f.Release()
			return nil
		}
		if r < 0 {
			f.Release()
			return fmt.Errorf("%w: %s", ErrCorrupt, averr(r))
		}
		C.vc_frame_info_get(b.f, &d.info)
		if d.info.format == 0 {
			name := C.GoString(C.vc_pix_fmt_name(b.f))
			f.Release()
			return fmt.Errorf("codec: decoded pixel format %s is not supported (8-bit 4:2:0 only)", name)
		}
		d.fill(f)
		if err := emit(f); err != nil {
			return err
		}
	}
}

func (d *Decoder) fill(f *frame.Frame) {
	i := &d.info
	w, h := int(i.width), int(i.height)
	f.Width, f.Height = w, h
	f.FullRange = i.full_range != 0
	f.PTS = time.Duration(i.pts)
	f.Index = d.n
	d.n++
	ch := (h + 1) / 2
	if i.format == 1 {
		f.Format = frame.FormatI420
		for k, rows := range [3]int{h, ch, ch} {
			f.Planes[k] = unsafe.Slice((*byte)(unsafe.Pointer(i.data[k])), int(i.linesize[k])*rows)
			f.Strides[k] = int(i.linesize[k])
		}
		return
	}
	f.Format = frame.FormatNV12
	for k, rows := range [2]int{h, ch} {
		f.Planes[k] = unsafe.Slice((*byte)(unsafe.Pointer(i.data[k])), int(i.linesize[k])*rows)
		f.Strides[k] = int(i.linesize[k])
	}
}

// Close frees the decoder. Frames still held stay valid until released; the returned error
// reports frames never released (see frame.Pool.Close).
func (d *Decoder) Close() error {
	if d.d != nil {
		C.vc_dec_close(d.d)
		d.d = nil
	}
	if d.pool != nil {
		return d.pool.Close()
	}
	return nil
}
