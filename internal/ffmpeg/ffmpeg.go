// Package ffmpeg makes the few FFmpeg calls of vinfer's hot paths that go-astiav v0.16.0 cannot
// make without a Go allocation or a copy: viewing a packet's payload in place, feeding a decoder
// from a byte slice, and receiving packets and frames without turning "try again" into a heap
// allocated error value. Everything else (opening files, codec contexts, bitstream filters,
// swscale) goes through astiav.
//
// astiav v0.16.0 exposes the C object of a Frame only (Frame.UnsafePointer). Its Packet,
// CodecContext and BitStreamFilterContext wrappers hold their C pointer in their first field,
// which is where this package reads it; CheckLayout verifies that assumption at run time (the
// callers run it in Init), so an astiav upgrade that changes the layout fails with an error
// instead of corrupting memory. Later astiav releases add UnsafePointer to every type: switch
// to it when upgrading.
package ffmpeg

/*
#cgo pkg-config: libavcodec libavutil
#include <errno.h>
#include <string.h>
#include <libavcodec/avcodec.h>
#include <libavcodec/bsf.h>
#include <libavutil/frame.h>
#include <libavutil/mem.h>

// vinfer_send copies size bytes of data into pkt (reusing its buffer when nobody else holds a
// reference to it) and sends pkt to the decoder; data == NULL sends the end-of-stream marker.
static int vinfer_send(AVCodecContext *cc, AVPacket *pkt, const uint8_t *data, int size,
                       int64_t pts, int64_t dts, int flags) {
	if (data == NULL) {
		return avcodec_send_packet(cc, NULL);
	}
	if (pkt->buf == NULL || !av_buffer_is_writable(pkt->buf) ||
	    pkt->buf->size < (size_t)size + AV_INPUT_BUFFER_PADDING_SIZE) {
		av_packet_unref(pkt);
		int err = av_new_packet(pkt, size);
		if (err < 0) {
			return err;
		}
	} else {
		pkt->data = pkt->buf->data;
		pkt->size = size;
		memset(pkt->data + size, 0, AV_INPUT_BUFFER_PADDING_SIZE);
	}
	memcpy(pkt->data, data, size);
	pkt->pts = pts;
	pkt->dts = dts;
	pkt->duration = 0;
	pkt->pos = -1;
	pkt->flags = flags;
	return avcodec_send_packet(cc, pkt);
}

typedef struct {
	uint8_t *data[4];
	int linesize[4];
	int width, height, format, color_range;
	int64_t pts, best_effort_ts;
	int decode_error_flags, corrupt, key;
} vinfer_frame_info;

static void vinfer_frame_info_get(const AVFrame *f, vinfer_frame_info *o) {
	for (int i = 0; i < 4; i++) {
		o->data[i] = f->data[i];
		o->linesize[i] = f->linesize[i];
	}
	o->width = f->width;
	o->height = f->height;
	o->format = f->format;
	o->color_range = f->color_range;
	o->pts = f->pts;
	o->best_effort_ts = f->best_effort_timestamp;
	o->decode_error_flags = f->decode_error_flags;
	o->corrupt = (f->flags & AV_FRAME_FLAG_CORRUPT) != 0 || f->decode_error_flags != 0;
	o->key = f->key_frame;
}

static void vinfer_set_skip_nonref(AVCodecContext *cc, int on) {
	cc->skip_frame = on ? AVDISCARD_NONREF : AVDISCARD_DEFAULT;
}

// vinfer_get_format counts the decoder's (re)initialisations: FFmpeg calls get_format when it
// sets a decoder up for a stream's parameters (first picture, a new size or format, and, for
// H.264, the first picture after avcodec_flush_buffers). cc->opaque holds the counter.
static enum AVPixelFormat vinfer_get_format(AVCodecContext *cc, const enum AVPixelFormat *fmts) {
	if (cc->opaque) __atomic_add_fetch((int64_t *)cc->opaque, 1, __ATOMIC_RELAXED);
	return avcodec_default_get_format(cc, fmts);
}

static int64_t *vinfer_count_setups(AVCodecContext *cc) {
	int64_t *n = av_mallocz(sizeof(*n));
	if (!n) return NULL;
	cc->opaque = n;
	cc->get_format = vinfer_get_format;
	return n;
}

// vinfer_send_quiet is vinfer_send with cc's log messages lowered below the trace level (an
// input refused on purpose, ResetOutputH264).
static int vinfer_send_quiet(AVCodecContext *cc, AVPacket *pkt, const uint8_t *data, int size) {
	int offset = cc->log_level_offset;
	cc->log_level_offset = offset + 64;
	int ret = vinfer_send(cc, pkt, data, size, AV_NOPTS_VALUE, AV_NOPTS_VALUE, 0);
	cc->log_level_offset = offset;
	return ret;
}

static int64_t vinfer_setups(const int64_t *n) { return n ? __atomic_load_n(n, __ATOMIC_RELAXED) : 0; }

static void vinfer_set_pkt_timebase(AVCodecContext *cc, int num, int den) {
	cc->pkt_timebase.num = num;
	cc->pkt_timebase.den = den;
}
*/
import "C"

