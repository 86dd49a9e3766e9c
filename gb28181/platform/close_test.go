package platform

import (
	"testing"
	"time"

	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/internal/testutil"
	"github.com/vinfer/vinfer/internal/testutil/gbsim"
	"github.com/vinfer/vinfer/source/gb28181"
)

// TestCloseDeadDevice: a device that stops answering in the middle of things (one session
// established, one INVITE answered 100 Trying only) does not hold up a stop: Close sends the
// BYE and the CANCEL, gives up waiting for their answers, and returns well before the
// transactions' own timers (invite_timeout here 5 minutes, Timer B and F 32 s). The bound
// asserted is generous (20 s); the figure is logged.
func TestCloseDeadDevice(t *testing.T) {
	t.Parallel()
	s := startServer(t, func(c *config.GB28181) { c.InviteTimeout = config.Duration(5 * time.Minute) })
	dev := newRawDevice(t, s, testDevice)
	if _, m := dev.register(); m.Status() != 200 {
		t.Fatal(m.Start)
	}
	seenFirst := ""
	seen := map[string]bool{} // INVITEs are retransmitted over UDP until answered
	var chans []*Channel
	for i, id := range []string{"1310000001", "1310000002"} {
		src, err := s.OpenChannel("cam"+id, gb28181.Channel{DeviceID: testDevice, ChannelID: testDevice[:10] + id, Transport: gb28181.TransportUDP})
		if err != nil {
			t.Fatal(err)
		}
		chans = append(chans, src.(*Channel))
		inv := dev.next(30*time.Second, "INVITE", func(m *gbsim.Msg) bool { return isRequest("INVITE")(m) && !seen[m.Get("Call-ID")] })
		seen[inv.Get("Call-ID")] = true
		if i == 0 {
			seenFirst = inv.Get("Call-ID")
		}
		dev.answerInvite(inv, i == 0)
		if i == 0 {
			dev.next(30*time.Second, "ACK", isRequest("ACK"))
		}
	}
	waitState(t, chans[0], StatePlaying, seenFirst)
	testutil.Eventually(t, 30*time.Second, "the second INVITE answered 100", chans[1].provisional)
	// from here on the device answers nothing
	start := time.Now()
	closed := make(chan struct{})
	go func() { s.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(20 * time.Second):
		t.Fatal("Close still waiting after 20 s on a device that answers nothing")
	}
	t.Logf("Close took %v with a dead device (a session and a pending INVITE)", time.Since(start).Round(time.Millisecond))
	dev.next(10*time.Second, "BYE sent", isRequest("BYE"))
	dev.next(10*time.Second, "CANCEL sent", isRequest("CANCEL"))
	if s.Counters.Byes.Load() != 1 || s.Counters.Cancels.Load() != 1 {
		t.Fatalf("byes %d, cancels %d, want 1 and 1", s.Counters.Byes.Load(), s.Counters.Cancels.Load())
	}
}
