package onvif_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/vinfer/vinfer/onvif"
)

// A device that answers with a redirect (307 and 308 resend the POST with its UsernameToken,
// 302 turns it into a GET) does not send the client to another host: the redirect is not
// followed and the call fails with ErrReply, whether the client has its own http.Client or
// not.
func TestRedirectNotFollowed(t *testing.T) {
	t.Parallel()
	var reached atomic.Int64
	var leaked atomic.Bool
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
		if b, _ := io.ReadAll(io.LimitReader(r.Body, 1<<16)); strings.Contains(string(b), "UsernameToken") {
			leaked.Store(true)
		}
		w.WriteHeader(http.StatusNotFound)
	}))
	defer other.Close()
	var code atomic.Int64
	dev := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/latest/meta-data/", int(code.Load()))
	}))
	defer dev.Close()
	for _, c := range []int{http.StatusTemporaryRedirect, http.StatusPermanentRedirect, http.StatusFound} {
		code.Store(int64(c))
		for _, hc := range []*http.Client{nil, {}} {
			cl := &onvif.Client{XAddr: dev.URL + "/onvif/device_service", User: "admin", Password: "secret", HTTP: hc}
			if _, err := cl.Profiles(context.Background()); !errors.Is(err, onvif.ErrReply) {
				t.Errorf("a %d redirect: %v, want ErrReply", c, err)
			}
		}
	}
	if n := reached.Load(); n != 0 || leaked.Load() {
		t.Fatalf("the redirect's target was reached %d times (a UsernameToken sent: %v)", n, leaked.Load())
	}
}
