package app

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/media"
	"github.com/vinfer/vinfer/source"
	"github.com/vinfer/vinfer/source/file"
	"github.com/vinfer/vinfer/source/rtp"
	"github.com/vinfer/vinfer/source/rtsp"
)

// OpenSource opens a stream's source from its URL:
//
//	path/to/clip.mp4 | file:///abs/clip.mp4        a file (loop: true restarts it)
//	rtsp://[user:pass@]host[:port]/path              an RTSP camera (transport: tcp|udp|auto)
//	rtp://[host]:port?codec=h264|h265[&pt=96][&ssrc=N][&sdp=FILE]   RTP over UDP
//	gb28181://[host]:port?transport=udp|tcp-passive|tcp-active[&remote=host:port][&ssrc=N]
//
// Errors name the stream and never include credentials.
func OpenSource(s config.Stream) (source.Source, error) {
	raw := s.Source
	scheme, _, hasScheme := strings.Cut(raw, "://")
	if !hasScheme {
		scheme = "file"
	}
	var src interface {
		source.Source
		Init() error
	}
	switch strings.ToLower(scheme) {
	case "file":
		src = &file.Source{Path: strings.TrimPrefix(raw, "file://"), Loop: s.Loop}
	case "rtsp", "rtsps":
		src = &rtsp.Source{URL: raw, Transport: s.Transport}
	case "rtp":
		u, err := url.Parse(raw)
		if err != nil {
			return nil, fmt.Errorf("stream %s: bad rtp URL: %v", s.ID, err)
		}
		q := u.Query()
		r := &rtp.Source{ListenAddr: u.Host, SDPFile: q.Get("sdp")}
		if r.Codec, err = codecParam(q.Get("codec")); err != nil && r.SDPFile == "" {
			return nil, fmt.Errorf("stream %s: %v", s.ID, err)
		}
		pt, _ := strconv.Atoi(q.Get("pt"))
		ssrc, _ := strconv.ParseUint(q.Get("ssrc"), 10, 32)
		r.PayloadType, r.SSRC = uint8(pt), uint32(ssrc)
		src = r
	case "gb28181":
		g, err := gbSource(s, raw)
		if err != nil {
			return nil, err
		}
		src = g
	default:
		return nil, fmt.Errorf("stream %s: unknown source scheme %q (use a file path, rtsp://, rtp:// or gb28181://)", s.ID, scheme)
	}
	if err := src.Init(); err != nil {
		return nil, fmt.Errorf("stream %s: %w", s.ID, err)
	}
	return src, nil
}

func codecParam(v string) (media.Codec, error) {
	switch strings.ToLower(v) {
	case "h264", "avc":
		return media.CodecH264, nil
	case "h265", "hevc":
		return media.CodecH265, nil
	}
	return media.CodecUnknown, fmt.Errorf("codec=%q: give codec=h264 or codec=h265 (or sdp=FILE)", v)
}