import (
	"errors"
	"fmt"
	"sync"
	"unsafe"

	"github.com/asticode/go-astiav"
)

// Status is the outcome of a receive call that did not fail.
type Status int

// Receive outcomes.
const (
	// OK: a packet or frame was received.
	OK Status = iota
	// Again: the filter or decoder needs more input first (AVERROR(EAGAIN)).
	Again
	// EOF: the filter or decoder is fully drained (AVERROR_EOF).
	EOF
)

var (
	errAgain = int(C.int(-C.EAGAIN))
	errEOF   = int(C.AVERROR_EOF)
)

// cptr returns the C object behind an astiav wrapper: the first word of the wrapper (see the
// package doc and CheckLayout).
func cptr[T astiav.Packet | astiav.CodecContext | astiav.BitStreamFilterContext](v *T) unsafe.Pointer {
	return *(*unsafe.Pointer)(unsafe.Pointer(v))
}

func packet(p *astiav.Packet) *C.AVPacket { return (*C.AVPacket)(cptr(p)) }

func codecContext(cc *astiav.CodecContext) *C.AVCodecContext {
	return (*C.AVCodecContext)(cptr(cc))
}

var layout = sync.OnceValue(checkLayout)

// CheckLayout verifies that the astiav wrappers this package reads hold their C object where
// it expects; it returns an error naming the wrapper otherwise. The result is computed once.
func CheckLayout() error { return layout() }

func checkLayout() error {
	p := astiav.AllocPacket()
	if p == nil {
		return errors.New("ffmpeg: av_packet_alloc failed (out of memory)")
	}
	defer p.Free()
	if err := p.AllocPayload(37); err != nil {
		return fmt.Errorf("ffmpeg: av_new_packet: %w", err)
	}
	p.SetPts(-12345)
	if c := packet(p); c == nil || c.size != 37 || c.pts != -12345 {
		return errors.New("ffmpeg: go-astiav's Packet layout is not the one this package was " +
			"written for (v0.16.0): update internal/ffmpeg")
	}
	cc := astiav.AllocCodecContext(nil)
	if cc == nil {
		return errors.New("ffmpeg: avcodec_alloc_context3 failed (out of memory)")
	}
	defer cc.Free()
	cc.SetWidth(4321)
	cc.SetHeight(1234)
	if c := codecContext(cc); c == nil || c.width != 4321 || c.height != 1234 {
		return errors.New("ffmpeg: go-astiav's CodecContext layout is not the one this package " +
			"was written for (v0.16.0): update internal/ffmpeg")
	}
	f := astiav.FindBitStreamFilterByName("null")
	if f == nil {
		return errors.New("ffmpeg: FFmpeg's null bitstream filter is missing")
	}
	bsf, err := astiav.AllocBitStreamFilterContext(f)
	if err != nil {
		return fmt.Errorf("ffmpeg: av_bsf_alloc: %w", err)
	}
	defer bsf.Free()
	bsf.SetInputTimeBase(astiav.NewRational(7, 9000))
	if c := (*C.AVBSFContext)(cptr(bsf)); c == nil || c.time_base_in.num != 7 || c.time_base_in.den != 9000 {
		return errors.New("ffmpeg: go-astiav's BitStreamFilterContext layout is not the one " +
			"this package was written for (v0.16.0): update internal/ffmpeg")
	}
	return nil
}

// PacketData returns the payload of p in place (no copy): valid until p is unreferenced or
// reused. Nil for an empty packet.
func PacketData(p *astiav.Packet) []byte {
	c := packet(p)
	if c.data == nil || c.size <= 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(c.data)), int(c.size))
}

