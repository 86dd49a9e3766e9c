// Package send streams a video file, looping and in real time, to a live destination: plain
// RTP (rtp://), an RTSP server it publishes to or an RTSP server of its own (rtsp://), or a
// GB28181 platform (gb28181://, MPEG-PS in RTP over UDP or TCP). It is `vinfer send`: a
// stand-in camera to try live ingest with, without other software.
//
// The file is read by source/file (Annex-B access units with parameter sets before every key
// frame, timestamps continued across loops) and paced by its DTS (file.Pacer). Packetization:
// RFC 6184 / RFC 7798 through gortsplib's encoders; GB/T 28181-2016 Annex C program streams
// through source/gb28181/ps. Plain RTP comes with RTCP sender reports (RFC 3550 §6.4.1) on
// the next port, for a receiver's wall-clock mapping (reporter).
package send

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"strconv"
	"time"

	"github.com/vinfer/vinfer/media"
	"github.com/vinfer/vinfer/source/file"
)

// Options tune Run.
type Options struct {
	// Once plays the file once instead of looping.
	Once bool
	// Serve makes an rtsp:// destination a server of its own (listening on the URL's host and
	// port, serving its path) instead of publishing to one.
	Serve bool
	// Log receives progress and errors; nil: slog.Default().
	Log *slog.Logger
	// Started, when not nil, is called once the destination is ready (a server listening, a
	// publication accepted, a socket open).
	Started func()
	// Roots, when not nil, are the directories the file must lie in.
	Roots []string
}

// target is one kind of destination.
type target interface {
	// write sends one access unit (Annex-B; PTS and DTS from the file).
	write(au *media.AccessUnit) error
	close() error
}

// Errors of Run's arguments.
var (
	ErrScheme = errors.New("destination must be rtp://, rtsp:// or gb28181://")
	ErrCodec  = errors.New("the file's video is neither H.264 nor H.265")
)

// Run streams the file at path to dest until ctx ends (nil then) or, with Options.Once, the
// file ends. Errors: the file cannot be opened, the destination is malformed or cannot be
// reached (RTSP publishing retries with backoff instead, logging each failure).
func Run(ctx context.Context, path, dest string, o Options) error {
	if o.Log == nil {
		o.Log = slog.Default()
	}
	u, err := url.Parse(dest)
	if err != nil {
		return fmt.Errorf("send: destination: %w", err)
	}
	if u.Hostname() == "" && !o.Serve || u.Port() == "" && u.Scheme != "rtsp" {
		return fmt.Errorf("send: destination %q needs host:port", u.Redacted())
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("send: destination %q: port %q must be 1..65535", u.Redacted(), p)
		}
	}
	if o.Serve && u.Scheme != "rtsp" {
		return fmt.Errorf("send: --serve applies to rtsp:// only, not %s://", u.Scheme)
	}
	src := &file.Source{Path: path, Loop: !o.Once, Realtime: true, Roots: o.Roots}
	if err := src.Init(); err != nil {
		src.Close()
		return fmt.Errorf("send: %w", err)
	}
	defer src.Close()
	info := src.Info()
	if info.Codec != media.CodecH264 && info.Codec != media.CodecH265 {
		return fmt.Errorf("send: %s: %w", path, ErrCodec)
	}
	var t target
	switch u.Scheme {
	case "rtp":
		t, err = newRTPTarget(u, info.Codec)
	case "rtsp":
		if o.Serve {
			t, err = newRTSPServer(u, info.Codec, o.Log)
		} else {
			t, err = newRTSPPublisher(ctx, u, info.Codec, o.Log)
		}
	case "gb28181":
		t, err = newGBTarget(ctx, u, info.Codec, o.Log)
	default:
		err = fmt.Errorf("%q: %w", u.Scheme, ErrScheme)
	}
	if err != nil {
		return fmt.Errorf("send: %w", err)
	}
	defer t.close()
	if o.Started != nil {
		o.Started()
	}
	o.Log.Info("sending", "file", path, "codec", info.Codec.String(), "fps", info.FrameRate, "to", u.Redacted(), "loop", !o.Once)
	for {
		au, err := src.Read(ctx)
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, context.Canceled) {
				return nil
			}
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("send: %w", err)
		}
		if err := t.write(au); err != nil {
			return fmt.Errorf("send: %w", err)
		}
	}
}

// query returns parameter name of u as an unsigned integer of bits bits, or def when absent.
func query(u *url.URL, name string, def uint64, bits int) (uint64, error) {
	s := u.Query().Get(name)
	if s == "" {
		return def, nil
	}
	v, err := strconv.ParseUint(s, 10, bits)
	if err != nil {
		return 0, fmt.Errorf("%s=%q: %w", name, s, err)
	}
	return v, nil
}

// ticks90k converts d to 90 kHz RTP clock ticks.
func ticks90k(d time.Duration) uint32 { return uint32(int64(d) * 9 / 100000) }
