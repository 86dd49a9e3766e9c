package codec

/*
#cgo pkg-config: libavcodec libavutil
#include <stdlib.h>
#include <libavutil/frame.h>
#include <libavutil/error.h>
#include "nvdec.h"

static int vf_eagain(void) { return AVERROR(EAGAIN); }
static int vf_eof(void) { return AVERROR_EOF; }
static int vf_pix_nv12(void) { return AV_PIX_FMT_NV12; }
*/
import "C"

import (
	"context"
	"errors"
	"fmt"
	"time"
	"unsafe"

	"github.com/vinfer/vinfer/cuda"
	"github.com/vinfer/vinfer/frame"
	"github.com/vinfer/vinfer/internal/ffmpeg"
	"github.com/vinfer/vinfer/internal/sigstack"
	"github.com/vinfer/vinfer/media"
)

// NVDEC decodes H.264 and H.265 access units on an NVIDIA GPU through FFmpeg's cuda hwaccel.
// Decoded pictures stay in device memory: each frame.Frame it emits is an NV12 picture whose
// DevicePlanes point into an NVDEC output surface (FFmpeg 5.1 maps the surface without a copy),
// held until the frame's last Release.
//
// FFmpeg uses vinfer's CUDA context: the decoder's hw device context is built around
// Device.Context() (the retained primary context) instead of creating one, so NVDEC, the
// preprocessing kernel and ONNX Runtime share one context per GPU. Surface mapping (NVDEC's
// post-processing) is queued on Stream: a consumer queueing its kernels on the same stream needs
// no further synchronization; one on another stream waits on an event recorded on Stream.
//
// An NVDEC is used by one goroutine at a time.
type NVDEC struct {
	// Device is the GPU to decode on; required.
	Device *cuda.Device
	// Stream orders NVDEC's surface mapping; required.
	Stream *cuda.Stream
	// Codec of the access units: media.CodecH264 or media.CodecH265.
	Codec media.Codec
	// Frames is how many decoded frames the consumer may hold at once (the frame pool's size,
	// added to the decoder's surfaces; NVDEC has at most 32); 0: DefaultNVDECFrames.
	Frames int
	// ReorderPTS re-stamps the frames in presentation order, as Decoder.ReorderPTS does.
	ReorderPTS bool

	d       *C.vf_nvdec
	scratch *C.AVFrame // receives a picture before it moves into a pool frame
	pool    *frame.Pool
	errs    [256]C.char
	info    C.vf_frame_info
	n       int64
	synced  bool     // a key frame was sent
	key     keyState // ProbeKey's (keyprobe.go)
	order   ptsOrder
	lum     lumaRows
}

// avFrame is the native backing of an NVDEC frame, on dev (frame.Downloader: nvdecdownload.go).
type avFrame struct {
	f   *C.AVFrame
	dev *cuda.Device
	lum *lumaRows // the decoder's (SampleLuma: nvdecluma.go)
}

func (b *avFrame) Reset() { C.av_frame_unref(b.f) } // unmaps the NVDEC surface
func (b *avFrame) Free()  { C.av_frame_free(&b.f) }

// DefaultNVDECFrames is the frame pool size of an NVDEC (and NVDECStream) whose Frames is 0:
// room for a stream's frames in its inference queue, in the batches in flight and the one kept
// for snapshots, so that NVDEC rarely waits. Measured on the H200 (docs/benchmarks-gpu.md,
// 2026-12-01): `vinfer run` with 8 reached 0.99 of NVDEC decode-only with 16 and 32 streams,
// as the benchmark engine did with 16; each frame costs one NVDEC output surface (~3 MB at
// 1080p) per stream.
const DefaultNVDECFrames = 8

// ErrNVDECUnavailable is returned by Init when FFmpeg or the device cannot decode with NVDEC.
var ErrNVDECUnavailable = errors.New("codec: NVDEC decoding unavailable")

