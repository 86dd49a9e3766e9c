package platform

import (
	"bufio"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/vinfer/vinfer/internal/testutil"
	"github.com/vinfer/vinfer/internal/testutil/gbsim"
	"github.com/vinfer/vinfer/source/gb28181"
)

// TestByeOtherTransport: a BYE from the device's IP address and port number, but over TCP
// while the device registered over UDP (another host behind the same port-preserving NAT),
// is refused (403, wrong_source) and ends nothing, as MESSAGEs are.
func TestByeOtherTransport(t *testing.T) {
	t.Parallel()
	s := startServer(t, nil)
	d := gbsim.New(t, testServerID, sipAddr(s), "UDP", testDevice, testPassword)
	src, err := s.OpenChannel("cam0", gb28181.Channel{DeviceID: d.ID, ChannelID: d.Channels[0], Transport: gb28181.TransportUDP})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.Close() })
	ch := src.(*Channel)
	if m := d.Register(testPassword, 3600); m.Status() != 200 {
		t.Fatal(m.Start)
	}
	testutil.Eventually(t, 30*time.Second, "the session playing", func() bool { st, _ := ch.State(); return st == StatePlaying })
	_, call := ch.State()
	addr, transport, _, _ := s.deviceState(testDevice)
	if transport != "UDP" {
		t.Fatalf("registered over %s", transport)
	}
	local, err := net.ResolveTCPAddr("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	dl := net.Dialer{LocalAddr: local, Timeout: 10 * time.Second}
	c, err := dl.Dial("tcp", sipAddr(s))
	if err != nil {
		t.Skipf("TCP from the device's UDP port %s: %v", addr, err)
	}
	defer c.Close()
	bye := strings.Replace(string(request("BYE", registerURI, addr, testDevice, testServerID, call, 1, nil, "")), "SIP/2.0/UDP", "SIP/2.0/TCP", 1)
	c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := c.Write([]byte(bye)); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(line, "SIP/2.0 403") {
		t.Fatalf("BYE over TCP from the UDP device's address: %q, want 403", strings.TrimSpace(line))
	}
	if st, id := ch.State(); st != StatePlaying || id != call {
		t.Fatalf("session %s %s, want playing %s (untouched)", st, id, call)
	}
	if n := s.Counters.WrongSource.Load(); n != 1 {
		t.Fatalf("wrong_source %d, want 1", n)
	}
	if n := d.Invites.Load(); n != 1 {
		t.Fatalf("%d INVITEs, want 1", n)
	}
}
