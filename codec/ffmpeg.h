// FFmpeg (libavcodec) software decoder for Annex-B H.264/H.265 access units.
#ifndef VINFER_FFMPEG_DEC_H
#define VINFER_FFMPEG_DEC_H
#include <stdint.h>
#include <libavcodec/avcodec.h>

typedef struct vc_dec vc_dec;

// vc_dec_open opens a decoder for codec_id using threads threads (slice+frame threading when >1).
// On failure it returns a negative AVERROR and writes a message into err.
int vc_dec_open(vc_dec **out, int codec_id, int threads, char *err, int errlen);
// vc_dec_send queues one access unit (data NULL: drain); the bytes are copied. A discard
// access unit is decoded for reference but its picture is not output.
int vc_dec_send(vc_dec *d, const uint8_t *data, int size, int64_t pts, int key, int discard);
// vc_dec_receive moves the next decoded frame into dst (0), or AVERROR(EAGAIN) / AVERROR_EOF.
int vc_dec_receive(vc_dec *d, AVFrame *dst);
// vc_dec_flush drops buffered frames (after a discontinuity).
void vc_dec_flush(vc_dec *d);
void vc_dec_close(vc_dec *d);

typedef struct {
	uint8_t *data[3];
	int linesize[3];
	int width, height, format, full_range, corrupt;
	int64_t pts;
} vc_frame_info;
// vc_frame_info_get reads f's fields; format is 1 for yuv420p/yuvj420p, 2 for nv12, 0 otherwise.
void vc_frame_info_get(const AVFrame *f, vc_frame_info *i);
const char *vc_pix_fmt_name(const AVFrame *f);
#endif
