package rtsp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vinfer/vinfer/internal/testutil"

	"github.com/bluenviron/gortsplib/v5/pkg/format"

	"github.com/vinfer/vinfer/internal/sourcetest"
	"github.com/vinfer/vinfer/media"
	"github.com/vinfer/vinfer/source/live"
)

var clips = []string{"videos/car-detection.mp4", "videos/person-bicycle-car_hevc.mp4"}

// readUntil reads and checks access units until done reports true.
func readUntil(t *testing.T, s *Source, m *sourcetest.Matcher, done func(au *media.AccessUnit) bool, timeout time.Duration) {
	t.Helper()
	if err := sourcetest.ReadUntil(s, m, done, timeout); err != nil {
		t.Fatalf("%v (stats %+v)", err, s.Stats())
	}
}

// testQueue is the tests' live queue: every access unit of the longest clip (460).
const testQueue = 1024

func open(t *testing.T, s *Source) *Source {
	t.Helper()
	if s.QueueSize == 0 {
		// room for a whole clip: a reader that a loaded machine stalls must not overflow the
		// queue (which drops to the next key frame) in a test that expects every access unit
		s.QueueSize = testQueue
	}
	if s.Logger == nil {
		s.Logger = slog.New(slog.DiscardHandler)
	}
	if err := s.Init(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestPlay plays the clips from a gortsplib server over TCP and over UDP: H.264 with the
// parameter sets in the SDP only, H.265 with them in-band only and none in the SDP. Every
// access unit must arrive byte-exact.
func TestPlay(t *testing.T) {
	for _, name := range clips {
		for _, transport := range []string{TransportTCP, TransportUDP} {
			t.Run(name+"/"+transport, func(t *testing.T) {
				c := sourcetest.LoadClip(t, name)
				forma, aus := clipFormat(t, c, c.Codec == media.CodecH264)
				srv := &testServer{t: t, forma: forma, aus: aus, rate: 8}
				srv.start()
				s := open(t, &Source{URL: srv.url(), Transport: transport})
				m := &sourcetest.Matcher{Clip: c}
				var wall time.Time
				readUntil(t, s, m, func(au *media.AccessUnit) bool {
					if !au.Wallclock.IsZero() {
						wall = au.Wallclock
					}
					return m.Matched == len(c.Samples)
				}, 60*time.Second)
				st := s.Stats()
				if m.Skipped != 0 || st.Connects != 1 || st.Lost != 0 || st.Dropped != 0 {
					t.Fatalf("skipped %d; stats %+v", m.Skipped, st)
				}
				if st.SenderReports == 0 || wall.IsZero() || time.Since(wall).Abs() > time.Minute {
					t.Fatalf("no capture time from RTCP sender reports (%d): %v", st.SenderReports, wall)
				}
				if info := s.Info(); info.Codec != c.Codec || info.Width != 768 || info.Height != 432 {
					t.Fatalf("info %+v", info)
				}
			})
		}
	}
}

// TestEmptySprop serves H.264 whose SDP has an empty sprop-parameter-sets, with the parameter
// sets in-band.
func TestEmptySprop(t *testing.T) {
	c := sourcetest.LoadClip(t, clips[0])
	_, aus := clipFormat(t, c, false)
	forma := &format.Generic{PayloadTyp: 96, RTPMa: "H264/90000", FMT: map[string]string{"packetization-mode": "1", "sprop-parameter-sets": ""}}
	if err := forma.Init(); err != nil {
		t.Fatal(err)
	}
	srv := &testServer{t: t, forma: forma, aus: aus, rate: 8}
	srv.start()
	s := open(t, &Source{URL: srv.url(), Transport: TransportTCP})
	m := &sourcetest.Matcher{Clip: c}
	readUntil(t, s, m, func(*media.AccessUnit) bool { return m.Matched == 100 }, 60*time.Second)
	if m.Skipped != 0 {
		t.Fatalf("skipped %d", m.Skipped)
	}
}

type syncBuffer = testutil.LogBuffer

// TestAuthAndRedaction plays a stream that needs credentials, then tries a wrong password:
// failures are retried and counted, and no password appears in logs, errors or stats.
func TestAuthAndRedaction(t *testing.T) {
	c := sourcetest.LoadClip(t, clips[0])
	forma, aus := clipFormat(t, c, true)
	srv := &testServer{t: t, forma: forma, aus: aus, rate: 8, user: "viewer", pass: "Zebra-Secret-42"}
	srv.start()
	var logs syncBuffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))

	s := open(t, &Source{URL: srv.url(), Transport: TransportTCP, Logger: logger})
	m := &sourcetest.Matcher{Clip: c}
	readUntil(t, s, m, func(*media.AccessUnit) bool { return m.Matched == 20 }, 60*time.Second)

	bad := strings.Replace(srv.url(), "Zebra-Secret-42", "Wrong-Secret-43", 1)
	b := open(t, &Source{URL: bad, Transport: TransportTCP, Logger: logger, Backoff: []time.Duration{50 * time.Millisecond}})
	testutil.Eventually(t, 30*time.Second, "3 connection failures counted with a wrong password", func() bool { return b.Stats().ConnectFailures >= 3 })
	out := logs.String()
	for _, secret := range []string{"Zebra-Secret-42", "Wrong-Secret-43", "viewer"} {
		if strings.Contains(out, secret) {
			t.Fatalf("log leaks %q:\n%s", secret, out)
		}
	}
	if !strings.Contains(out, "REDACTED@") || !strings.Contains(out, "401") {
		t.Fatalf("log lacks the redacted URL or the 401:\n%s", out)
	}
}

