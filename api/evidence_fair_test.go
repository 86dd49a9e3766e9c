package api_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vinfer/vinfer/api"
)

// clientFrom is an HTTP client whose connections come from the loopback address ip
// (127.0.0.0/8: a second client on the same machine, as the server sees it).
func clientFrom(t *testing.T, ip string) *http.Client {
	t.Helper()
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 10 * time.Second}
	tr := &http.Transport{DialContext: d.DialContext, MaxIdleConnsPerHost: 4}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 30 * time.Second}
}

// get is GET path on e from c with e's token: the status code.
func get(t *testing.T, e *env, c *http.Client, path string) int {
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, e.url+path, nil)
	if err != nil {
		t.Error(err)
		return 0
	}
	req.Header.Set("Authorization", "Bearer "+e.token)
	resp, err := c.Do(req)
	if err != nil {
		t.Error(err)
		return 0
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// TestEvidenceLookupFair: one client flooding a cluster node with old-style event ids (naming
// no node; each lookup asks every peer) is held to its own rate, 429 beyond, and does not
// use up the lookups of another client: while the flood goes on, a second client (another
// address) finds an old-style id it asks for, three times in a row, each at once.
func TestEvidenceLookupFair(t *testing.T) {
	const token = "evidence-fair-token-01"
	peer := &evidencePeer{held: map[string]bool{}}
	old := evID(42)
	peer.held[old] = true
	srv := httptest.NewServer(peer)
	t.Cleanup(srv.Close)
	self := startWith(t, token, nil, func(s *api.Server) {
		s.Evidence = newMemEvidence(t)
		s.Cluster = peersCluster{peers: map[string]string{"node-a": srv.URL}}
	})
	flooder, other := clientFrom(t, "127.0.0.1"), clientFrom(t, "127.0.0.2")

	// The flood: old-style ids none holds, until the other client is done.
	stop := make(chan struct{})
	var refused, sent atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if get(t, self, flooder, "/api/evidence/"+evID(1000+i)) == http.StatusTooManyRequests {
				refused.Add(1)
			}
			sent.Add(1)
		}
	}()
	defer func() { close(stop); wg.Wait() }()
	deadline := time.Now().Add(20 * time.Second)
	for refused.Load() < 20 {
		if time.Now().After(deadline) {
			t.Fatalf("the flood: %d lookups, %d refused in 20 s, want 20 refused", sent.Load(), refused.Load())
		}
		time.Sleep(10 * time.Millisecond)
	}
	for i := range 3 {
		if code := get(t, self, other, "/api/evidence/"+old); code != http.StatusOK {
			t.Fatalf("another client's lookup %d of an old-style id during the flood (%d refused): %d, want 200",
				i+1, refused.Load(), code)
		}
	}
}

// TestEvidenceBadIDNotForwarded: on a cluster node, ids of a ULID's length that are no event
// id (a first character past 7: beyond 128 bits; a non-ASCII letter that upper-cases to one of
// the alphabet's) are answered there (the evidence store's 400), without asking a peer or
// using up the lookups (20 of each in a row: none 429).
func TestEvidenceBadIDNotForwarded(t *testing.T) {
	const token = "evidence-badid-token-01"
	peer := &evidencePeer{held: map[string]bool{}}
	srv := httptest.NewServer(peer)
	t.Cleanup(srv.Close)
	self := startWith(t, token, nil, func(s *api.Server) {
		s.Evidence = newMemEvidence(t)
		s.Cluster = peersCluster{peers: map[string]string{"node-a": srv.URL}}
	})
	for _, id := range []string{
		"8ZZZZZZZZZZZZZZZZZZZZZZZZZ",
		"ZZZZZZZZZZZZZZZZZZZZZZZZZZ",
		"01JABCDEFG00000000000000" + url.PathEscape("ſ"), // ſ upper-cases to S
		"01JABCDEFG00000000000000" + url.PathEscape("ı"), // ı upper-cases to I (not in the alphabet anyway)
	} {
		for range 20 {
			resp, b := self.do("GET", "/api/evidence/"+id, "")
			if resp.StatusCode != http.StatusBadRequest && resp.StatusCode != http.StatusNotFound {
				t.Fatalf("GET %s: %s, want the local answer (400; 404 from this test's store): %s", id, resp.Status, b)
			}
		}
	}
	if n := peer.count(); n != 0 {
		t.Fatalf("bad ids: the peer was asked %d times, want none", n)
	}
}
