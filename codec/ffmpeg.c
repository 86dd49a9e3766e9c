#include <string.h>
#include <libavutil/pixdesc.h>
#include "ffmpeg.h"

struct vc_dec {
	AVCodecContext *cc;
	AVPacket *pkt;
};

int vc_dec_open(vc_dec **out, int codec_id, int threads, char *err, int errlen) {
	const AVCodec *c = avcodec_find_decoder((enum AVCodecID)codec_id);
	if (!c) {
		snprintf(err, errlen, "FFmpeg has no decoder for %s", avcodec_get_name((enum AVCodecID)codec_id));
		return AVERROR_DECODER_NOT_FOUND;
	}
	vc_dec *d = calloc(1, sizeof *d);
	d->cc = avcodec_alloc_context3(c);
	d->pkt = av_packet_alloc();
	if (!d || !d->cc || !d->pkt) {
		snprintf(err, errlen, "out of memory");
		vc_dec_close(d);
		return AVERROR(ENOMEM);
	}
	d->cc->thread_count = threads > 0 ? threads : 1;
	d->cc->thread_type = threads > 1 ? (FF_THREAD_FRAME | FF_THREAD_SLICE) : 0;
	d->cc->pkt_timebase = (AVRational){1, 1000000000};
	int ret = avcodec_open2(d->cc, c, NULL);
	if (ret < 0) {
		av_strerror(ret, err, errlen);
		vc_dec_close(d);
		return ret;
	}
	*out = d;
	return 0;
}

int vc_dec_send(vc_dec *d, const uint8_t *data, int size, int64_t pts, int key, int discard) {
	if (!data) return avcodec_send_packet(d->cc, NULL);
	// Not reference counted: avcodec_send_packet copies the bytes, so data may be Go memory.
	d->pkt->data = (uint8_t *)data;
	d->pkt->size = size;
	d->pkt->pts = pts;
	d->pkt->dts = AV_NOPTS_VALUE;
	d->pkt->flags = (key ? AV_PKT_FLAG_KEY : 0) | (discard ? AV_PKT_FLAG_DISCARD : 0);
	int ret = avcodec_send_packet(d->cc, d->pkt);
	d->pkt->data = NULL;
	d->pkt->size = 0;
	return ret;
}

int vc_dec_receive(vc_dec *d, AVFrame *dst) { return avcodec_receive_frame(d->cc, dst); }

void vc_dec_flush(vc_dec *d) { avcodec_flush_buffers(d->cc); }

void vc_dec_close(vc_dec *d) {
	if (!d) return;
	avcodec_free_context(&d->cc);
	av_packet_free(&d->pkt);
	free(d);
}

void vc_frame_info_get(const AVFrame *f, vc_frame_info *i) {
	for (int k = 0; k < 3; k++) {
		i->data[k] = f->data[k];
		i->linesize[k] = f->linesize[k];
	}
	i->width = f->width;
	i->height = f->height;
	switch (f->format) {
	case AV_PIX_FMT_YUV420P: i->format = 1; i->full_range = f->color_range == AVCOL_RANGE_JPEG; break;
	case AV_PIX_FMT_YUVJ420P: i->format = 1; i->full_range = 1; break;
	case AV_PIX_FMT_NV12: i->format = 2; i->full_range = f->color_range == AVCOL_RANGE_JPEG; break;
	default: i->format = 0;
	}
	i->corrupt = (f->flags & AV_FRAME_FLAG_CORRUPT) != 0;
	i->pts = f->best_effort_timestamp != AV_NOPTS_VALUE ? f->best_effort_timestamp : f->pts;
}

const char *vc_pix_fmt_name(const AVFrame *f) {
	const char *n = av_get_pix_fmt_name((enum AVPixelFormat)f->format);
	return n ? n : "unknown";
}