// TestServerLateStart starts the source before the server: it retries with backoff until the
// server is up.
func TestServerLateStart(t *testing.T) {
	c := sourcetest.LoadClip(t, clips[0])
	forma, aus := clipFormat(t, c, true)
	srv := &testServer{t: t, forma: forma, aus: aus, rate: 8}
	srv.addr = "127.0.0.1:" + itoa(sourcetest.TCPPort(t))
	srv.rtp = sourcetest.UDPPortPair(t)
	s := open(t, &Source{URL: srv.url(), Transport: TransportAuto, Backoff: []time.Duration{100 * time.Millisecond, 200 * time.Millisecond}})
	testutil.Eventually(t, 30*time.Second, "3 failed attempts before the server starts", func() bool { return s.Stats().ConnectFailures >= 3 })
	srv.start()
	m := &sourcetest.Matcher{Clip: c}
	readUntil(t, s, m, func(*media.AccessUnit) bool { return m.Matched == 50 }, 60*time.Second)
	st := s.Stats()
	t.Logf("stats %+v", st)
	if st.ConnectFailures < 3 || st.Connects != 1 || m.Skipped != 0 {
		t.Fatalf("stats %+v, skipped %d", st, m.Skipped)
	}
}

// TestServerRestart kills the server mid-stream and brings it back on the same port: the
// stream resumes at a key frame flagged as a discontinuity, and the reconnect is counted.
func TestServerRestart(t *testing.T) {
	for _, transport := range []string{TransportTCP, TransportUDP} {
		t.Run(transport, func(t *testing.T) {
			// both clips are loaded first: a source streams at once and nobody reads it meanwhile
			c := sourcetest.LoadClip(t, clips[0])
			forma, aus := clipFormat(t, c, true)
			c2 := sourcetest.LoadClip(t, clips[1])
			forma2, aus2 := clipFormat(t, c2, false)
			srv := &testServer{t: t, forma: forma, aus: aus, rate: 8}
			srv.start()
			s := open(t, &Source{URL: srv.url(), Transport: transport, Backoff: []time.Duration{200 * time.Millisecond}})

			// another stream, from another server, plays on undisturbed
			other := &testServer{t: t, forma: forma2, aus: aus2, rate: 8}
			other.start()
			s2 := open(t, &Source{URL: other.url(), Transport: transport})
			otherDone := make(chan struct{})
			go func() {
				defer close(otherDone)
				m2 := &sourcetest.Matcher{Clip: c2}
				if err := sourcetest.ReadUntil(s2, m2, m2.All, 60*time.Second); err != nil {
					t.Errorf("the other stream: %v", err)
					return
				}
				if st := s2.Stats(); m2.Skipped != 0 || st.Reconnects != 0 || st.Discontinuities != 0 {
					t.Errorf("the other stream was disturbed: skipped %d, stats %+v", m2.Skipped, st)
				}
			}()
			defer func() { <-otherDone }()

			m := &sourcetest.Matcher{Clip: c}
			readUntil(t, s, m, func(*media.AccessUnit) bool { return m.Matched == 80 }, 60*time.Second)
			srv.close()
			// reading goes on while the server is down; it comes back once the source failed
			// to reconnect
			var restarted atomic.Bool
			var misplaced string
			read, readerDone := make(chan error, 1), make(chan struct{})
			go func() {
				defer close(readerDone)
				var lastPTS time.Duration
				read <- sourcetest.ReadUntil(s, m, func(au *media.AccessUnit) bool {
					if au.Discontinuity && (!restarted.Load() || au.PTS <= lastPTS) {
						misplaced = fmt.Sprintf("discontinuity before the restart (%v) or PTS going back: %v after %v",
							!restarted.Load(), au.PTS, lastPTS)
						return true
					}
					lastPTS = max(lastPTS, au.PTS)
					return m.Discontinuities == 1 && m.Matched >= 200
				}, 60*time.Second)
			}()
			defer func() { s.Close(); <-readerDone }() // the reader ends with the test, even a failing one
			testutil.Eventually(t, 30*time.Second, "a failed reconnection attempt", func() bool { return s.Stats().ConnectFailures > 0 })
			restarted.Store(true)
			srv2 := &testServer{t: t, forma: forma, aus: aus, rate: 8, addr: srv.addr, rtp: srv.rtp}
			srv2.start()
			if err := testutil.Within(t, 2*time.Minute, "the reader", read); err != nil {
				t.Fatalf("%v (stats %+v)", err, s.Stats())
			}
			if misplaced != "" {
				t.Fatal(misplaced)
			}
			st := s.Stats()
			t.Logf("stats %+v", st)
			if st.Connects != 2 || st.Reconnects != 1 || st.Discontinuities != 1 || st.ConnectFailures == 0 {
				t.Fatalf("stats %+v", st)
			}
		})
	}
}

