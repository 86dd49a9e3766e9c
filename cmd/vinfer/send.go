package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/vinfer/vinfer/send"
)

// sendCmd streams a video file, looping and in real time, to a live destination (package
// send) until SIGINT/SIGTERM: vinfer send [--once] [--serve] FILE URL.
func sendCmd(args []string) error {
	fs := flag.NewFlagSet("send", flag.ContinueOnError)
	once := fs.Bool("once", false, "play the file once instead of looping")
	serve := fs.Bool("serve", false, "rtsp://: be the RTSP server (listen on the URL's host:port, serve its path) instead of publishing to one")
	level := fs.String("log-level", "info", "debug|info|warn|error")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `usage: vinfer send [--once] [--serve] FILE URL
  Streams FILE's H.264/H.265 video (MP4, MKV, MPEG-TS or raw .h264/.h265), looping,
  at its own frame rate, to URL:
    rtp://HOST:PORT[?pt=96][&ssrc=N]            RTP over UDP, parameter sets in-band;
                                                RTCP sender reports to PORT+1 every second
    rtsp://[user:pass@]HOST[:PORT]/PATH[?transport=tcp|udp]
                                                publish to an RTSP server (ANNOUNCE/RECORD)
    --serve rtsp://HOST:PORT/PATH[?rtp_port=N]  serve it as an RTSP server (TCP; UDP with rtp_port); rtsp:// only
    gb28181://HOST:PORT[?transport=udp|tcp|tcp-listen][&ssrc=N]
                                                GB28181 media: MPEG-PS in RTP (ssrc default 100000001)
  PORT is 1..65535.
`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 2 {
		fs.Usage()
		return fmt.Errorf("send: want FILE and URL, got %d arguments", fs.NArg())
	}
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(*level)); err != nil {
		return fmt.Errorf("send: --log-level: %w", err)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: lv}))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return send.Run(ctx, fs.Arg(0), fs.Arg(1), send.Options{Once: *once, Serve: *serve, Log: log})
}
