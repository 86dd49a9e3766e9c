package platform

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/internal/sourcetest"
	"github.com/vinfer/vinfer/internal/testutil"
	"github.com/vinfer/vinfer/internal/testutil/gbsim"
	"github.com/vinfer/vinfer/media"
	"github.com/vinfer/vinfer/source/gb28181"
	"github.com/vinfer/vinfer/source/live"
)

const (
	testServerID = "34020000002000000001"
	testDomain   = "3402000000"
	testDevice   = "34020000001320000001"
	testPassword = "12345678"
	clipName     = "videos/car-detection.mp4"
)

var logs testutil.LogBuffer

func startServer(t *testing.T, edit func(*config.GB28181)) *Server {
	t.Helper()
	return startServerWith(t, edit, nil)
}

// startServerWith is startServer with setup called on the Server before Init (a clock, a
// logger of the test's own).
func startServerWith(t *testing.T, edit func(*config.GB28181), setup func(*Server)) *Server {
	t.Helper()
	c := config.GB28181{ID: testServerID, Listen: "127.0.0.1:0", Password: testPassword,
		MediaPorts: fmt.Sprintf("%d-%d", 40000+time.Now().Nanosecond()%20000, 0)}
	first := 40000 + int(time.Now().UnixNano()%10000)
	c.MediaPorts = fmt.Sprintf("%d-%d", first, first+400)
	c.InviteTimeout = config.Duration(5 * time.Second)
	if edit != nil {
		edit(&c)
	}
	s := &Server{Config: c, Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	if setup != nil {
		setup(s)
	}
	if err := s.Init(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.Close()
		if debugLogs && t.Failed() {
			os.WriteFile("/tmp/gbsip.log", []byte(logs.String()), 0o644)
		}
		if strings.Contains(logs.String(), testPassword) {
			t.Fatal("a password was logged")
		}
	})
	return s
}

func (s *Server) device(id string) (online bool, channels int, name string) {
	for _, d := range s.Info().Devices {
		if d.ID == id {
			return d.Online, len(d.Channels), d.Name
		}
	}
	return false, 0, ""
}

func sipAddr(s *Server) string { return fmt.Sprintf("127.0.0.1:%d", s.SIPPort()) }

// TestRegister: the digest round, a wrong password, an unknown device, expiry 0, the Date
// header; bad input answered and counted.
func TestRegister(t *testing.T) {
	t.Parallel()
	s := startServer(t, func(c *config.GB28181) {
		c.Devices = []config.GB28181Device{{ID: testDevice}, {ID: "34020000001320000002", Password: "other"}}
	})
	for _, tr := range []string{"UDP", "TCP"} {
		d := gbsim.New(t, testServerID, sipAddr(s), tr, testDevice, testPassword)
		if m := d.Register("wrong", 3600); m.Status() != 403 {
			t.Fatalf("%s: wrong password: %s", tr, m.Start)
		}
		m := d.Register(testPassword, 3600)
		if m.Status() != 200 || m.Get("Date") == "" {
			t.Fatalf("%s: %s %v", tr, m.Start, m.Hdrs)
		}
		if _, err := time.ParseInLocation("2006-01-02T15:04:05.000", m.Get("Date"), time.Local); err != nil {
			t.Fatalf("Date %q: %v", m.Get("Date"), err)
		}
		testutil.Eventually(t, 10*time.Second, "device online", func() bool { on, _, _ := s.device(testDevice); return on })
		if m := d.Keepalive(); m.Status() != 200 {
			t.Fatalf("keepalive: %s", m.Start)
		}
		if m := d.Register(testPassword, 0); m.Status() != 200 {
			t.Fatalf("unregister: %s", m.Start)
		}
		if on, _, _ := s.device(testDevice); on {
			t.Fatal("online after unregistering")
		}
		if m := d.Keepalive(); m.Status() != 403 {
			t.Fatalf("keepalive of an unregistered device: %s", m.Start)
		}
	}
	other := gbsim.New(t, testServerID, sipAddr(s), "UDP", "34020000001320000002", "other")
	if m := other.Register(testPassword, 3600); m.Status() != 403 {
		t.Fatalf("global password for a device with its own: %s", m.Start)
	}
	if m := other.Register("other", 3600); m.Status() != 200 {
		t.Fatalf("per-device password: %s", m.Start)
	}
	stranger := gbsim.New(t, testServerID, sipAddr(s), "UDP", "34020000001320000099", testPassword)
	if m := stranger.Register(testPassword, 3600); m.Status() != 403 {
		t.Fatalf("unknown device: %s", m.Start)
	}
	// bad input
	bomb := `<?xml version="1.0"?><!DOCTYPE l [<!ENTITY a "aaaa"><!ENTITY b "&a;&a;&a;&a;">]><Notify><CmdType>&b;</CmdType></Notify>`
	if m := other.Message(bomb, false); m.Status() != 400 {
		t.Fatalf("XML bomb: %s", m.Start)
	}
	huge := "<Response><CmdType>Catalog</CmdType><DeviceList>" + strings.Repeat("<Item></Item>", 2100) + "</DeviceList></Response>"
	tcp := gbsim.New(t, testServerID, sipAddr(s), "TCP", "34020000001320000002", "other")
	if m := tcp.Message(huge, false); m.Status() != 413 {
		t.Fatalf("huge catalog: %s", m.Start)
	}
	if m := other.Message("<Notify><CmdType>Keepalive", false); m.Status() != 400 {
		t.Fatalf("truncated XML: %s", m.Start)
	}
	conn, _ := net.Dial("udp", sipAddr(s))
	conn.Write([]byte("HELLO / HTTP/1.1\r\n\r\nnot sip at all"))
	conn.Write([]byte("REGISTER sip:x SIP/2.0\r\nVia: garbage\r\n\r\n"))
	conn.Close()
	testutil.Eventually(t, 10*time.Second, "malformed datagrams counted", func() bool { return s.Counters.Malformed.Load() >= 2 })
	c := s.Info().Counters
	if c["bad_digest"] < 3 || c["unknown_device"] < 2 || c["bad_xml"] != 3 || c["challenges"] < 5 {
		t.Fatalf("counters %v", c)
	}
	// still serving
	if m := other.Keepalive(); m.Status() != 200 {
		t.Fatalf("after bad input: %s", m.Start)
	}
}