// TestWatchdog stops the media (not the connection) for longer than the watchdog: the source
// reconnects by itself.
func TestWatchdog(t *testing.T) {
	c := sourcetest.LoadClip(t, clips[0])
	forma, aus := clipFormat(t, c, true)
	srv := &testServer{t: t, forma: forma, aus: aus, rate: 8, pause: func(au int) time.Duration {
		if au == 40 {
			return 2 * time.Second
		}
		return 0
	}}
	srv.start()
	s := open(t, &Source{URL: srv.url(), Transport: TransportTCP, Watchdog: 700 * time.Millisecond, Backoff: []time.Duration{100 * time.Millisecond}})
	m := &sourcetest.Matcher{Clip: c}
	readUntil(t, s, m, func(*media.AccessUnit) bool { return m.Discontinuities == 1 && m.Matched > 60 }, 60*time.Second)
	st := s.Stats()
	if st.Watchdog == 0 || st.Reconnects == 0 {
		t.Fatalf("stats %+v", st)
	}
}

// TestUnsupportedCodec serves MJPEG only: Read fails for good with a message naming the
// problem.
func TestUnsupportedCodec(t *testing.T) {
	srv := &testServer{t: t, forma: &format.MJPEG{}, aus: nil, rate: 1}
	srv.start()
	s := open(t, &Source{URL: srv.url(), Transport: TransportTCP})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := s.Read(ctx)
	if err == nil || errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "not supported") {
		t.Fatalf("Read: %v", err)
	}
}

// TestStaleGeneration delivers an access unit of a session that ended: it must not reach Read.
func TestStaleGeneration(t *testing.T) {
	s := &Source{q: live.NewQueue(4)}
	s.gen = 3
	stale := &media.AccessUnit{Data: []byte{0, 0, 0, 1, 0x65, 2}, Key: true}
	current := &media.AccessUnit{Data: []byte{0, 0, 0, 1, 0x65, 3}, Key: true}
	s.deliver(2, stale)
	s.deliver(3, current)
	got, err := s.q.Pop(context.Background()) // the stale one, if queued, would come first
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Data, current.Data) {
		t.Fatalf("Pop returned %x, want the current session's %x", got.Data, current.Data)
	}
}

func TestInitErrors(t *testing.T) {
	for _, s := range []*Source{
		{URL: "http://cam/live"},
		{URL: "rtsp://cam/live", Transport: "sctp"},
		{URL: "rtsp://user:pa%zz@cam/live"},
	} {
		err := s.Init()
		if err == nil {
			s.Close()
			t.Fatalf("Init(%q, %q) succeeded", s.URL, s.Transport)
		}
		if strings.Contains(err.Error(), "pa%zz") {
			t.Fatalf("error leaks the password: %v", err)
		}
	}
}

func itoa(i int) string { return strconv.Itoa(i) }
