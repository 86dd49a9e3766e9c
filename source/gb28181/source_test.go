package gb28181

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vinfer/vinfer/internal/sourcetest"
	"github.com/vinfer/vinfer/internal/testutil"
	"github.com/vinfer/vinfer/media"
	"github.com/vinfer/vinfer/source/gb28181/ps"
)

var clips = []string{"videos/car-detection.mp4", "videos/person-bicycle-car_hevc.mp4"}

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

func readUntil(t *testing.T, s *Source, m *sourcetest.Matcher, done func(*media.AccessUnit) bool, timeout time.Duration) {
	t.Helper()
	if err := sourcetest.ReadUntil(s, m, done, timeout); err != nil {
		t.Fatalf("%v (stats %+v, demux %+v)", err, s.Stats(), s.DemuxStats())
	}
}

// TestUDP receives the clips from the in-test GB28181 sender over UDP: every access unit must
// arrive byte-exact with the clip's PTS.
func TestUDP(t *testing.T) {
	for _, name := range clips {
		t.Run(name, func(t *testing.T) {
			c := sourcetest.LoadClip(t, name)
			port := sourcetest.UDPPortPair(t)
			s := open(t, &Source{ListenAddr: fmt.Sprintf("127.0.0.1:%d", port), SSRC: 0x10000001})
			snd := newSender(c, 0x10000001, ps.Quirks{})
			snd.run(0, len(c.Samples), udpWriter(t, fmt.Sprintf("127.0.0.1:%d", port)))
			m := &sourcetest.Matcher{Clip: c}
			readUntil(t, s, m, m.All, 60*time.Second)
			st, ds := s.Stats(), s.DemuxStats()
			if m.Skipped != 0 || st.Lost != 0 || st.Dropped != 0 || ds.Frames != uint64(len(c.Samples)) || ds.NoStreamMap != 0 {
				t.Fatalf("skipped %d; stats %+v; demux %+v", m.Skipped, st, ds)
			}
			if info := s.Info(); info.Codec != c.Codec || info.Width != 768 || info.Height != 432 {
				t.Fatalf("info %+v", info)
			}
		})
	}
}

// TestVendorQuirks sends a program stream with no stream map, no PTS, pack stuffing, junk
// between packets, unbounded video PES and audio: still byte-exact, every oddity counted.
func TestVendorQuirks(t *testing.T) {
	c := sourcetest.LoadClip(t, clips[1])
	port := sourcetest.UDPPortPair(t)
	s := open(t, &Source{ListenAddr: fmt.Sprintf("127.0.0.1:%d", port), RTCPAddr: "none"})
	q := ps.Quirks{NoStreamMap: true, NoPTS: true, PackStuffing: 3, Junk: []byte{0, 0, 0, 0}, Unbounded: true, Audio: true}
	newSender(c, 77, q).run(0, len(c.Samples), udpWriter(t, fmt.Sprintf("127.0.0.1:%d", port)))
	m := &sourcetest.Matcher{Clip: c, PTSTolerance: time.Second} // no PTS: stamped from RTP (decoding order)
	readUntil(t, s, m, m.All, 60*time.Second)
	ds := s.DemuxStats()
	n := uint64(len(c.Samples))
	if ds.NoStreamMap != n || ds.PESWithoutPTS != n || ds.PackStuffing != n || ds.JunkBytes != 4*n || ds.UnboundedPES != n || ds.AudioPES != n {
		t.Fatalf("demux %+v", ds)
	}
}

