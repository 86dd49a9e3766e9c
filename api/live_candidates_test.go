package api_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/pion/webrtc/v4"
)

// TestLiveOfferCandidates: an offer listing a hundred ICE candidates of addresses the client
// chose is refused (400): the server checked each with STUN for 30 s, a thousand datagrams a
// second from one offer (measured on the binary). A browser's offer is still answered.
func TestLiveOfferCandidates(t *testing.T) {
	e := startLive(t, token, 4)
	addRoom(e, "room")
	offer := newViewer(t, webrtc.MimeTypeH264).offer(t)
	var b strings.Builder
	b.WriteString(strings.TrimRight(offer, "\r\n") + "\r\n")
	for i := range 100 {
		fmt.Fprintf(&b, "a=candidate:%d 1 udp 2130706431 192.0.2.%d 9 typ host\r\n", 1000+i, i+1)
	}
	code, loc, body := e.whep("room?reorder=1", b.String(), token, "application/sdp")
	if code == http.StatusCreated {
		e.do("DELETE", loc, "")
	}
	if code != http.StatusBadRequest || !strings.Contains(body, "ICE candidates") {
		t.Fatalf("an offer of 100 candidates: %d %s, want 400", code, body)
	}
	code, loc, body = e.whep("room?reorder=1", newViewer(t, webrtc.MimeTypeH264).offer(t), token, "application/sdp")
	if code != http.StatusCreated {
		t.Fatalf("a browser's offer: %d %s", code, body)
	}
	e.do("DELETE", loc, "")
}