// TestCatalog: after registering, the platform asks for DeviceInfo and the catalog; the four
// channels arrive in two GBK parts (SumNum 4) and are listed with their Chinese names.
func TestCatalog(t *testing.T) {
	t.Parallel()
	s := startServer(t, nil)
	d := gbsim.New(t, testServerID, sipAddr(s), "UDP", testDevice, testPassword)
	if m := d.Register(testPassword, 3600); m.Status() != 200 {
		t.Fatal(m.Start)
	}
	testutil.Eventually(t, 20*time.Second, "catalog and device info", func() bool {
		_, n, name := s.device(testDevice)
		return n == 4 && name == "测试录像机"
	})
	dev := s.Info().Devices[0]
	if dev.SumNum != 4 || dev.Channels[1].Name != "停车场" || !dev.Channels[1].Online || dev.Model != "NVR-4" || dev.Transport != "UDP" {
		t.Fatalf("%+v", dev)
	}
}

func openChannel(t *testing.T, s *Server, d *gbsim.Device, transport string) *Channel {
	t.Helper()
	src, err := s.OpenChannel("cam", gb28181.Channel{DeviceID: d.ID, ChannelID: d.Channels[0], Transport: transport})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.Close() })
	return src.(*Channel)
}

// TestLive: a stream on a channel is INVITEd once the device registers; the device sends the
// clip as PS over RTP (UDP, TCP with vinfer listening, TCP with vinfer connecting); every
// access unit arrives byte-exact; closing the stream sends BYE.
func TestLive(t *testing.T) {
	clip := sourcetest.LoadClip(t, clipName)
	for _, tr := range []string{gb28181.TransportUDP, gb28181.TransportTCPPassive, gb28181.TransportTCPActive} {
		t.Run(tr, func(t *testing.T) {
			s := startServer(t, nil)
			d := gbsim.New(t, testServerID, sipAddr(s), "UDP", testDevice, testPassword)
			d.Clip = clip
			c := openChannel(t, s, d, tr) // before the device registers: it waits
			if st, _ := c.State(); st != StateWaiting {
				t.Fatalf("state %s", st)
			}
			if m := d.Register(testPassword, 3600); m.Status() != 200 {
				t.Fatal(m.Start)
			}
			m := &sourcetest.Matcher{Clip: clip}
			if err := sourcetest.ReadUntil(c, m, m.All, 90*time.Second); err != nil {
				t.Fatalf("%v (stats %+v)", err, c.Stats())
			}
			if m.Skipped != 0 || d.Invites.Load() != 1 {
				t.Fatalf("skipped %d, invites %d", m.Skipped, d.Invites.Load())
			}
			offer := d.LastInviteSDP.Load().(string)
			if !strings.Contains(offer, "y="+c.SSRC().String()) || !strings.HasPrefix(c.SSRC().String(), "020000") {
				t.Fatalf("offer %q, ssrc %s", offer, c.SSRC())
			}
			c.Close()
			testutil.Eventually(t, 10*time.Second, "BYE", func() bool { return d.Byes.Load() == 1 && d.SessionCount() == 0 })
		})
	}
}