// status maps an FFmpeg return code of a receive call.
func status(ret C.int) (Status, error) {
	switch r := int(ret); {
	case r >= 0:
		return OK, nil
	case r == errAgain:
		return Again, nil
	case r == errEOF:
		return EOF, nil
	default:
		return OK, astiav.Error(r)
	}
}

// ReceivePacket takes the next filtered packet from bsf into p (av_bsf_receive_packet).
func ReceivePacket(bsf *astiav.BitStreamFilterContext, p *astiav.Packet) (Status, error) {
	return status(C.av_bsf_receive_packet((*C.AVBSFContext)(cptr(bsf)), packet(p)))
}

// ReceiveFrame takes the next decoded picture from cc into f (avcodec_receive_frame).
func ReceiveFrame(cc *astiav.CodecContext, f *astiav.Frame) (Status, error) {
	return status(C.avcodec_receive_frame(codecContext(cc), (*C.AVFrame)(f.UnsafePointer())))
}

// Packet flags for SendPacket.
const (
	FlagKey     = int(C.AV_PKT_FLAG_KEY)     // a key frame
	FlagDiscard = int(C.AV_PKT_FLAG_DISCARD) // decode for reference, do not output
)

// SendPacket copies data into scratch (whose buffer is reused while the decoder holds no
// reference to it) and sends it to cc (avcodec_send_packet) with the given timestamps in cc's
// packet time base and flags (FlagKey, FlagDiscard). A nil data sends the end-of-stream marker
// that starts draining. It returns Again when the decoder must be drained first, EOF when it
// was already sent the end of stream, and FFmpeg's error for a packet it rejects.
func SendPacket(cc *astiav.CodecContext, scratch *astiav.Packet, data []byte, pts, dts int64, flags int) (Status, error) {
	var ptr *C.uint8_t
	if data != nil {
		ptr = (*C.uint8_t)(unsafe.Pointer(unsafe.SliceData(data)))
		if len(data) == 0 {
			return OK, nil
		}
	}
	return status(C.vinfer_send(codecContext(cc), packet(scratch), ptr, C.int(len(data)),
		C.int64_t(pts), C.int64_t(dts), C.int(flags)))
}

// SetPacketTimeBase sets cc's pkt_timebase, the unit of the timestamps given to SendPacket.
func SetPacketTimeBase(cc *astiav.CodecContext, num, den int) {
	C.vinfer_set_pkt_timebase(codecContext(cc), C.int(num), C.int(den))
}

// SetSkipNonRef makes cc skip non-reference pictures (skip_frame = AVDISCARD_NONREF; on false,
// AVDISCARD_DEFAULT): they are parsed, never decoded, and never come out.
func SetSkipNonRef(cc *astiav.CodecContext, on bool) {
	v := 0
	if on {
		v = 1
	}
	C.vinfer_set_skip_nonref(codecContext(cc), C.int(v))
}

// Setups counts a decoder's set-ups (get_format calls: the first picture, a new picture size
// or format, and for H.264 the first picture after FlushDecoder, which frees the decoder's
// tables; a hardware decoder is rebuilt each time). Free it after freeing the codec context.
type Setups struct{ n *C.int64_t }

// CountSetups makes cc count its set-ups; call it before opening cc. It replaces cc's
// get_format with FFmpeg's default choice plus the count, and uses cc's opaque field.
func CountSetups(cc *astiav.CodecContext) *Setups {
	return &Setups{n: C.vinfer_count_setups(codecContext(cc))}
}

// N returns the set-ups so far (0 after Free or when the counter could not be allocated).
func (s *Setups) N() int64 {
	if s == nil {
		return 0
	}
	return int64(C.vinfer_setups(s.n))
}

// Free frees the counter; call it after the codec context was freed.
func (s *Setups) Free() {
	if s != nil && s.n != nil {
		C.av_free(unsafe.Pointer(s.n))
		s.n = nil
	}
}

// EndOfSequenceH264 is an H.264 end-of-sequence NAL unit (ITU-T H.264 §7.4.1.2.3,
// nal_unit_type 10) with its start code. Sent alone after a picture, it makes FFmpeg's H.264
// decoder output the oldest picture it holds for reordering, as an end of stream would, but
// without ending the stream: the decoder keeps its set-up (FlushDecoder would free it).
var EndOfSequenceH264 = []byte{0, 0, 0, 1, 0x0a}

