package onvif_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/internal/redact"
	"github.com/vinfer/vinfer/internal/sourcetest"
	onvifc "github.com/vinfer/vinfer/onvif"
	"github.com/vinfer/vinfer/onvif/onvifsim"
	"github.com/vinfer/vinfer/source"
	"github.com/vinfer/vinfer/source/onvif"
)

func init() { source.Register(onvif.Kind) }

const wait = time.Minute

// camera starts a simulated ONVIF camera whose profiles' stream URIs name its RTSP server,
// which serves the sample clip; the device reports a private address (behind NAT).
func camera(t *testing.T) *onvifsim.Device {
	cam := onvifsim.StartCamera(t, sourcetest.LoadClip(t, "videos/one-by-one-person-detection.mp4"), "admin", "s3cret-Pa55")
	d := &onvifsim.Device{User: "admin", Password: "s3cret-Pa55", RTSPAddr: cam.Addr(), ReportHost: "192.168.77.9",
		Profiles: []onvifsim.Profile{{Token: "prof_main", Name: "mainStream", Width: 768, Height: 432, Path: "main"}}}
	d.Start(t)
	return d
}

// A stream added as onvif://user:pass@host:port/profile plays the profile's RTSP stream: the
// camera's access units arrive, H.264 at the profile's size, by the profile's name or token.
func TestOpen(t *testing.T) {
	t.Parallel()
	d := camera(t)
	for _, profile := range []string{"mainStream", "prof_main", ""} {
		s := &config.Stream{ID: "door", Source: fmt.Sprintf("onvif://admin:s3cret-Pa55@%s/%s", d.Addr(), profile), Transport: config.TransportTCP}
		src, err := source.Open(s, source.Policy{OpenTimeout: wait})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		keys := 0
		for range 15 {
			au, err := src.Read(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if au.Key {
				keys++
			}
		}
		cancel()
		info := src.Info()
		src.Close()
		if keys == 0 || info.Width != 768 || info.Height != 432 {
			t.Fatalf("%q: %d key frames, %dx%d", profile, keys, info.Width, info.Height)
		}
	}
}

// A wrong password, an unknown profile and a malformed URL are clear errors that never quote
// the password.
func TestOpenErrors(t *testing.T) {
	t.Parallel()
	d := camera(t)
	for _, c := range []struct {
		src  string
		want error
	}{
		{"onvif://admin:wrong-Pa55@" + d.Addr() + "/mainStream", onvifc.ErrAuth},
		{"onvif://admin:s3cret-Pa55@" + d.Addr() + "/thirdStream", onvif.ErrNoProfile},
		{"onvif://admin:s3cret-Pa55@" + d.Addr() + "/a/b", onvif.ErrURL},
		{"onvif://admin:s3cret-Pa55@" + d.Addr() + "/main?x=1", onvif.ErrURL},
	} {
		_, err := source.Open(&config.Stream{ID: "door", Source: c.src}, source.Policy{OpenTimeout: wait})
		if !errors.Is(err, c.want) {
			t.Fatalf("%s: %v, want %v", c.src, err, c.want)
		}
		if strings.Contains(err.Error(), "Pa55") {
			t.Fatalf("the error quotes the password: %v", err)
		}
		t.Logf("%v", err)
	}
}

// The stream's source, as the API and logs show it, has no credentials.
func TestRedacted(t *testing.T) {
	if s := redact.Source("onvif://admin:s3cret-Pa55@10.0.0.9:8080/mainStream"); strings.Contains(s, "Pa55") || strings.Contains(s, "admin") {
		t.Fatalf("redacted: %s", s)
	}
}
