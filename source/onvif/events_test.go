package onvif_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vinfer/vinfer/internal/testutil"
	"github.com/vinfer/vinfer/source/onvif"
)

// A camera that answers PullMessages at once, empty, whatever Timeout it is given (some do;
// a hostile one can), is not pulled in a tight loop: a pull that brings nothing back starts at
// most once a second.
func TestEventsInstantEmptyPulls(t *testing.T) {
	t.Parallel()
	reply := func(body string) string {
		return `<?xml version="1.0"?><s:Envelope xmlns:s="http://www.w3.org/2003/05/soap-envelope"><s:Body>` + body + `</s:Body></s:Envelope>`
	}
	var pulls atomic.Int64
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(io.LimitReader(r.Body, 1<<16))
		req := string(b)
		switch {
		case strings.Contains(req, "GetCapabilities"):
			w.Write([]byte(reply(`<GetCapabilitiesResponse><Capabilities><Media><XAddr>` + srv.URL + `/media</XAddr></Media>` +
				`<Events><XAddr>` + srv.URL + `/events</XAddr><WSPullPointSupport>true</WSPullPointSupport></Events></Capabilities></GetCapabilitiesResponse>`)))
		case strings.Contains(req, "CreatePullPointSubscription"):
			w.Write([]byte(reply(`<CreatePullPointSubscriptionResponse><SubscriptionReference><Address>` + srv.URL +
				`/sub</Address></SubscriptionReference></CreatePullPointSubscriptionResponse>`)))
		case strings.Contains(req, "PullMessages"):
			pulls.Add(1)
			w.Write([]byte(reply(`<PullMessagesResponse></PullMessagesResponse>`)))
		case strings.Contains(req, "Unsubscribe"), strings.Contains(req, "Renew"):
			w.Write([]byte(reply(`<X/>`)))
		default:
			w.WriteHeader(http.StatusBadRequest)
		}
	}))
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	start := time.Now()
	go func() {
		defer close(done)
		onvif.WatchEvents(ctx, onvif.Target{XAddr: srv.URL + "/onvif/device_service"}, onvif.Watch{})
	}()
	testutil.Eventually(t, 30*time.Second, "three pulls", func() bool { return pulls.Load() >= 3 })
	cancel()
	<-done
	n, secs := pulls.Load(), time.Since(start).Seconds()
	if float64(n) > secs+2 {
		t.Fatalf("%d empty pulls in %.1f s: the camera is pulled in a loop", n, secs)
	}
	t.Logf("%d empty pulls in %.1f s", n, secs)
}
