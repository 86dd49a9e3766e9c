package platform

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/internal/testutil"
	"github.com/vinfer/vinfer/internal/testutil/gbsim"
	"github.com/vinfer/vinfer/source/gb28181"
)

// sdpAnswer is a device's SDP answer to an offer (UDP; the offer's y= echoed).
func sdpAnswer(offer []byte) string {
	ssrc := ""
	for _, l := range strings.Split(strings.ReplaceAll(string(offer), "\r\n", "\n"), "\n") {
		if v, ok := strings.CutPrefix(l, "y="); ok {
			ssrc = v
		}
	}
	return "v=0\r\no=" + testDevice + " 0 0 IN IP4 127.0.0.1\r\ns=Play\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\n" +
		"m=video 15060 RTP/AVP 96\r\na=sendonly\r\na=rtpmap:96 PS/90000\r\ny=" + ssrc + "\r\n"
}

// answerInvite answers an INVITE: 100 Trying only (the device holds it, as a slow or dying
// one does), or 100 then 200 with an SDP answer.
func (d *rawDevice) answerInvite(m *gbsim.Msg, final bool) {
	d.reply(m, 100, "Trying", "", "")
	if final {
		d.reply(m, 200, "OK", fmt.Sprintf("Contact: <sip:%s@%s>\r\nContent-Type: application/sdp\r\n", d.id, d.addr()), sdpAnswer(m.Body))
	}
}

// TestReregisterElsewhere: a device that registers again from a new address (another port)
// gets its established session ended with BYE at the old address and its INVITE still
// waiting for an answer CANCELed there; the new address is INVITEd at once, not after the
// old INVITE's invite_timeout (here 10 minutes, far beyond the test's waits). GB/T
// 28181-2016 §9.1, RFC 3261 §9.1.
func TestReregisterElsewhere(t *testing.T) {
	t.Parallel()
	s := startServer(t, func(c *config.GB28181) { c.InviteTimeout = config.Duration(10 * time.Minute) })
	first := newRawDevice(t, s, testDevice)
	if _, m := first.register(); m.Status() != 200 {
		t.Fatal(m.Start)
	}
	src, err := s.OpenChannel("cam", gb28181.Channel{DeviceID: testDevice, ChannelID: testDevice[:10] + "1310000001", Transport: gb28181.TransportUDP})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.Close() })
	ch := src.(*Channel)

	inv := first.next(30*time.Second, "INVITE at the first address", isRequest("INVITE"))
	first.answerInvite(inv, true)
	first.next(30*time.Second, "ACK", isRequest("ACK"))

	// the device moves (a new port: NAT rebinding, a restart, a new network) and registers:
	// same Call-ID, as a device keeping its registration dialog does
	second := newRawDevice(t, s, testDevice)
	second.callID, second.cseq = first.callID, first.cseq
	if _, m := second.register(); m.Status() != 200 {
		t.Fatal(m.Start)
	}
	bye := first.next(30*time.Second, "BYE at the first address", isRequest("BYE"))
	if bye.Get("Call-ID") != inv.Get("Call-ID") {
		t.Fatalf("BYE for %s, want the session's %s", bye.Get("Call-ID"), inv.Get("Call-ID"))
	}
	first.reply(bye, 200, "OK", "", "")
	inv2 := second.next(30*time.Second, "INVITE at the new address", isRequest("INVITE"))
	second.answerInvite(inv2, false) // 100 only: the INVITE waits
	testutil.Eventually(t, 30*time.Second, "the INVITE answered 100", ch.provisional)

	// and moves again while that INVITE waits: CANCEL at the second, INVITE at the third
	third := newRawDevice(t, s, testDevice)
	third.callID, third.cseq = first.callID, second.cseq
	if _, m := third.register(); m.Status() != 200 {
		t.Fatal(m.Start)
	}
	moved := time.Now()
	cancel := second.next(30*time.Second, "CANCEL at the second address", isRequest("CANCEL"))
	if cancel.Get("Call-ID") != inv2.Get("Call-ID") || !strings.HasSuffix(cancel.Get("CSeq"), " CANCEL") ||
		strings.Fields(cancel.Get("CSeq"))[0] != strings.Fields(inv2.Get("CSeq"))[0] {
		t.Fatalf("CANCEL %s %s, want the INVITE's %s %s", cancel.Get("Call-ID"), cancel.Get("CSeq"), inv2.Get("Call-ID"), inv2.Get("CSeq"))
	}
	if branch := func(m *gbsim.Msg) string { _, b, _ := strings.Cut(m.Get("Via"), "branch="); return b }; branch(cancel) != branch(inv2) {
		t.Fatalf("CANCEL's Via %q, want the INVITE's branch (%q)", cancel.Get("Via"), inv2.Get("Via"))
	}
	second.reply(cancel, 200, "OK", "", "")
	inv3 := third.next(30*time.Second, "INVITE at the third address", isRequest("INVITE"))
	t.Logf("INVITE at the new address %v after its registration's 200", time.Since(moved).Round(time.Millisecond))
	third.answerInvite(inv3, true)
	third.next(30*time.Second, "ACK at the third address", isRequest("ACK"))
	waitState(t, ch, StatePlaying, inv3.Get("Call-ID"))
	if n := s.Counters.Cancels.Load(); n != 1 {
		t.Fatalf("cancels %d, want 1", n)
	}
	if n := s.Counters.InviteFailures.Load(); n != 0 {
		t.Fatalf("invite_failures %d, want 0 (an INVITE given up for a move is no failure)", n)
	}
}

// waitState waits for a channel's state and Call-ID.
func waitState(t *testing.T, c *Channel, state, callID string) {
	t.Helper()
	testutil.Eventually(t, 30*time.Second, "channel "+state+" "+callID, func() bool {
		st, id := c.State()
		return st == state && id == callID
	})
}

// TestStateNamesDocumented: the session states the API shows are the ones docs/gb28181.md
// lists, no more, no fewer.
func TestStateNamesDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/gb28181.md")
	if err != nil {
		t.Fatal(err)
	}
	const intro = "session (state "
	_, after, ok := strings.Cut(string(doc), intro)
	if !ok {
		t.Fatalf("docs/gb28181.md: no %q", intro)
	}
	list, _, _ := strings.Cut(after, ";")
	var documented []string
	for _, f := range strings.Split(list, ",") {
		documented = append(documented, strings.Trim(strings.TrimSpace(f), "`"))
	}
	if want := []string{StateWaiting, StateInviting, StatePlaying, StateRetrying}; !slices.Equal(documented, want) {
		t.Fatalf("docs/gb28181.md lists the states %q, the platform has %q", documented, want)
	}
}
