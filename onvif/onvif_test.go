package onvif_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vinfer/vinfer/onvif"
	"github.com/vinfer/vinfer/onvif/onvifsim"
)

const wait = time.Minute

func device(t *testing.T) *onvifsim.Device {
	d := &onvifsim.Device{User: "admin", Password: "s3cret-Pa55", Name: "Lobby", RTSPAddr: "127.0.0.1:8554",
		Profiles: []onvifsim.Profile{{Token: "prof_main", Name: "mainStream", Width: 768, Height: 432, Path: "main"},
			{Token: "prof_sub", Name: "subStream", Width: 384, Height: 216, Path: "sub"}}}
	d.Start(t)
	return d
}

// The client reads the profiles and a stream URI with a digest UsernameToken the simulated
// device checks; addresses the device reports for another host (behind NAT) are held to the
// device's own host.
func TestProfilesAndStreamURI(t *testing.T) {
	t.Parallel()
	d := device(t)
	d.ReportHost = "10.20.30.40"
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	c := &onvif.Client{XAddr: d.XAddr(), User: "admin", Password: "s3cret-Pa55"}
	ps, err := c.Profiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 2 || ps[0] != (onvif.Profile{Token: "prof_main", Name: "mainStream", Encoding: "H264", Width: 768, Height: 432}) {
		t.Fatalf("profiles %+v", ps)
	}
	uri, err := c.StreamURI(ctx, "prof_sub")
	if err != nil {
		t.Fatal(err)
	}
	if uri != "rtsp://127.0.0.1:8554/sub" {
		t.Fatalf("stream URI %q, want the device's host", uri)
	}
	if _, err := c.StreamURI(ctx, "nope"); !errors.Is(err, onvif.ErrFault) {
		t.Fatalf("unknown profile: %v", err)
	}
	if d.Count("GetCapabilities") != 1 || d.Refused.Load() != 0 {
		t.Fatalf("GetCapabilities %d times, %d refused", d.Count("GetCapabilities"), d.Refused.Load())
	}
}

// A wrong password, a wrong user or none is ErrAuth, and the error never holds the password.
func TestWrongCredentials(t *testing.T) {
	t.Parallel()
	d := device(t)
	for _, c := range []*onvif.Client{
		{XAddr: d.XAddr(), User: "admin", Password: "wrong-Pa55"},
		{XAddr: d.XAddr(), User: "root", Password: "s3cret-Pa55"},
		{XAddr: d.XAddr()},
	} {
		_, err := c.Profiles(context.Background())
		if !errors.Is(err, onvif.ErrAuth) {
			t.Fatalf("%s/%s: %v, want ErrAuth", c.User, c.Password, err)
		}
		if strings.Contains(err.Error(), "Pa55") {
			t.Fatalf("error quotes the password: %v", err)
		}
	}
}

// A unicast probe to the responder finds the device; so does a multicast probe where this
// machine has a multicast interface.
func TestDiscovery(t *testing.T) {
	t.Parallel()
	d := device(t)
	r := d.Discover(t, true)
	check := func(target string) {
		t.Helper()
		var found []onvif.Discovered
		deadline := time.Now().Add(wait)
		for time.Now().Before(deadline) { // UDP: probe again until answered
			got, err := onvif.Probe(context.Background(), target, 2*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			found = slices.DeleteFunc(got, func(x onvif.Discovered) bool { return x.Endpoint != d.Endpoint })
			if len(found) > 0 {
				break
			}
		}
		if len(found) != 1 || found[0].Name != "Lobby" || found[0].Hardware != "SimCam-1" || len(found[0].XAddrs) != 1 || found[0].XAddrs[0] != d.XAddr() {
			t.Fatalf("probe %q found %+v", target, found)
		}
	}
	check(r.Addr())
	if !r.MulticastOK() {
		t.Log("no multicast interface: the multicast probe is not tried")
		return
	}
	check("")
}

// A PullPoint subscription receives the device's motion events.
func TestPullPoint(t *testing.T) {
	t.Parallel()
	d := device(t)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	c := &onvif.Client{XAddr: d.XAddr(), User: "admin", Password: "s3cret-Pa55"}
	p, err := c.Subscribe(ctx, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	d.Motion(true)
	var got []onvif.Notification
	for len(got) == 0 && ctx.Err() == nil {
		ns, err := p.Pull(ctx, 5*time.Second, 10)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, ns...)
	}
	if len(got) != 1 || !got[0].Active() || got[0].Topic != "tns1:RuleEngine/CellMotionDetector/Motion" || got[0].Data["IsMotion"] != "true" {
		t.Fatalf("notifications %+v", got)
	}
	d.Motion(false)
	ns, err := p.Pull(ctx, 5*time.Second, 10)
	if err != nil || len(ns) != 1 || ns[0].Active() {
		t.Fatalf("motion off: %+v %v", ns, err)
	}
	if err := p.Renew(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := p.Unsubscribe(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Pull(ctx, time.Second, 1); !errors.Is(err, onvif.ErrFault) {
		t.Fatalf("pull after unsubscribe: %v", err)
	}
}

// A camera whose clock is 10 minutes off (no NTP) refuses tokens made with ours: the client
// reads the camera's clock first (GetSystemDateAndTime) and its tokens follow it.
func TestClockSkew(t *testing.T) {
	t.Parallel()
	d := device(t)
	d.Clock = -10 * time.Minute
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	c := &onvif.Client{XAddr: d.XAddr(), User: "admin", Password: "s3cret-Pa55"}
	if _, err := c.Profiles(ctx); err != nil {
		t.Fatal(err)
	}
	if d.Count("GetSystemDateAndTime") != 1 || d.Refused.Load() != 0 {
		t.Fatalf("GetSystemDateAndTime %d times, %d refused", d.Count("GetSystemDateAndTime"), d.Refused.Load())
	}
}

// Which events say something happens: motion and analytics rules with a true value do; a
// digital input, a tamper alarm or a rule going false do not.
func TestEventActivity(t *testing.T) {
	t.Parallel()
	d := device(t)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	c := &onvif.Client{XAddr: d.XAddr(), User: "admin", Password: "s3cret-Pa55"}
	p, err := c.Subscribe(ctx, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		topic, item string
		on, active  bool
	}{
		{"tns1:RuleEngine/FieldDetector/ObjectsInside", "IsInside", true, true},
		{"tns1:VideoSource/MotionAlarm", "State", true, true},
		{"tns1:RuleEngine/LineDetector/Crossed", "State", false, false},
		{"tns1:Device/Trigger/DigitalInput", "LogicalState", true, false},
		{"tns1:VideoSource/GlobalSceneChange/ImagingService", "State", true, false},
	}
	for _, c := range cases {
		d.Event(c.topic, c.item, c.on)
	}
	var got []onvif.Notification
	for len(got) < len(cases) && ctx.Err() == nil {
		ns, err := p.Pull(ctx, 5*time.Second, 10)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, ns...)
	}
	for i, c := range cases {
		if got[i].Topic != c.topic || got[i].Active() != c.active {
			t.Fatalf("%s %s=%t: active %t, want %t", c.topic, c.item, c.on, got[i].Active(), c.active)
		}
	}
}