// ResetOutputH264 is a malformed H.264 access unit that resets only what FFmpeg 5.1's H.264
// decoder remembers of the pictures it output (next_outputed_poc), without freeing its set-up
// as FlushDecoder does: an IDR slice NAL unit whose slice header says P, which the decoder
// refuses (AVERROR_INVALIDDATA, "Invalid inter IDR frame" at the error log level: ResetOutput
// keeps it out of the log) before touching anything else. Sent after EndOfSequenceH264 pushed every held picture out, it lets
// the decoder start on another stream's IDR as after a reset: otherwise that stream's pictures
// whose POC is below the last one output are dropped as out of order.
var ResetOutputH264 = []byte{0, 0, 0, 1, 0x65, 0x98, 0x80}

// ResetOutput sends ResetOutputH264 to cc, through scratch, without the error FFmpeg logs for
// it (the refusal it returns is the point and is not reported).
func ResetOutput(cc *astiav.CodecContext, scratch *astiav.Packet) {
	r := ResetOutputH264
	C.vinfer_send_quiet(codecContext(cc), packet(scratch), (*C.uint8_t)(unsafe.Pointer(&r[0])), C.int(len(r)))
}

// HasIDR reports whether the H.264 Annex-B access unit au holds an IDR slice (nal_unit_type
// 5), after which the decoder holds no reference of an earlier stream.
func HasIDR(au []byte) bool {
	for i := 0; i+3 < len(au); i++ {
		if au[i] == 0 && au[i+1] == 0 && au[i+2] == 1 {
			switch au[i+3] & 0x1f {
			case 5:
				return true
			case 1: // a non-IDR slice: an access unit's slices are all IDR or none (§7.4.1.2.4)
				return false
			}
			i += 2
		}
	}
	return false
}

// FrameInfo is what a decoder needs of an AVFrame, read in one cgo call.
type FrameInfo struct {
	// Data are the plane pointers (C memory) and Linesize their strides in bytes.
	Data     [4]unsafe.Pointer
	Linesize [4]int
	// Width and Height in pixels; Format is the AVPixelFormat.
	Width, Height int
	Format        astiav.PixelFormat
	// ColorRange is the AVColorRange.
	ColorRange astiav.ColorRange
	// PTS and BestEffortTS in the packet time base; astiav.NoPtsValue when unknown.
	PTS, BestEffortTS int64
	// DecodeErrorFlags is AVFrame.decode_error_flags (FF_DECODE_ERROR_*: invalid bitstream,
	// missing reference, concealment active). Corrupt reports that the picture is damaged: it
	// has decode error flags, or AV_FRAME_FLAG_CORRUPT (decoded before a recovery point).
	DecodeErrorFlags int
	Corrupt          bool
	// Key reports a key frame.
	Key bool

	c C.vinfer_frame_info
}

// Read fills i from f. i must not be on the stack of a hot loop's caller: keep it in a struct
// that lives on the heap (cgo arguments escape).
func (i *FrameInfo) Read(f *astiav.Frame) {
	C.vinfer_frame_info_get((*C.AVFrame)(f.UnsafePointer()), &i.c)
	for k := 0; k < 4; k++ {
		i.Data[k] = unsafe.Pointer(i.c.data[k])
		i.Linesize[k] = int(i.c.linesize[k])
	}
	i.Width, i.Height = int(i.c.width), int(i.c.height)
	i.Format = astiav.PixelFormat(i.c.format)
	i.ColorRange = astiav.ColorRange(i.c.color_range)
	i.PTS, i.BestEffortTS = int64(i.c.pts), int64(i.c.best_effort_ts)
	i.DecodeErrorFlags = int(i.c.decode_error_flags)
	i.Corrupt = i.c.corrupt != 0
	i.Key = i.c.key != 0
}

// FlushFilter resets bsf's state (av_bsf_flush): it accepts packets again after end of stream.
func FlushFilter(bsf *astiav.BitStreamFilterContext) {
	C.av_bsf_flush((*C.AVBSFContext)(cptr(bsf)))
}

// FlushDecoder resets cc (avcodec_flush_buffers): buffered pictures are dropped and it accepts
// packets again after end of stream.
func FlushDecoder(cc *astiav.CodecContext) {
	C.avcodec_flush_buffers(codecContext(cc))
}

// Version returns the linked libavcodec's version, e.g. "59.37.100" (FFmpeg 5.1).
func Version() string {
	v := uint32(C.avcodec_version())
	return fmt.Sprintf("%d.%d.%d", v>>16, v>>8&0xff, v&0xff)
}