// TestSharedPort sends three streams to one UDP port: two Sources select theirs by SSRC; a
// third sender reusing the first SSRC from another address is counted and ignored.
func TestSharedPort(t *testing.T) {
	c1, c2 := sourcetest.LoadClip(t, clips[0]), sourcetest.LoadClip(t, clips[1])
	port := sourcetest.UDPPortPair(t)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	s1 := open(t, &Source{ListenAddr: addr, SSRC: 1001})
	s2 := open(t, &Source{ListenAddr: addr, SSRC: 1002})
	if err := (&Source{ListenAddr: addr, SSRC: 1001}).Init(); err == nil {
		t.Fatal("a second source for the same SSRC and port was accepted")
	}
	newSender(c1, 1001, ps.Quirks{}).run(0, len(c1.Samples), udpWriter(t, addr))
	testutil.Eventually(t, 30*time.Second, "stream 1 to accept the genuine sender's packets", func() bool { return s1.Stats().Packets > 0 })
	impostor := newSender(c2, 1001, ps.Quirks{})
	impostor.run(0, 100, udpWriter(t, addr))
	newSender(c2, 1002, ps.Quirks{}).run(0, len(c2.Samples), udpWriter(t, addr))
	done := make(chan struct{})
	var m2 *sourcetest.Matcher
	go func() {
		defer close(done)
		m2 = &sourcetest.Matcher{Clip: c2}
		if err := sourcetest.ReadUntil(s2, m2, m2.All, 60*time.Second); err != nil {
			t.Errorf("stream 2: %v", err)
		}
	}()
	m1 := &sourcetest.Matcher{Clip: c1}
	readUntil(t, s1, m1, m1.All, 60*time.Second)
	<-done
	if st := s1.Stats(); st.Foreign == 0 || st.Lost != 0 || m1.Skipped != 0 {
		t.Fatalf("stream 1: skipped %d, stats %+v", m1.Skipped, st)
	}
	if st := s2.Stats(); st.Foreign != 0 || st.Lost != 0 || m2.Skipped != 0 {
		t.Fatalf("stream 2: skipped %d, stats %+v", m2.Skipped, st)
	}
}

// TestLoss sends through a relay that drops 5% of the packets for the first seconds: nothing
// damaged is delivered, loss is counted, delivery resumes at key frames; garbage datagrams on
// the port are counted and ignored.
func TestLossAndGarbage(t *testing.T) {
	c := sourcetest.LoadClip(t, clips[0])
	port := sourcetest.UDPPortPair(t)
	s := open(t, &Source{ListenAddr: fmt.Sprintf("127.0.0.1:%d", port)})
	relay := sourcetest.NewRelay(t, 0, fmt.Sprintf("127.0.0.1:%d", port), 0.05, 3)
	time.AfterFunc(2*time.Second, func() { relay.Lossy.Store(false) })
	newSender(c, 5, ps.Quirks{}).run(0, len(c.Samples), udpWriter(t, fmt.Sprintf("127.0.0.1:%d", relay.Port())))
	garbage := sourcetest.SendGarbage(t, fmt.Sprintf("127.0.0.1:%d", port), 100, 10*time.Millisecond)
	// Every access unit is a sample, whole or cut at a gap (a prefix of it), in order, with the
	// sample's PTS: loss degrades, it does not stop, and needs no key frame to resume.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	next, whole, cut := 0, 0, 0
	var pts0 time.Duration
	for next < len(c.Samples) {
		au, err := s.Read(ctx)
		if err != nil {
			t.Fatalf("after sample %d: %v (stats %+v)", next-1, err, s.Stats())
		}
		i := next
		for ; i < len(c.Samples); i++ {
			if bytes.HasPrefix(c.AnnexB(i), au.Data) && (whole+cut == 0 || au.PTS-pts0 == time.Duration(c.Samples[i].PTS-c.Samples[0].PTS)*time.Second/90000) {
				break
			}
		}
		if i == len(c.Samples) || au.Discontinuity {
			t.Fatalf("access unit of %d bytes at %v (discontinuity %v) is no sample from %d on", len(au.Data), au.PTS, au.Discontinuity, next)
		}
		if whole+cut == 0 {
			pts0 = au.PTS - time.Duration(c.Samples[i].PTS-c.Samples[0].PTS)*time.Second/90000
		}
		if len(au.Data) == len(c.AnnexB(i)) {
			whole++
		} else {
			cut++
		}
		next = i + 1
	}
	st := s.Stats()
	t.Logf("relay dropped %d; %d whole, %d cut of %d samples; stats %+v; demux %+v",
		relay.Dropped.Load(), whole, cut, len(c.Samples), st, s.DemuxStats())
	if st.Lost != uint64(relay.Dropped.Load()) || st.Lost == 0 || cut == 0 || st.Damaged < uint64(cut) || st.Discontinuities != 0 || st.TimestampJumps != 0 {
		t.Fatalf("stats %+v", st)
	}
	if st.Garbage != uint64(garbage()) {
		t.Fatalf("garbage %d, sent %d", st.Garbage, garbage())
	}
}

