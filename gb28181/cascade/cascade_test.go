package cascade_test

import (
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/event"
	"github.com/vinfer/vinfer/gb28181/cascade"
	"github.com/vinfer/vinfer/gb28181/upsim"
	"github.com/vinfer/vinfer/internal/sourcetest"
	"github.com/vinfer/vinfer/internal/testutil"
	"github.com/vinfer/vinfer/media"
	"github.com/vinfer/vinfer/sink"
	"github.com/vinfer/vinfer/source/gb28181/ps"
)

const (
	upperID  = "34020000002000000001"
	lowerID  = "34020000002000000077"
	channel1 = "34020000001320000001"
	channel2 = "34020000001320000002"
	other    = "34020000001320000099" // a channel no upstream configures
	password = "up-secret-7"
	wait     = 30 * time.Second
)

// start runs a Cascade toward up with password p and two channels (cam1, cam2).
func start(t *testing.T, up *upsim.Upper, p string, logs *testutil.LogBuffer, set ...func(*config.GB28181Upstream)) *cascade.Cascade {
	t.Helper()
	u := config.GB28181Upstream{ServerID: upperID, Address: up.Addr(), Transport: strings.ToLower(up.Transport), Password: p,
		Local: "127.0.0.1:0", Keepalive: config.Duration(200 * time.Millisecond),
		Channels: []config.GB28181UpChannel{{ID: channel1, Stream: "cam1", Name: "大门"}, {ID: channel2, Stream: "cam2"}}}
	for _, f := range set {
		f(&u)
	}
	if err := u.Init(0, lowerID); err != nil {
		t.Fatal(err)
	}
	c := &cascade.Cascade{Upstreams: []config.GB28181Upstream{u}, Version: "test",
		Online: func(s string) bool { return s == "cam1" },
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	if err := c.Init(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// feed plays the clip into stream's tap, looping, at 4× real time until the test ends.
func feed(t *testing.T, c *cascade.Cascade, stream string, clip *sourcetest.Clip) {
	tap := c.Observer(stream)
	stop := make(chan struct{})
	done := make(chan struct{})
	t.Cleanup(func() { close(stop); <-done })
	go func() {
		defer close(done)
		var base time.Duration
		for {
			for i, s := range clip.Samples {
				au := &media.AccessUnit{Codec: clip.Codec, Data: clip.AnnexB(i), Key: s.Key,
					PTS: base + time.Duration(s.PTS)*time.Second/90000, DTS: base + time.Duration(s.DTS)*time.Second/90000}
				tap.ObserveAccessUnit(au)
				select {
				case <-stop:
					return
				case <-time.After(20 * time.Millisecond):
				}
			}
			base += 40 * time.Second
		}
	}()
}

// TestRegisterPassword: a wrong password is refused by the upper platform, which vinfer logs
// (without the password) and counts; the right one registers and keepalives follow.
func TestRegisterPassword(t *testing.T) {
	for _, tr := range []string{"UDP", "TCP"} {
		t.Run(tr, func(t *testing.T) {
			up := upsim.New(t, tr, upperID, password)
			logs := &testutil.LogBuffer{}
			bad := start(t, up, "wrong-pass-3", logs)
			testutil.Eventually(t, wait, "the wrong password refused and counted", func() bool {
				return up.Refused.Load() >= 1 && bad.Upstream(0).Counters.Refused.Load() >= 1
			})
			if bad.Upstream(0).Registered() || up.Registers.Load() != 0 {
				t.Fatal("registered with a wrong password")
			}
			if !strings.Contains(logs.String(), "registration refused") {
				t.Fatalf("no clear log of the refusal:\n%s", logs)
			}
			bad.Close()

			good := start(t, up, password, logs)
			testutil.Eventually(t, wait, "registered and keeping alive", func() bool {
				return good.Upstream(0).Registered() && up.Lower() == lowerID && up.Keepalives.Load() >= 2
			})
			if strings.Contains(logs.String(), password) || strings.Contains(logs.String(), "wrong-pass-3") {
				t.Fatal("a password reached the log")
			}
			good.Close()
			if up.Unregisters.Load() != 1 {
				t.Fatal("no unregistration (REGISTER with Expires 0) on close")
			}
		})
	}
}

// TestRegisterSHA256: an upper platform challenging with SHA-256 (GB/T 28181-2022 allows it)
// gets an answer it accepts.
func TestRegisterSHA256(t *testing.T) {
	up := upsim.New(t, "TCP", upperID, password)
	up.Algorithm = "SHA-256"
	c := start(t, up, password, &testutil.LogBuffer{})
	testutil.Eventually(t, wait, "registered with a SHA-256 digest", func() bool { return c.Upstream(0).Registered() && up.Registers.Load() == 1 })
	if up.Refused.Load() != 0 {
		t.Fatal("refused")
	}
}

// TestReregister: an upper platform that forgets vinfer (keepalives answered 403) gets a new
// REGISTER, and its live views end.
func TestReregister(t *testing.T) {
	up := upsim.New(t, "UDP", upperID, password)
	c := start(t, up, password, &testutil.LogBuffer{}, func(u *config.GB28181Upstream) { u.Local = "" }) // the default: any address
	testutil.Eventually(t, wait, "registered", func() bool { return c.Upstream(0).Registered() && up.Lower() != "" })
	if m, _ := up.Invite(channel1, upsim.NewReceiver(t, "udp"), "0100000001"); m.Status() != 200 || c.Upstream(0).Sessions() != 1 {
		t.Fatalf("INVITE: %s, %d sessions", m.Start, c.Upstream(0).Sessions())
	}
	n := up.Registers.Load()
	up.Forget.Store(true)
	testutil.Eventually(t, wait, "registered again after the keepalive was refused", func() bool { return up.Registers.Load() > n })
	testutil.Eventually(t, wait, "the lost platform's live view ended", func() bool { return c.Upstream(0).Sessions() == 0 })
	up.Forget.Store(false)
	testutil.Eventually(t, wait, "registered", func() bool { return c.Upstream(0).Registered() })
	if m, _ := up.Query("DeviceStatus", lowerID); m.Status() != 200 { // requests reach the socket REGISTER came from
		t.Fatalf("DeviceStatus: %s", m.Start)
	}
}

// TestRefresh: a registration is renewed before it expires (at half its lifetime).
func TestRefresh(t *testing.T) {
	up := upsim.New(t, "TCP", upperID, password)
	c := start(t, up, password, &testutil.LogBuffer{}, func(u *config.GB28181Upstream) { u.Expires = config.Duration(2 * time.Second) })
	testutil.Eventually(t, wait, "three registrations of a 2 s lifetime", func() bool { return up.Registers.Load() >= 3 })
	if got := up.Refused.Load(); got != 0 || !c.Upstream(0).Registered() {
		t.Fatalf("refused %d, registered %v", got, c.Upstream(0).Registered())
	}
}

// TestStranger: another platform's requests are refused, even with a configured channel.
func TestStranger(t *testing.T) {
	up := upsim.New(t, "UDP", upperID, password)
	c := start(t, up, password, &testutil.LogBuffer{})
	testutil.Eventually(t, wait, "registered", func() bool { return c.Upstream(0).Registered() })
	stranger := upsim.New(t, "UDP", "34020000002000000066", password)
	stranger.Aim(lowerID, c.Upstream(0).LocalAddr())
	if m, _ := stranger.Query("Catalog", lowerID); m.Status() != 403 {
		t.Fatalf("a stranger's Catalog query: %s, want 403", m.Start)
	}
	if m, _ := stranger.Invite(channel1, upsim.NewReceiver(t, "udp"), "0100000001"); m.Status() != 403 {
		t.Fatalf("a stranger's INVITE: %s, want 403", m.Start)
	}
	if got := c.Upstream(0).Counters.Forbidden.Load(); got != 2 {
		t.Fatalf("forbidden %d, want 2", got)
	}
}

// TestLimits: an upper platform holds at most 16 live views and 8 alarm subscriptions; more
// are answered 486.
func TestLimits(t *testing.T) {
	up := upsim.New(t, "UDP", upperID, password)
	c := start(t, up, password, &testutil.LogBuffer{})
	testutil.Eventually(t, wait, "registered", func() bool { return c.Upstream(0).Registered() && up.Lower() != "" })
	for i := range 17 {
		m, _ := up.Invite(channel1, upsim.NewReceiver(t, "udp"), "0100000001")
		if want := map[bool]int{true: 200, false: 486}[i < 16]; m.Status() != want {
			t.Fatalf("INVITE %d: %s, want %d", i+1, m.Start, want)
		}
	}
	for i := range 9 {
		m, _ := up.SubscribeAlarms(lowerID, 600, "0", "", "")
		if want := map[bool]int{true: 200, false: 486}[i < 8]; m.Status() != want {
			t.Fatalf("SUBSCRIBE %d: %s, want %d", i+1, m.Start, want)
		}
	}
}

// responses waits for the query responses of cmd with sn and returns them.
func responses(t *testing.T, up *upsim.Upper, cmd, sn string, enough func([]*upsim.Msg) bool) []*upsim.Msg {
	t.Helper()
	var got []*upsim.Msg
	testutil.Eventually(t, wait, cmd+" response", func() bool {
		got = up.Messages(func(m *upsim.Msg) bool { return m.Field("CmdType") == cmd && m.Field("SN") == sn })
		return enough(got)
	})
	return got
}

// TestQueries: Catalog lists the two configured channels only (in parts over UDP), with
// their status; DeviceInfo and DeviceStatus answer; other devices are not found.
func TestQueries(t *testing.T) {
	for _, tr := range []string{"UDP", "TCP"} {
		t.Run(tr, func(t *testing.T) {
			up := upsim.New(t, tr, upperID, password)
			logs := &testutil.LogBuffer{}
			t.Cleanup(func() {
				if t.Failed() {
					t.Log(logs)
				}
			})
			c := start(t, up, password, logs)
			testutil.Eventually(t, wait, "registered", func() bool { return c.Upstream(0).Registered() && up.Lower() != "" })

			m, sn := up.Query("Catalog", lowerID)
			if m.Status() != 200 {
				t.Fatalf("Catalog MESSAGE: %s", m.Start)
			}
			var ids, status []string
			responses(t, up, "Catalog", sn, func(ms []*upsim.Msg) bool {
				ids, status = nil, nil
				for _, m := range ms {
					if m.Field("SumNum") != "2" {
						t.Fatalf("SumNum %q, want 2", m.Field("SumNum"))
					}
					for _, item := range strings.Split(m.Text(), "<Item>")[1:] {
						it := &upsim.Msg{Body: []byte(`<?xml version="1.0" encoding="UTF-8"?>` + item)} // decoded already
						if it.Field("DeviceID") == channel1 && it.Field("Name") != "大门" {
							t.Fatalf("channel name %q, want 大门 (GB18030 as declared)", it.Field("Name"))
						}
						ids, status = append(ids, it.Field("DeviceID")), append(status, it.Field("Status"))
					}
				}
				return len(ids) >= 2
			})
			slices.Sort(ids)
			if !slices.Equal(ids, []string{channel1, channel2}) || !slices.Equal(status, []string{"ON", "OFF"}) {
				t.Fatalf("catalog %v %v, want the two channels, ON then OFF", ids, status)
			}

			m, sn = up.Query("DeviceInfo", lowerID)
			r := responses(t, up, "DeviceInfo", sn, func(ms []*upsim.Msg) bool { return len(ms) > 0 })[0]
			if m.Status() != 200 || r.Field("Result") != "OK" || r.Field("Channel") != "2" {
				t.Fatalf("DeviceInfo: %s\n%s", m.Start, r.Body)
			}
			_, sn = up.Query("DeviceStatus", channel1)
			r = responses(t, up, "DeviceStatus", sn, func(ms []*upsim.Msg) bool { return len(ms) > 0 })[0]
			if r.Field("Online") != "ONLINE" || r.Field("DeviceID") != channel1 {
				t.Fatalf("DeviceStatus:\n%s", r.Body)
			}
			if m, _ := up.Query("Catalog", other); m.Status() != 404 {
				t.Fatalf("query of a device not configured: %s, want 404", m.Start)
			}
		})
	}
}

// TestInvite: the upper platform INVITEs a channel over UDP, TCP with vinfer connecting and
// TCP with vinfer listening; the PS it receives is the clip's own video: vinfer's PS demuxer
// and FFmpeg decode it. BYE ends the session; a channel not configured is not found.
func TestInvite(t *testing.T) {
	clip := sourcetest.LoadClip(t, "videos/car-detection.mp4")
	ffmpeg := sourcetest.Tool(t, "ffmpeg")
	for _, tc := range []struct{ sip, media string }{{"UDP", "udp"}, {"TCP", "tcp-passive"}, {"TCP", "tcp-active"}} {
		t.Run(tc.sip+"-"+tc.media, func(t *testing.T) {
			up := upsim.New(t, tc.sip, upperID, password)
			c := start(t, up, password, &testutil.LogBuffer{})
			feed(t, c, "cam1", clip)
			testutil.Eventually(t, wait, "registered", func() bool { return c.Upstream(0).Registered() && up.Lower() != "" })

			if m, _ := up.Invite(other, upsim.NewReceiver(t, "udp"), "0100000001"); m.Status() != 404 {
				t.Fatalf("INVITE of a channel not configured: %s, want 404", m.Start)
			}
			if m, _ := up.Invite(channel2, upsim.NewReceiver(t, "udp"), "0100000001"); m.Status() != 480 {
				t.Fatalf("INVITE of a channel whose stream does not run: %s, want 480", m.Start)
			}
			rx := upsim.NewReceiver(t, tc.media)
			m, callID := up.Invite(channel1, rx, "0100000001")
			if m.Status() != 200 || !strings.Contains(string(m.Body), "y=0100000001") {
				t.Fatalf("INVITE: %s\n%s", m.Start, m.Body)
			}
			samples := map[string]bool{} // the clip's access units: what is sent must be them, byte for byte
			for i := range clip.Samples {
				samples[string(clip.AnnexB(i))] = true
			}
			frames, foreign := 0, 0
			var codec media.Codec
			testutil.Eventually(t, wait, "50 frames of PS received", func() bool {
				frames, foreign = 0, 0
				d := ps.Demuxer{OnFrame: func(f *ps.Frame) {
					frames++
					codec = f.Codec
					if !samples[string(f.Data)] {
						foreign++
					}
				}}
				d.Write(rx.PS())
				return frames >= 50
			})
			if codec != clip.Codec || !slices.Equal(rx.SSRCs(), []uint32{100000001}) || foreign != 0 {
				t.Fatalf("codec %v SSRCs %v, %d frames not the clip's, want %v, the offer's y= and none", codec, rx.SSRCs(), foreign, clip.Codec)
			}
			if m := up.Bye(channel1, callID, upsim.ToTag(m)); m.Status() != 200 {
				t.Fatalf("BYE: %s", m.Start)
			}
			testutil.Eventually(t, wait, "the session ended", func() bool { return c.Upstream(0).Sessions() == 0 })

			file := filepath.Join(t.TempDir(), "rx.ps")
			if err := os.WriteFile(file, rx.PS(), 0o644); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command(ffmpeg, "-v", "error", "-f", "mpeg", "-i", file, "-f", "framecrc", "-").CombinedOutput()
			if err != nil {
				t.Fatalf("ffmpeg: %v\n%s", err, out)
			}
			decoded := 0
			for _, l := range strings.Split(string(out), "\n") {
				if l != "" && !strings.HasPrefix(l, "#") {
					decoded++
				}
			}
			if decoded < 50 {
				t.Fatalf("FFmpeg decoded %d frames of the PS, want ≥ 50:\n%s", decoded, out)
			}
			t.Logf("%d frames by the demuxer, %d decoded by FFmpeg, %d RTP packets", frames, decoded, rx.Packets())
		})
	}
}

// events are one of each event type of stream cam1.
func events(stream string) *sink.Result {
	r := &sink.Result{Stream: stream}
	for i, ty := range event.Types {
		r.Events = append(r.Events, event.Event{Type: ty, Stream: stream, TrackID: int64(i + 1), Label: "person", Time: time.Now(),
			Line: map[bool]string{true: "exit"}[ty == event.LineCross], Zone: map[bool]string{true: "table"}[ty != event.LineCross && ty != event.TrackStart && ty != event.TrackEnd],
			Evidence: &event.Evidence{Base: "http://vinfer.local:8080", Snapshot: true}})
	}
	return r
}

// TestAlarms: line.cross, zone.enter and zone.loiter become Alarm MESSAGEs of the channel
// (AlarmMethod 5; AlarmType 5, 6, 8), other events none; once the upper platform subscribes,
// they come as NOTIFYs in its subscription.
func TestAlarms(t *testing.T) {
	for _, tr := range []string{"UDP", "TCP"} {
		t.Run(tr, func(t *testing.T) {
			up := upsim.New(t, tr, upperID, password)
			c := start(t, up, password, &testutil.LogBuffer{})
			testutil.Eventually(t, wait, "registered", func() bool { return c.Upstream(0).Registered() && up.Lower() != "" })
			c.Write(events("cam1"))
			c.Write(events("elsewhere")) // a stream no channel carries
			alarms := func(method string) []*upsim.Msg {
				return up.Messages(func(m *upsim.Msg) bool { return m.Method() == method && m.Field("CmdType") == "Alarm" })
			}
			testutil.Eventually(t, wait, "three alarm MESSAGEs", func() bool { return len(alarms("MESSAGE")) >= 3 })
			var types []string
			for _, m := range alarms("MESSAGE") {
				if m.Field("DeviceID") != channel1 || m.Field("AlarmMethod") != "5" || m.Field("AlarmPriority") != "3" || m.Field("AlarmTime") == "" {
					t.Fatalf("alarm:\n%s", m.Body)
				}
				d := m.Field("AlarmDescription")
				if !strings.Contains(d, "class=person") || !strings.Contains(d, "snapshot=http://vinfer.local:8080/api/evidence/") {
					t.Fatalf("description %q", d)
				}
				types = append(types, m.Field("AlarmType")+"/"+m.Field("EventType"))
			}
			slices.Sort(types)
			if !slices.Equal(types, []string{"5/", "6/1", "8/"}) {
				t.Fatalf("alarm types %v, want tripwire 5, intrusion 6 (enter), loitering 8", types)
			}

			m, sub := up.SubscribeAlarms(lowerID, 600, "0", "", "")
			if m.Status() != 200 || m.Get("Expires") != "600" {
				t.Fatalf("SUBSCRIBE: %s %q", m.Start, m.Get("Expires"))
			}
			c.Write(events("cam1"))
			testutil.Eventually(t, wait, "three alarm NOTIFYs", func() bool { return len(alarms("NOTIFY")) >= 3 })
			if n := len(alarms("MESSAGE")); n != 3 {
				t.Fatalf("%d alarm MESSAGEs, want the first 3 only", n)
			}
			for _, m := range alarms("NOTIFY") {
				if m.Get("Call-ID") != sub || !strings.HasPrefix(m.Get("Subscription-State"), "active") {
					t.Fatalf("NOTIFY outside the subscription: %q %q", m.Get("Call-ID"), m.Get("Subscription-State"))
				}
			}
			cnt := &c.Upstream(0).Counters
			// the count follows the 200, which the platform sends after recording the alarm
			testutil.Eventually(t, wait, "six alarms counted sent", func() bool { return cnt.AlarmsSent.Load() == 6 })

			// A subscription to device alarms only (AlarmMethod 2) filters out video alarms; its
			// end brings MESSAGEs back.
			if m, _ := up.SubscribeAlarms(lowerID, 0, "0", sub, upsim.ToTag(m)); m.Status() != 200 {
				t.Fatalf("unsubscribe: %s", m.Start)
			}
			m, sub = up.SubscribeAlarms(lowerID, 600, "2", "", "")
			if m.Status() != 200 {
				t.Fatalf("SUBSCRIBE: %s", m.Start)
			}
			c.Write(events("cam1"))
			testutil.Eventually(t, wait, "three alarms filtered", func() bool { return cnt.AlarmsFiltered.Load() == 3 })
			if m, _ := up.SubscribeAlarms(lowerID, 0, "2", sub, upsim.ToTag(m)); m.Status() != 200 {
				t.Fatalf("unsubscribe: %s", m.Start)
			}
			c.Write(events("cam1"))
			testutil.Eventually(t, wait, "three more alarm MESSAGEs, counted", func() bool {
				return len(alarms("MESSAGE")) >= 6 && cnt.AlarmsSent.Load() == 9
			})
			if n, dropped := len(alarms("NOTIFY")), cnt.AlarmsDropped.Load(); n != 3 || dropped != 0 {
				t.Fatalf("%d NOTIFYs (want 3), %d dropped", n, dropped)
			}
		})
	}
}
