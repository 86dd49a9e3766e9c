package rtp

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/vinfer/vinfer/internal/sourcetest"
	"github.com/vinfer/vinfer/source/live"
)

// TestSourceFFmpeg receives the shared clips from Debian's ffmpeg (`-f rtp`, stream copy):
// every access unit must arrive byte-exact, with PTS following the file's, and RTCP sender
// reports must give a capture time.
func TestSourceFFmpeg(t *testing.T) {
	for _, name := range clips {
		t.Run(name, func(t *testing.T) {
			c := sourcetest.LoadClip(t, name)
			path := sourcetest.Asset(t, name)
			port := sourcetest.UDPPortPair(t)
			src := &Source{ListenAddr: fmt.Sprintf("127.0.0.1:%d", port), SDPFile: sourcetest.FFmpegSDP(t, path), QueueSize: testQueue}
			if err := src.Init(); err != nil {
				t.Fatal(err)
			}
			defer src.Close()
			ff := sourcetest.FFmpegRTP(t, path, port, 6)
			m := &sourcetest.Matcher{Clip: c}
			var wall time.Time
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			for m.Matched < len(c.Samples) {
				au, err := src.Read(ctx)
				if err != nil {
					out, _ := ff.Wait(0)
					t.Fatalf("read after %d of %d access units: %v (stats %+v, ffmpeg: %s)", m.Matched, len(c.Samples), err, src.Stats(), out)
				}
				m.Check(t, au)
				if !au.Wallclock.IsZero() {
					wall = au.Wallclock
				}
			}
			st := src.Stats()
			t.Logf("stats %+v", st)
			if m.Skipped != 0 || st.Lost != 0 || st.Dropped != 0 {
				t.Fatalf("skipped %d samples; stats %+v", m.Skipped, st)
			}
			if st.SenderReports == 0 || wall.IsZero() || time.Since(wall).Abs() > time.Minute {
				t.Fatalf("no capture time from RTCP: %d sender reports, last wall-clock %v", st.SenderReports, wall)
			}
			if info := src.Info(); info.Width != 768 || info.Height != 432 || info.Codec != c.Codec {
				t.Fatalf("info %+v", info)
			}
		})
	}
}

// TestSourceGarbage mixes datagrams that are not RTP into a stream, and runs a second source
// on another port at the same time: garbage is counted and ignored, both streams arrive whole.
func TestSourceGarbageAndTwoStreams(t *testing.T) {
	var srcs []*Source
	var ffs []*sourcetest.Process
	var ms []*sourcetest.Matcher
	ports := []int{}
	for _, name := range clips {
		c := sourcetest.LoadClip(t, name)
		path := sourcetest.Asset(t, name)
		port := sourcetest.UDPPortPair(t)
		src := &Source{ListenAddr: fmt.Sprintf("127.0.0.1:%d", port), SDPFile: sourcetest.FFmpegSDP(t, path), QueueSize: testQueue}
		if err := src.Init(); err != nil {
			t.Fatal(err)
		}
		defer src.Close()
		srcs, ports = append(srcs, src), append(ports, port)
		ms = append(ms, &sourcetest.Matcher{Clip: c})
		ffs = append(ffs, sourcetest.FFmpegRTP(t, path, port, 6))
	}
	_ = ffs
	garbage := sourcetest.SendGarbage(t, fmt.Sprintf("127.0.0.1:%d", ports[0]), 200, 5*time.Millisecond)
	errs := make(chan error, len(srcs))
	for i, src := range srcs {
		go func() {
			defer func() { errs <- nil }()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			for ms[i].Matched < len(ms[i].Clip.Samples) {
				au, err := src.Read(ctx)
				if err != nil {
					t.Errorf("stream %d: read after %d: %v", i, ms[i].Matched, err)
					return
				}
				if err := ms[i].Match(au); err != nil {
					t.Errorf("stream %d: %v", i, err)
					return
				}
			}
		}()
	}
	for range srcs {
		<-errs
	}
	if t.Failed() {
		return
	}
	st := srcs[0].Stats()
	if st.Garbage != uint64(garbage()) || st.Lost != 0 {
		t.Fatalf("garbage %d of %d sent; stats %+v", st.Garbage, garbage(), st)
	}
	if st := srcs[1].Stats(); st.Garbage != 0 || st.Lost != 0 {
		t.Fatalf("second stream: %+v", st)
	}
}

var _ = live.Stats{}
