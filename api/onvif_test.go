package api_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/vinfer/vinfer/internal/defs"
	"github.com/vinfer/vinfer/internal/sourcetest"
	"github.com/vinfer/vinfer/internal/testutil"
	"github.com/vinfer/vinfer/onvif/onvifsim"
)

// The discovered cameras list: a probe finds the simulated camera (never adding a stream),
// its profiles are read with the credentials the user gives (a wrong password is 403 and
// never echoed), and a profile's source with the password added becomes a stream that plays.
// Probe targets outside loopback and private networks are refused.
func TestDiscoveredCameras(t *testing.T) {
	const pass = "s3cret-Pa55"
	cam := onvifsim.StartCamera(t, sourcetest.LoadClip(t, "videos/one-by-one-person-detection.mp4"), "admin", pass)
	d := &onvifsim.Device{User: "admin", Password: pass, Name: "Lobby", RTSPAddr: cam.Addr(),
		Profiles: []onvifsim.Profile{{Token: "prof_main", Name: "main", Width: 768, Height: 432, Path: "main"}}}
	d.Start(t)
	r := d.Discover(t, false)
	e := start(t, "")

	var list struct{ Cameras []defs.Camera }
	e.want("GET", "/api/onvif/cameras", "", 200, &list)
	if len(list.Cameras) != 0 {
		t.Fatalf("cameras before any discovery: %+v", list)
	}
	e.want("POST", "/api/onvif/discover", `{"target":"8.8.8.8:3702"}`, 400, nil)
	testutil.Eventually(t, time.Minute, "the camera discovered", func() bool { // UDP: probe again until answered
		e.want("POST", "/api/onvif/discover", `{"target":"`+r.Addr()+`"}`, 200, &list)
		return len(list.Cameras) == 1
	})
	c := list.Cameras[0]
	if c.Name != "Lobby" || c.Endpoint != d.Endpoint || c.XAddr != d.XAddr() {
		t.Fatalf("camera %+v", c)
	}
	var streams struct{ Streams []json.RawMessage }
	e.want("GET", "/api/streams", "", 200, &streams)
	if len(streams.Streams) != 0 {
		t.Fatalf("discovery added streams: %s", streams.Streams)
	}
	b := e.want("POST", "/api/onvif/cameras/"+c.ID+"/profiles", `{"user":"admin","password":"wrong-Pa55"}`, 403, nil)
	if strings.Contains(string(b), "Pa55") {
		t.Fatalf("the answer quotes the password: %s", b)
	}
	e.want("POST", "/api/onvif/cameras/nope/profiles", `{"user":"admin","password":"`+pass+`"}`, 404, nil)
	var profiles struct{ Profiles []defs.CameraProfile }
	b = e.want("POST", "/api/onvif/cameras/"+c.ID+"/profiles", `{"user":"admin","password":"`+pass+`"}`, 200, &profiles)
	if strings.Contains(string(b), "Pa55") || len(profiles.Profiles) != 1 ||
		profiles.Profiles[0].Source != "onvif://admin@"+d.Addr()+"/prof_main" || profiles.Profiles[0].Width != 768 {
		t.Fatalf("profiles %s", b)
	}
	src := strings.Replace(profiles.Profiles[0].Source, "admin@", "admin:"+pass+"@", 1)
	e.want("POST", "/api/streams", `{"id":"lobby","source":"`+src+`","model":"yolox","transport":"tcp"}`, 201, nil)
	testutil.Eventually(t, time.Minute, "the lobby stream inferring", func() bool {
		var v struct {
			Source   string
			Inferred int64 `json:"inferred"`
		}
		b := e.want("GET", "/api/streams/lobby", "", 200, &v)
		if strings.Contains(string(b), "Pa55") {
			t.Fatalf("the stream shows the password: %s", b)
		}
		return v.Inferred > 0
	})
}
