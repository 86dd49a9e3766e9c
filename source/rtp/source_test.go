package rtp

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/vinfer/vinfer/codec"
	"github.com/vinfer/vinfer/frame"
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
			src := &Source{ListenAddr: fmt.Sprintf("127.0.0.1:%d", port), SDPFile: sourcetest.FFmpegSDP(t, path)}
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

// TestSourceLoss sends a clip through a relay that drops 5% of the packets for the first
// seconds: nothing damaged may be delivered, loss is counted, and delivery resumes at a key
// frame, from which FFmpeg decodes every access unit delivered.
func TestSourceLoss(t *testing.T) {
	name := clips[0]
	c := sourcetest.LoadClip(t, name)
	path := sourcetest.Asset(t, name)
	port := sourcetest.UDPPortPair(t)
	src := &Source{ListenAddr: fmt.Sprintf("127.0.0.1:%d", port), SDPFile: sourcetest.FFmpegSDP(t, path), RTCPAddr: "none"}
	if err := src.Init(); err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	relay := sourcetest.NewRelay(t, 0, fmt.Sprintf("127.0.0.1:%d", port), 0.05, 42)
	sourcetest.FFmpegRTP(t, path, relay.Port(), 6)
	time.AfterFunc(2*time.Second, func() { relay.Lossy.Store(false) }) // about 12 s of the clip
	m := &sourcetest.Matcher{Clip: c, ContinuousPTS: true}
	dec := &codec.Decoder{Codec: c.Codec}
	if err := dec.Init(); err != nil {
		t.Fatal(err)
	}
	defer dec.Close()
	decoded := 0
	emit := func(f *frame.Frame) error {
		decoded++
		f.Release()
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for m.Last != len(c.Samples)-1 {
		au, err := src.Read(ctx)
		if err != nil {
			t.Fatalf("read after %d access units: %v", m.Matched, err)
		}
		m.Check(t, au)
		// what the source delivers after loss is decodable: FFmpeg rejects nothing
		if err := dec.Decode(ctx, au, emit); err != nil {
			t.Fatalf("access unit %d (sample %d, discontinuity %v): %v", m.Matched, m.Last, au.Discontinuity, err)
		}
	}
	if err := dec.Flush(ctx, emit); err != nil {
		t.Fatal(err)
	}
	if decoded != m.Matched {
		t.Fatalf("decoded %d frames from %d access units", decoded, m.Matched)
	}
	st := src.Stats()
	t.Logf("relay dropped %d of %d packets; matcher: %d matched, %d skipped, %d discontinuities; stats %+v",
		relay.Dropped.Load(), relay.Dropped.Load()+relay.Passed.Load(), m.Matched, m.Skipped, m.Discontinuities, st)
	// Every packet the relay dropped is counted lost; a loaded host may drop more in the
	// socket buffer, which is loss too.
	if relay.Dropped.Load() == 0 || st.Lost < uint64(relay.Dropped.Load()) {
		t.Fatalf("lost %d, relay dropped %d", st.Lost, relay.Dropped.Load())
	}
	if m.Discontinuities == 0 || st.Discontinuities != uint64(m.Discontinuities) || st.Dropped == 0 || st.TimestampJumps != 0 {
		t.Fatalf("no resumption after loss: %+v", st)
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
		src := &Source{ListenAddr: fmt.Sprintf("127.0.0.1:%d", port), SDPFile: sourcetest.FFmpegSDP(t, path)}
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