// TestTCPPassive: the camera connects to vinfer (a=setup:passive), then reconnects.
func TestTCPPassive(t *testing.T) {
	c := sourcetest.LoadClip(t, clips[1])
	s := open(t, &Source{Transport: TransportTCPPassive, ListenAddr: "127.0.0.1:0", SSRC: 9})
	addr := s.Addr().String()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	snd := newSender(c, 9, ps.Quirks{})
	wait := snd.run(0, 200, tcpWriter(conn))
	m := &sourcetest.Matcher{Clip: c}
	readUntil(t, s, m, func(*media.AccessUnit) bool { return m.Matched == 200 }, 60*time.Second)
	wait()
	conn.Close()
	// the camera comes back with a new connection and restarts its stream
	conn2, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn2.Close()
	newSender(c, 9, ps.Quirks{}).run(0, len(c.Samples), tcpWriter(conn2))
	readUntil(t, s, m, func(au *media.AccessUnit) bool { return m.Discontinuities == 1 && m.Last == len(c.Samples)-1 }, 60*time.Second)
	st := s.Stats()
	if st.Connects != 2 || st.Reconnects != 1 || st.Lost != 0 || st.Discontinuities != 1 {
		t.Fatalf("stats %+v", st)
	}
}

// TestTCPActive: vinfer connects to the camera (a=setup:active), which is not up at first,
// and later drops the connection: vinfer retries with backoff and resumes.
func TestTCPActive(t *testing.T) {
	c := sourcetest.LoadClip(t, clips[0])
	port := sourcetest.TCPPort(t)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	s := open(t, &Source{Transport: TransportTCPActive, RemoteAddr: addr, Backoff: []time.Duration{100 * time.Millisecond}})
	testutil.Eventually(t, 30*time.Second, "a few failed connection attempts", func() bool { return s.Stats().ConnectFailures >= 2 })
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var accepted atomic.Int32
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			n := accepted.Add(1)
			snd := newSender(c, 0x2000, ps.Quirks{})
			go func() {
				defer conn.Close()
				if n == 1 {
					snd.run(0, 100, tcpWriter(conn))() // then hang up
					return
				}
				snd.run(0, len(c.Samples), tcpWriter(conn))()
			}()
		}
	}()
	m := &sourcetest.Matcher{Clip: c}
	readUntil(t, s, m, func(au *media.AccessUnit) bool { return m.Discontinuities == 1 && m.Last == len(c.Samples)-1 }, 60*time.Second)
	st := s.Stats()
	if st.ConnectFailures == 0 || st.Connects != 2 || st.Reconnects != 1 {
		t.Fatalf("stats %+v", st)
	}
}

// TestWatchdogTCPActive: a camera that keeps the connection open but stops sending is
// disconnected after the watchdog period and dialled again.
func TestWatchdogTCPActive(t *testing.T) {
	c := sourcetest.LoadClip(t, clips[0])
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	hangUp := make(chan struct{})
	t.Cleanup(func() { close(hangUp) })
	var accepted atomic.Int32
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			n := accepted.Add(1)
			go func() {
				defer conn.Close()
				to := len(c.Samples)
				if n == 1 {
					to = 70
				}
				newSender(c, 1, ps.Quirks{}).run(0, to, tcpWriter(conn))()
				<-hangUp // silent, connection open until the test ends
			}()
		}
	}()
	s := open(t, &Source{Transport: TransportTCPActive, RemoteAddr: ln.Addr().String(), Watchdog: 500 * time.Millisecond, Backoff: []time.Duration{50 * time.Millisecond}})
	m := &sourcetest.Matcher{Clip: c}
	readUntil(t, s, m, func(*media.AccessUnit) bool { return m.Discontinuities == 1 && m.Matched > 100 }, 60*time.Second)
	if st := s.Stats(); st.Watchdog == 0 || st.Reconnects == 0 {
		t.Fatalf("stats %+v", st)
	}
}

func TestInitErrors(t *testing.T) {
	for _, s := range []*Source{
		{Transport: "sctp", ListenAddr: ":0"},
		{Transport: TransportTCPActive},
		{Transport: TransportUDP, ListenAddr: "127.0.0.1:0"}, // RTCP port unknown
	} {
		if err := s.Init(); err == nil {
			s.Close()
			t.Fatalf("Init(%+v) succeeded", s)
		}
	}
}
