package rtp

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/vinfer/vinfer/internal/sourcetest"
	"github.com/vinfer/vinfer/internal/testutil"
	"github.com/vinfer/vinfer/source/live"
)

// openLogged starts a Source on a free port with a logger into logs.
// testQueue is the tests' live queue: every access unit of the longest clip (460).
const testQueue = 1024

func openLogged(t *testing.T, s *Source, logs *testutil.LogBuffer) *Source {
	t.Helper()
	if s.QueueSize == 0 {
		// room for a whole clip: a reader that a loaded machine stalls must not overflow the
		// queue (which drops to the next key frame) in a test that expects every access unit
		s.QueueSize = testQueue
	}
	s.ListenAddr = fmt.Sprintf("127.0.0.1:%d", sourcetest.UDPPortPair(t))
	s.RTCPAddr = "none"
	s.Logger = slog.New(slog.NewTextHandler(logs, nil))
	if err := s.Init(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestWrongSSRC sends with an SSRC other than the configured one: nothing is delivered, but the
// packets are counted, logged once with their SSRC and address, and the state says so.
func TestWrongSSRC(t *testing.T) {
	c := sourcetest.LoadClip(t, clips[0])
	var logs testutil.LogBuffer
	src := openLogged(t, &Source{Codec: c.Codec, SSRC: 0x1111}, &logs)
	snd := sourcetest.NewUDPSender(t, src.Addr().String())
	pkts := c.Packetize(t, 0, 40, 96, 0x2222, 0, 0, true)
	snd.Send(t, pkts, time.Millisecond)
	testutil.Eventually(t, 60*time.Second, "foreign packets counted", func() bool { return src.Stats().Foreign == uint64(len(pkts)) })
	st := src.Stats()
	if st.Packets != 0 || st.AccessUnits != 0 || st.State != live.StateConnecting || !strings.Contains(st.Hint, "0x00002222") ||
		!strings.Contains(st.Hint, snd.Addr().String()) {
		t.Fatalf("stats %+v", st)
	}
	if n := strings.Count(logs.String(), "unexpected sender"); n != 1 || !strings.Contains(logs.String(), "sender_ssrc=0x00002222") {
		t.Fatalf("logged %d times:\n%s", n, logs.String())
	}
}

// TestNoTakeover has a second sender, with the same SSRC from another address, send while the
// first is alive: it is counted and logged, and the stream stays byte-exact from the first.
// Then the first camera moves to a new source port: after the holdover it is followed, and the
// change is counted and logged.
func TestNoTakeover(t *testing.T) {
	c := sourcetest.LoadClip(t, clips[0])
	var logs testutil.LogBuffer
	src := openLogged(t, &Source{Codec: c.Codec, Holdover: 300 * time.Millisecond, QueueSize: 1024}, &logs)
	cam := sourcetest.NewUDPSender(t, src.Addr().String())
	intruder := sourcetest.NewUDPSender(t, src.Addr().String())
	pkts := c.Packetize(t, 0, 120, 96, 0x5555, 100, 0, true)
	bad := c.Packetize(t, 0, 120, 96, 0x5555, 30000, 12345, true)
	for i := range 60 { // interleaved access units: the intruder sends as fast as the camera
		cam.Send(t, pkts[firstPackets(pkts)[i]:firstPackets(pkts)[i+1]], 0)
		intruder.Send(t, bad[firstPackets(bad)[i]:firstPackets(bad)[i+1]], time.Millisecond)
	}
	m := &sourcetest.Matcher{Clip: c}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for m.Matched < 59 {
		au, err := src.Read(ctx)
		if err != nil {
			t.Fatalf("read after %d: %v (stats %+v)", m.Matched, err, src.Stats())
		}
		m.Check(t, au)
	}
	st := src.Stats()
	if st.Foreign == 0 || st.SenderChanges != 0 || m.Skipped != 0 || !strings.Contains(logs.String(), "while the locked sender is alive") {
		t.Fatalf("stats %+v, skipped %d\n%s", st, m.Skipped, logs.String())
	}

	// the camera restarts its socket: new source port, same SSRC, the sequence goes on
	cam.Close()
	time.Sleep(400 * time.Millisecond) // longer than the holdover: the camera was silent
	moved := sourcetest.NewUDPSender(t, src.Addr().String())
	moved.Send(t, pkts[firstPackets(pkts)[60]:], time.Millisecond)
	for m.Last < 119 {
		au, err := src.Read(ctx)
		if err != nil {
			t.Fatalf("read after %d: %v (stats %+v)", m.Matched, err, src.Stats())
		}
		m.Check(t, au)
	}
	st = src.Stats()
	if st.SenderChanges != 1 || st.SSRCChanges != 0 || m.Discontinuities != 1 || !strings.Contains(logs.String(), "RTP sender changed") {
		t.Fatalf("stats %+v, discontinuities %d\n%s", st, m.Discontinuities, logs.String())
	}
}
