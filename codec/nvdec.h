// FFmpeg cuda-hwaccel (NVDEC) decoder sharing a caller's CUDA context and stream.
#ifndef VINFER_NVDEC_H
#define VINFER_NVDEC_H
#include <stdint.h>
#include <libavcodec/avcodec.h>

typedef struct vf_nvdec vf_nvdec;

// vf_nvdec_open opens a decoder for codec_id whose frames stay in device memory of the CUDA
// context ctx (a CUcontext, the device's primary context), with NVDEC's frame mapping ordered on
// stream (a CUstream). extra is the number of decoded frames the caller may hold at once. On
// failure it returns a negative AVERROR and writes a message into err.
int vf_nvdec_open(vf_nvdec **out, int codec_id, uintptr_t ctx, uintptr_t stream, int extra, char *err, int errlen);
// vf_nvdec_send queues one Annex-B access unit (data NULL: drain); discard: decode it for
// reference only, never output its picture (AV_PKT_FLAG_DISCARD).
int vf_nvdec_send(vf_nvdec *d, const uint8_t *data, int size, int64_t pts, int discard);
// vf_nvdec_receive moves the next decoded frame into dst (0), or returns AVERROR(EAGAIN) /
// AVERROR_EOF.
int vf_nvdec_receive(vf_nvdec *d, AVFrame *dst);
// vf_nvdec_flush resets the decoder after a drain (avcodec_flush_buffers).
void vf_nvdec_flush(vf_nvdec *d);
// vf_nvdec_push_eos sends an H.264 end-of-sequence NAL unit alone: FFmpeg outputs the oldest
// picture held for reordering without ending the stream (the hwaccel stays set up).
int vf_nvdec_push_eos(vf_nvdec *d);
// vf_nvdec_send_quiet is vf_nvdec_send of an access unit the decoder is expected to refuse,
// its log messages lowered below the trace level.
int vf_nvdec_send_quiet(vf_nvdec *d, const uint8_t *data, int size);
// vf_nvdec_setups returns how many times FFmpeg set the hwaccel up (get_format calls).
int64_t vf_nvdec_setups(const vf_nvdec *d);
void vf_nvdec_close(vf_nvdec *d);

// Frame accessors (AVFrame fields, so that Go needs no struct layout).
typedef struct {
	uintptr_t data0, data1;
	int pitch0, pitch1, width, height, format, full_range, key;
	int64_t pts;
} vf_frame_info;
void vf_frame_info_get(const AVFrame *f, vf_frame_info *i);
#endif