// TestOfflineAndBack: keepalives stop → the device and its stream show offline; the device
// restarts and registers again → a new INVITE, media resumes. Media that stops while the
// device stays online → BYE and a new INVITE.
func TestOfflineAndBack(t *testing.T) {
	t.Parallel()
	clip := sourcetest.LoadClip(t, clipName)
	s := startServer(t, func(c *config.GB28181) {
		c.KeepaliveTimeout = config.Duration(2 * time.Second)
		c.MediaTimeout = config.Duration(3 * time.Second)
	})
	d := gbsim.New(t, testServerID, sipAddr(s), "TCP", testDevice, testPassword)
	d.Clip = clip
	if m := d.Register(testPassword, 3600); m.Status() != 200 {
		t.Fatal(m.Start)
	}
	stop := make(chan struct{})
	d.Keepalives(300*time.Millisecond, stop)
	c := openChannel(t, s, d, gb28181.TransportUDP)
	readN(t, c, 20)

	close(stop) // the device dies: no keepalives, no media
	d.Restart()
	testutil.Eventually(t, 20*time.Second, "device offline", func() bool { on, _, _ := s.device(testDevice); return !on })
	testutil.Eventually(t, 10*time.Second, "stream waiting", func() bool { st, _ := c.State(); return st == StateWaiting })
	info := s.Info()
	if st := info.Devices[0].Channels[0].Streams; len(st) != 1 || st[0].State != StateWaiting || info.Devices[0].Channels[0].Online {
		t.Fatalf("%+v", info.Devices[0].Channels[0])
	}

	invites := d.Invites.Load()
	if m := d.Register(testPassword, 3600); m.Status() != 200 { // back, with a new Call-ID
		t.Fatal(m.Start)
	}
	stop = make(chan struct{})
	defer close(stop)
	d.Keepalives(300*time.Millisecond, stop)
	testutil.Eventually(t, 20*time.Second, "a new INVITE", func() bool { return d.Invites.Load() > invites })
	readN(t, c, 20)

	// media stops, the device stays: BYE and INVITE again
	invites = d.Invites.Load()
	d.NoMedia.Store(true)
	d.StopMedia()
	testutil.Eventually(t, 30*time.Second, "re-INVITE after the media stopped", func() bool {
		return d.Invites.Load() > invites && s.Counters.MediaTimeouts.Load() >= 1
	})
	d.NoMedia.Store(false)
	invites = d.Invites.Load()
	testutil.Eventually(t, 30*time.Second, "a session with media", func() bool {
		st, _ := c.State()
		return st == StatePlaying && d.SessionCount() >= 1
	})
	if n := d.SessionCount(); n > 1 {
		t.Fatalf("%d sessions on the device: stale ones left", n)
	}
}

// openChannels opens, over UDP, device's channels ids as cam0, cam1…; they close when the test
// ends.
func openChannels(t *testing.T, s *Server, device string, ids []string) []*Channel {
	t.Helper()
	var chans []*Channel
	for i, ch := range ids {
		src, err := s.OpenChannel(fmt.Sprintf("cam%d", i), gb28181.Channel{DeviceID: device, ChannelID: ch, Transport: gb28181.TransportUDP})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { src.Close() })
		chans = append(chans, src.(*Channel))
	}
	return chans
}