// Init opens the decoder. Errors wrap ErrNVDECUnavailable when FFmpeg lacks the cuda hwaccel
// or the driver lacks libnvcuvid.
func (d *NVDEC) Init() error {
	if d.Device == nil || d.Stream == nil {
		return errors.New("codec: NVDEC needs Device and Stream")
	}
	var id C.int
	switch d.Codec {
	case media.CodecH264:
		id = C.AV_CODEC_ID_H264
	case media.CodecH265:
		id = C.AV_CODEC_ID_HEVC
	default:
		return fmt.Errorf("codec: NVDEC cannot decode %v (H.264 and H.265 only)", d.Codec)
	}
	if d.Frames <= 0 {
		d.Frames = DefaultNVDECFrames
	}
	if d.Frames > 16 {
		return fmt.Errorf("codec: NVDEC Frames %d exceeds 16 (NVDEC has at most 32 surfaces)", d.Frames)
	}
	r := C.vf_nvdec_open(&d.d, id, C.uintptr_t(d.Device.Context()), C.uintptr_t(d.Stream.Handle()),
		C.int(d.Frames), &d.errs[0], C.int(len(d.errs)))
	if r < 0 {
		return fmt.Errorf("%w: %s", ErrNVDECUnavailable, C.GoString(&d.errs[0]))
	}
	if d.scratch = C.av_frame_alloc(); d.scratch == nil {
		C.vf_nvdec_close(d.d)
		d.d = nil
		return errors.New("codec: av_frame_alloc failed")
	}
	sigstack.Fix() // libnvcuvid may install signal handlers without SA_ONSTACK
	d.lum = lumaRows{stream: d.Stream}
	d.pool = frame.NewPool(fmt.Sprintf("nvdec-cuda%d", d.Device.Ordinal()), d.Frames, func() (frame.Backing, error) {
		f := C.av_frame_alloc()
		if f == nil {
			return nil, errors.New("codec: av_frame_alloc failed")
		}
		return &avFrame{f: f, dev: d.Device, lum: &d.lum}, nil
	})
	return nil
}

// Pool returns the decoder's frame pool (for accounting).
func (d *NVDEC) Pool() *frame.Pool { return d.pool }

// Decode sends one access unit and calls emit for every frame that comes out, in presentation
// order, with the contract of Decoder.Decode: emit owns one reference to the frame (it must
// Release it or pass it on) and an error from emit stops Decode and is returned; access units
// before the first key frame are skipped with a *DecodeError (ErrCorrupt), as are units FFmpeg
// rejects; when a picture comes out while every frame of the pool is held, Decode waits for a
// Release (backpressure) and returns ctx.Err() if ctx ends first. Call it from the goroutine
// that owns Stream's work (cuda.Device.RunLocked).
func (d *NVDEC) Decode(ctx context.Context, au *media.AccessUnit, emit func(*frame.Frame) error) error {
	if d.d == nil {
		return errors.New("codec: NVDEC Decode before Init or after Close")
	}
	if !d.synced {
		if !au.Key {
			return &DecodeError{PTS: au.PTS, Reason: "waiting for the first key frame"}
		}
		d.synced = true
		if d.key.resetFor(d.Codec, au) {
			C.vf_nvdec_flush(d.d)
		}
	}
	if len(au.Data) == 0 {
		return nil
	}
	var sendErr error
	discard := C.int(0)
	if au.Discard {
		discard = 1
	}
	for {
		r := C.vf_nvdec_send(d.d, (*C.uint8_t)(unsafe.Pointer(&au.Data[0])), C.int(len(au.Data)), C.int64_t(au.PTS), discard)
		if r == C.vf_eagain() { // the decoder holds output: drain it, then send again
			if err := d.receive(ctx, emit); err != nil {
				return err
			}
			continue
		}
		if r < 0 {
			sendErr = &DecodeError{PTS: au.PTS, Reason: "NVDEC rejected access unit", Err: errors.New(averr(r))}
		} else if d.ReorderPTS && !au.Discard { // a Discard unit's picture is not output
			d.order.push(int64(au.PTS))
		}
		break
	}
	if err := d.receive(ctx, emit); err != nil {
		return err
	}
	return sendErr
}

// Flush drains the frames the decoder still holds at the end of the stream and emits them;
// the decoder can then decode a new stream, from a key frame.
func (d *NVDEC) Flush(ctx context.Context, emit func(*frame.Frame) error) error {
	if d.d == nil {
		return errors.New("codec: NVDEC Flush before Init or after Close")
	}
	if r := C.vf_nvdec_send(d.d, nil, 0, 0, 0); r < 0 && r != C.vf_eof() {
		return fmt.Errorf("codec: draining NVDEC: %s", averr(r))
	}
	err := d.receive(ctx, emit)
	C.vf_nvdec_flush(d.d)
	d.order.reset()
	d.synced, d.key.held = false, false
	return err
}

