package rtsp

import (
	"context"
	"encoding/base64"
	"errors"
	"log/slog"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/bluenviron/gortsplib/v5/pkg/format"

	"github.com/vinfer/vinfer/codec"
	"github.com/vinfer/vinfer/frame"
	"github.com/vinfer/vinfer/internal/sourcetest"
	"github.com/vinfer/vinfer/internal/testutil"
	"github.com/vinfer/vinfer/media"
	"github.com/vinfer/vinfer/source/live"
)

// decodeUntil reads access units from s and decodes them (concealed pictures included, as
// FFmpeg's command line outputs them) until done reports true; it returns the frames decoded.
func decodeUntil(t *testing.T, s *Source, c media.Codec, done func(aus, frames int) bool, timeout time.Duration) (aus, frames int) {
	t.Helper()
	dec := &codec.Decoder{Codec: c, OutputCorrupt: true}
	if err := dec.Init(); err != nil {
		t.Fatal(err)
	}
	defer dec.Close()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	emit := func(f *frame.Frame) error { frames++; f.Release(); return nil }
	for !done(aus, frames) {
		au, err := s.Read(ctx)
		if err != nil {
			t.Fatalf("read after %d access units, %d frames: %v (stats %+v)", aus, frames, err, s.Stats())
		}
		aus++
		if err := dec.Decode(ctx, au, emit); err != nil {
			if !errors.Is(err, codec.ErrCorrupt) {
				t.Fatal(err)
			}
		}
	}
	return aus, frames
}

// TestLossUDP plays over UDP through a link that drops 10% of the packets, with a watchdog
// shorter than the stream: the session is never reset (packets keep arriving), damaged access
// units are delivered and decode, with concealment, and the state is running.
func TestLossUDP(t *testing.T) {
	c := sourcetest.LoadClip(t, clips[0])
	forma, aus := clipFormat(t, c, true)
	rng := rand.New(rand.NewPCG(10, 10))
	srv := &testServer{t: t, forma: forma, aus: aus, rate: 4, drop: func() bool { return rng.Float64() < 0.10 }}
	srv.start()
	s := open(t, &Source{URL: srv.url(), Transport: TransportUDP, Watchdog: 2 * time.Second, QueueSize: 1024})
	n, frames := decodeUntil(t, s, c.Codec, func(aus, frames int) bool { return aus >= len(c.Samples)/2 }, 120*time.Second)
	st := s.Stats()
	t.Logf("%d access units, %d frames; stats %+v", n, frames, st)
	if st.Lost == 0 || st.Damaged == 0 || st.Watchdog != 0 || st.Reconnects != 0 || st.State != live.StateRunning {
		t.Fatalf("stats %+v", st)
	}
	// FFmpeg outputs nothing between a key frame that lost its start and the next one (the
	// RTP test compares with FFmpeg's own receiver); here the seed's loss hits one such
	if frames*2 < n {
		t.Fatalf("%d frames from %d access units", frames, n)
	}
}

// TestSpropOnlySPS serves H.264 whose SDP carries only the SPS, the PPS coming in-band.
func TestSpropOnlySPS(t *testing.T) {
	c := sourcetest.LoadClip(t, clips[0])
	ppsOnly := *c
	ppsOnly.ParamSets = c.ParamSets[1:] // in-band: the PPS only
	_, aus := clipFormat(t, &ppsOnly, false)
	forma := &format.Generic{PayloadTyp: 96, RTPMa: "H264/90000", FMT: map[string]string{
		"packetization-mode": "1", "sprop-parameter-sets": base64.StdEncoding.EncodeToString(c.ParamSets[0])}}
	if err := forma.Init(); err != nil {
		t.Fatal(err)
	}
	srv := &testServer{t: t, forma: forma, aus: aus, rate: 8}
	srv.start()
	s := open(t, &Source{URL: srv.url(), Transport: TransportTCP})
	_, frames := decodeUntil(t, s, c.Codec, func(aus, frames int) bool { return frames >= 100 }, 60*time.Second)
	if st := s.Stats(); st.Dropped != 0 || st.Damaged != 0 {
		t.Fatalf("%d frames; stats %+v", frames, st)
	}
}

// TestSpropBroken serves SDPs whose sprop-parameter-sets do not decode (not base64, not
// parameter sets, entries in the wrong order) while the parameter sets come in-band: the
// session plays, the bad sprop is logged once.
func TestSpropBroken(t *testing.T) {
	c := sourcetest.LoadClip(t, clips[0])
	_, aus := clipFormat(t, c, false)
	for _, sprop := range []string{
		"!!not*base64!!,@@@",
		base64.StdEncoding.EncodeToString(c.ParamSets[1]) + ",%%%," + base64.StdEncoding.EncodeToString([]byte{0x65, 1, 2}),
	} {
		t.Run(sprop, func(t *testing.T) {
			forma := &format.Generic{PayloadTyp: 96, RTPMa: "H264/90000", FMT: map[string]string{
				"packetization-mode": "1", "sprop-parameter-sets": sprop}}
			if err := forma.Init(); err != nil {
				t.Fatal(err)
			}
			srv := &testServer{t: t, forma: forma, aus: aus, rate: 8}
			srv.start()
			var logs testutil.LogBuffer
			s := open(t, &Source{URL: srv.url(), Transport: TransportTCP, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			m := &sourcetest.Matcher{Clip: c}
			readUntil(t, s, m, func(*media.AccessUnit) bool { return m.Matched == 60 }, 60*time.Second)
			if st := s.Stats(); st.Connects != 1 || st.ConnectFailures != 0 || m.Skipped != 0 {
				t.Fatalf("stats %+v, skipped %d", st, m.Skipped)
			}
			if n := strings.Count(logs.String(), "parameter sets do not decode"); n != 1 {
				t.Fatalf("logged %d times:\n%s", n, logs.String())
			}
		})
	}
}