// TestManyChannels: the four channels of one device, opened at once, are INVITEd at once, each
// with its own SSRC and media port, and all play; a MediaStatus 121 (the stream ended) in one
// session's Call-ID ends that session only, and its channel is INVITEd again and plays.
func TestManyChannels(t *testing.T) {
	clip := sourcetest.LoadClip(t, clipName)
	s := startServer(t, nil)
	d := gbsim.New(t, testServerID, sipAddr(s), "UDP", testDevice, testPassword)
	d.Clip = clip
	chans := openChannels(t, s, d.ID, d.Channels)
	if m := d.Register(testPassword, 3600); m.Status() != 200 {
		t.Fatal(m.Start)
	}
	ssrcs, ports := map[string]bool{}, map[int]bool{}
	for _, c := range chans {
		readN(t, c, 10)
		ssrcs[c.SSRC().String()], ports[c.Port()] = true, true
	}
	if len(ssrcs) != 4 || len(ports) != 4 || d.Invites.Load() != 4 || d.SessionCount() != 4 {
		t.Fatalf("%d SSRCs, %d ports, %d INVITEs, %d sessions: want 4 of each", len(ssrcs), len(ports), d.Invites.Load(), d.SessionCount())
	}

	st, callID := chans[2].State()
	if st != StatePlaying || callID == "" {
		t.Fatalf("channel 2: %s %q", st, callID)
	}
	if m := d.EndMedia(callID, d.Channels[2]); m.Status() != 200 {
		t.Fatalf("MediaStatus: %s", m.Start)
	}
	testutil.Eventually(t, 30*time.Second, "channel 2 INVITEd again after MediaStatus 121", func() bool {
		st, id := chans[2].State()
		return s.Counters.MediaStatus.Load() == 1 && d.Invites.Load() == 5 && st == StatePlaying && id != callID
	})
	readN(t, chans[2], 10)
	for i, c := range chans {
		if st, _ := c.State(); st != StatePlaying {
			t.Errorf("channel %d: %s", i, st)
		}
	}
	if n := d.Invites.Load(); n != 5 {
		t.Fatalf("%d INVITEs: only channel 2 should have been invited again", n)
	}
}

// readN reads n access units (the clip may start anywhere after a restart).
func readN(t *testing.T, c *Channel, n int) {
	t.Helper()
	ctx, cancel := contextTimeout(60 * time.Second)
	defer cancel()
	for i := range n {
		au, err := c.Read(ctx)
		if err != nil {
			t.Fatalf("after %d access units: %v (stats %+v)", i, err, c.Stats())
		}
		if au.Codec != media.CodecH264 {
			t.Fatalf("codec %v", au.Codec)
		}
	}
}

// TestManyDevices: 100 devices register at once (digest included) and keep alive.
func TestManyDevices(t *testing.T) {
	t.Parallel()
	s := startServer(t, nil)
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for i := range 100 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tr := "UDP"
			if i%4 == 0 {
				tr = "TCP"
			}
			d := gbsim.New(t, testServerID, sipAddr(s), tr, fmt.Sprintf("3402000000132%07d", i), testPassword)
			if m := d.Register(testPassword, 3600); m.Status() != 200 {
				errs <- fmt.Errorf("device %d: %s", i, m.Start)
				return
			}
			if m := d.Keepalive(); m.Status() != 200 {
				errs <- fmt.Errorf("device %d keepalive: %s", i, m.Start)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	online := 0
	for _, d := range s.Info().Devices {
		if d.Online {
			online++
		}
	}
	if online != 100 {
		t.Fatalf("%d online", online)
	}
}

func TestChannelErrors(t *testing.T) {
	t.Parallel()
	s := startServer(t, func(c *config.GB28181) { c.MediaPorts = "45000-45000" })
	c1, err := s.OpenChannel("a", gb28181.Channel{DeviceID: testDevice, ChannelID: testDevice, Transport: gb28181.TransportUDP})
	if err != nil {
		t.Fatal(err)
	}
	defer c1.Close()
	if _, err := s.OpenChannel("b", gb28181.Channel{DeviceID: testDevice, ChannelID: testDevice, Transport: gb28181.TransportUDP}); !errors.Is(err, ErrNoPort) {
		t.Fatalf("second stream on a one-port range: %v", err)
	}
	c1.Close()
	if _, err := c1.Read(t.Context()); !errors.Is(err, live.ErrClosed) {
		t.Fatal(err)
	}
}
