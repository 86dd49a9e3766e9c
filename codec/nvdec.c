#include <stdio.h>
#include <string.h>
#include <libavutil/hwcontext.h>
#include <libavutil/pixdesc.h>
#include "nvdec.h"

// AVCUDADeviceContext as declared by libavutil/hwcontext_cuda.h, whose include of <cuda.h>
// (CUDA toolkit) vinfer avoids: two handles and FFmpeg's private state.
typedef struct {
	void *cuda_ctx;
	void *stream;
	void *internal;
} vf_AVCUDADeviceContext;

struct vf_nvdec {
	AVCodecContext *cc;
	AVBufferRef *dev;
	AVPacket *pkt;
	int64_t setups; // get_format calls: the hwaccel (a CUVID decoder and its surfaces) made anew
};

static enum AVPixelFormat get_format(AVCodecContext *cc, const enum AVPixelFormat *fmts) {
	((vf_nvdec *)cc->opaque)->setups++;
	for (const enum AVPixelFormat *p = fmts; *p != AV_PIX_FMT_NONE; p++)
		if (*p == AV_PIX_FMT_CUDA) return *p;
	av_log(cc, AV_LOG_ERROR, "NVDEC cannot decode this stream (profile or chroma format unsupported)\n");
	return AV_PIX_FMT_NONE;
}

int vf_nvdec_open(vf_nvdec **out, int codec_id, uintptr_t ctx, uintptr_t stream, int extra, char *err, int errlen) {
	int ret;
	*out = NULL;
	const AVCodec *codec = avcodec_find_decoder(codec_id);
	if (!codec) {
		snprintf(err, errlen, "FFmpeg has no decoder for codec id %d", codec_id);
		return AVERROR_DECODER_NOT_FOUND;
	}
	int hw = 0;
	for (int i = 0;; i++) {
		const AVCodecHWConfig *c = avcodec_get_hw_config(codec, i);
		if (!c) break;
		if ((c->methods & AV_CODEC_HW_CONFIG_METHOD_HW_DEVICE_CTX) && c->device_type == AV_HWDEVICE_TYPE_CUDA) hw = 1;
	}
	if (!hw) {
		snprintf(err, errlen, "FFmpeg's %s decoder was built without the cuda hwaccel (nvdec)", codec->name);
		return AVERROR_DECODER_NOT_FOUND;
	}
	vf_nvdec *d = av_mallocz(sizeof(*d));
	if (!d) return AVERROR(ENOMEM);
	d->dev = av_hwdevice_ctx_alloc(AV_HWDEVICE_TYPE_CUDA);
	if (!d->dev) { ret = AVERROR(ENOMEM); goto fail; }
	vf_AVCUDADeviceContext *cu = ((AVHWDeviceContext *)d->dev->data)->hwctx;
	cu->cuda_ctx = (void *)ctx; // not owned: FFmpeg neither retains nor destroys a context it did not create
	cu->stream = (void *)stream;
	if ((ret = av_hwdevice_ctx_init(d->dev)) < 0) {
		snprintf(err, errlen, "initializing FFmpeg's CUDA device context: %s", av_err2str(ret));
		goto fail;
	}
	d->cc = avcodec_alloc_context3(codec);
	d->pkt = av_packet_alloc();
	if (!d->cc || !d->pkt) { ret = AVERROR(ENOMEM); goto fail; }
	d->cc->hw_device_ctx = av_buffer_ref(d->dev);
	d->cc->get_format = get_format;
	d->cc->opaque = d;
	d->cc->extra_hw_frames = extra;
	d->cc->thread_count = 1;
	d->cc->pkt_timebase = (AVRational){1, 1000000000};
	if ((ret = avcodec_open2(d->cc, codec, NULL)) < 0) {
		snprintf(err, errlen, "opening %s decoder: %s", codec->name, av_err2str(ret));
		goto fail;
	}
	*out = d;
	return 0;
fail:
	vf_nvdec_close(d);
	return ret;
}

int vf_nvdec_send(vf_nvdec *d, const uint8_t *data, int size, int64_t pts, int discard) {
	if (!data) return avcodec_send_packet(d->cc, NULL);
	// Not reference counted: avcodec_send_packet copies the bytes, so data may be Go memory.
	d->pkt->data = (uint8_t *)data;
	d->pkt->size = size;
	d->pkt->pts = pts;
	d->pkt->dts = AV_NOPTS_VALUE;
	d->pkt->flags = discard ? AV_PKT_FLAG_DISCARD : 0; // decoded as a reference, not output
	int ret = avcodec_send_packet(d->cc, d->pkt);
	d->pkt->data = NULL;
	d->pkt->size = 0;
	d->pkt->flags = 0;
	return ret;
}

int vf_nvdec_receive(vf_nvdec *d, AVFrame *dst) {
	int ret = avcodec_receive_frame(d->cc, dst);
	if (ret == 0 && dst->format != AV_PIX_FMT_CUDA) {
		av_frame_unref(dst);
		return AVERROR(ENOSYS); // software fallback frame: not expected with get_format above
	}
	return ret;
}

void vf_nvdec_flush(vf_nvdec *d) { avcodec_flush_buffers(d->cc); }

int vf_nvdec_push_eos(vf_nvdec *d) {
	static const uint8_t eos[5 + AV_INPUT_BUFFER_PADDING_SIZE] = {0, 0, 0, 1, 0x0a};
	d->pkt->data = (uint8_t *)eos;
	d->pkt->size = 5;
	d->pkt->pts = AV_NOPTS_VALUE;
	d->pkt->dts = AV_NOPTS_VALUE;
	int ret = avcodec_send_packet(d->cc, d->pkt);
	d->pkt->data = NULL;
	d->pkt->size = 0;
	return ret;
}

int64_t vf_nvdec_setups(const vf_nvdec *d) { return d->setups; }

int vf_nvdec_send_quiet(vf_nvdec *d, const uint8_t *data, int size) {
	int offset = d->cc->log_level_offset;
	d->cc->log_level_offset = offset + 64; // below the trace level: a refusal expected
	int ret = vf_nvdec_send(d, data, size, AV_NOPTS_VALUE, 0);
	d->cc->log_level_offset = offset;
	return ret;
}

void vf_nvdec_close(vf_nvdec *d) {
	if (!d) return;
	avcodec_free_context(&d->cc);
	av_packet_free(&d->pkt);
	av_buffer_unref(&d->dev);
	av_free(d);
}

void vf_frame_info_get(const AVFrame *f, vf_frame_info *i) {
	i->data0 = (uintptr_t)f->data[0];
	i->data1 = (uintptr_t)f->data[1];
	i->pitch0 = f->linesize[0];
	i->pitch1 = f->linesize[1];
	i->width = f->width;
	i->height = f->height;
	i->format = AV_PIX_FMT_NONE;
	if (f->hw_frames_ctx) i->format = ((AVHWFramesContext *)f->hw_frames_ctx->data)->sw_format;
	i->full_range = f->color_range == AVCOL_RANGE_JPEG;
#ifdef AV_FRAME_FLAG_KEY
	i->key = (f->flags & AV_FRAME_FLAG_KEY) != 0;
#else
	i->key = f->key_frame; // FFmpeg before 6.1
#endif
	i->pts = f->best_effort_timestamp != AV_NOPTS_VALUE ? f->best_effort_timestamp : f->pts;
}
