package onvifmeta_test

import (
	"encoding/base64"
	"testing"
	"time"

	"github.com/vinfer/vinfer/onvifmeta"
)

// TestWrongPasswordHeld: wrong credentials are answered 401 a second later, counted, so that
// guessing the password goes at most one try a second per connection (10,500 a second from
// one client before); a request with no credentials gets its challenge and the right password
// plays as before.
func TestWrongPasswordHeld(t *testing.T) {
	aus := readClip(t, "videos/person-bicycle-car-detection_reenc.mp4", 1)
	srv, err := onvifmeta.New(onvifmeta.Config{Listen: "127.0.0.1:0", Password: "admin-secret"})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	srv.Observer("cam1").ObserveAccessUnit(&aus[0])
	url := "rtsp://" + srv.Addr() + "/cam1"
	basic := func(user, pass string) string {
		return "Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))
	}
	if code, _, _ := dialSmall(t, srv.Addr()).do(t, "DESCRIBE", url); code != 401 {
		t.Fatalf("no credentials: %d, want 401", code)
	}
	sent := time.Now()
	code, _, _ := dialSmall(t, srv.Addr()).do(t, "DESCRIBE", url, basic("vinfer", "guess-1"))
	if took := time.Since(sent); code != 401 || took < time.Second {
		t.Fatalf("a wrong password: %d after %v, want 401 after at least 1 s", code, took)
	}
	if code, _, _ := dialSmall(t, srv.Addr()).do(t, "DESCRIBE", url, basic("vinfer", "admin-secret")); code != 200 {
		t.Fatalf("the right password: %d, want 200", code)
	}
	if got := srv.Counters().AuthFailed; got != 1 {
		t.Fatalf("auth failures %d, want 1", got)
	}
}