// ProbeKey decodes the key frame au alone (an idle stream's, on a decoder that several
// streams share) and emits its picture, without ending the stream where it can, so that the
// hwaccel is not rebuilt (probeKey: keyprobe.go). Contract and errors of Decode and Flush.
func (d *NVDEC) ProbeKey(ctx context.Context, au *media.AccessUnit, emit func(*frame.Frame) error) (KeyProbe, error) {
	if d.d == nil {
		return KeyProbe{}, errors.New("codec: NVDEC ProbeKey before Init or after Close")
	}
	p, err := probeKey(d, d.Codec, ctx, au, emit)
	d.synced = false
	return p, err
}

func (d *NVDEC) keyState() *keyState { return &d.key }

// Park emits the pictures the decoder still holds, as Flush does, but keeps the hwaccel set up
// where it can (Decoder.Park): a stream going idle gives back a decoder that is still warm.
func (d *NVDEC) Park(ctx context.Context, emit func(*frame.Frame) error) error {
	if d.d == nil {
		return errors.New("codec: NVDEC Park before Init or after Close")
	}
	err := park(d, d.Codec, ctx, emit)
	d.order.reset()
	d.synced = false
	return err
}

func (d *NVDEC) resetOutput() {
	r := ffmpeg.ResetOutputH264
	C.vf_nvdec_send_quiet(d.d, (*C.uint8_t)(unsafe.Pointer(&r[0])), C.int(len(r))) // refused by design
}

func (d *NVDEC) canPush() bool { return true } // one decoding thread (nvdec.c)

// pushEOS sends an H.264 end of sequence and emits the picture it pushes out.
func (d *NVDEC) pushEOS(ctx context.Context, emit func(*frame.Frame) error) error {
	if r := C.vf_nvdec_push_eos(d.d); r < 0 {
		return &DecodeError{PTS: -1, Reason: "NVDEC rejected the end of sequence", Err: errors.New(averr(r))}
	}
	return d.receive(ctx, emit)
}

// Setups returns how many times FFmpeg set the hwaccel up (a CUVID decoder and its surfaces):
// once per stream, again for a new picture size and, with H.264, after every Flush.
func (d *NVDEC) Setups() int64 {
	if d.d == nil {
		return 0
	}
	return int64(C.vf_nvdec_setups(d.d))
}

// receive emits every picture the decoder has ready.
func (d *NVDEC) receive(ctx context.Context, emit func(*frame.Frame) error) error {
	for {
		// the picture first, a pool frame only for one: a decoder whose consumer holds every
		// frame does not wait to learn that nothing more came out
		r := C.vf_nvdec_receive(d.d, d.scratch)
		if r == C.vf_eagain() || r == C.vf_eof() {
			return nil
		}
		if r < 0 {
			if d.ReorderPTS {
				d.order.lose()
			}
			return &DecodeError{PTS: -1, Reason: "NVDEC lost a picture", Err: errors.New(averr(r))}
		}
		f, err := d.pool.Get(ctx)
		if err != nil {
			C.av_frame_unref(d.scratch)
			return err
		}
		b := f.Backing.(*avFrame)
		C.av_frame_move_ref(b.f, d.scratch)
		C.vf_frame_info_get(b.f, &d.info)
		if d.info.format != C.vf_pix_nv12() {
			f.Release()
			return fmt.Errorf("codec: NVDEC produced surface format %d, want NV12 (8-bit 4:2:0 only)", int(d.info.format))
		}
		f.Format = frame.FormatNV12
		f.Width, f.Height = int(d.info.width), int(d.info.height)
		f.Device = d.Device.Ordinal()
		f.DevicePlanes = [3]uintptr{uintptr(d.info.data0), uintptr(d.info.data1)}
		f.Strides = [3]int{int(d.info.pitch0), int(d.info.pitch1)}
		f.FullRange = d.info.full_range != 0
		f.PTS = time.Duration(d.info.pts)
		if d.ReorderPTS {
			f.PTS = time.Duration(d.order.next(int64(d.info.pts), d.info.key != 0))
		}
		f.Index = d.n
		d.n++
		if err := emit(f); err != nil {
			return err
		}
	}
}

// Close frees the decoder; frames still held stay valid until released.
func (d *NVDEC) Close() error {
	if d.d != nil {
		C.vf_nvdec_close(d.d)
		d.d = nil
	}
	if d.scratch != nil {
		C.av_frame_free(&d.scratch)
	}
	d.lum.free()
	if d.pool != nil {
		return d.pool.Close()
	}
	return nil
}

func averr(r C.int) string {
	var buf [128]C.char
	C.av_strerror(r, &buf[0], C.size_t(len(buf)))
	return C.GoString(&buf[0])
}
