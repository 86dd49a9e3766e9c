package cluster

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

func TestCheckPeerURL(t *testing.T) {
	cases := []struct {
		url string
		ok  bool
	}{
		{"http://10.0.0.2:8080", true},
		{"https://node-b.example:8443/", true},
		{"http://[::1]:8080", true},
		{"", false},
		{"ftp://10.0.0.2", false},
		{"file:///etc/passwd", false},
		{"http://", false},
		{"http://:8080", false},
		{"http:10.0.0.2", false},
		{"http://user:pw@10.0.0.2:8080", false},
		{"http://10.0.0.2:8080?x=1", false},
		{"http://10.0.0.2:8080/?", false},
		{"http://10.0.0.2:8080#f", false},
		{"http://10.0.0.2:8080/prefix", false},
		{"http://evil.example/%2F", false},
		{"//10.0.0.2:8080", false},
	}
	for _, c := range cases {
		err := checkPeerURL(c.url)
		if (err == nil) != c.ok || err != nil && !errors.Is(err, ErrPeerURL) {
			t.Errorf("%q: %v, want ok %v", c.url, err, c.ok)
		}
	}
}

// entry is a heartbeat as the vinfer-nodes bucket's watcher hands it over.
type entry struct {
	key string
	val []byte
	rev uint64
}

func (e entry) Bucket() string                  { return "vinfer-nodes" }
func (e entry) Key() string                     { return e.key }
func (e entry) Value() []byte                   { return e.val }
func (e entry) Revision() uint64                { return e.rev }
func (e entry) Created() time.Time              { return time.Time{} }
func (e entry) Delta() uint64                   { return 0 }
func (e entry) Operation() jetstream.KeyValueOp { return jetstream.KeyValuePut }

// TestApplyNodeBadURL: a heartbeat whose URL is no base URL keeps the node live for placement
// but no call is forwarded there (Owner and ClusterView give no URL); the warning comes once
// per node while its heartbeats repeat.
func TestApplyNodeBadURL(t *testing.T) {
	var logs bytes.Buffer
	n := &Node{name: "a", instance: "i-a", lease: time.Minute, log: slog.New(slog.NewTextHandler(&logs, nil)),
		streams: map[string]item[regEntry]{}, owners: map[string]item[ownerEntry]{}, nodes: map[string]item[beat]{},
		badURL: map[string]time.Time{}, running: map[string]uint64{}, counters: map[string]uint64{}, beats: map[string]uint64{}}
	put := func(node, url string, rev uint64) {
		b, _ := json.Marshal(beat{Node: node, Instance: "i-" + node, URL: url, Weight: 1})
		n.applyNode(entry{node, b, rev})
	}
	for rev := range uint64(3) {
		put("b", "http://user:secret@evil.example:8080/x?y", rev+1)
		put("c", "https://10.0.0.3:8443", rev+1)
	}
	if got := n.nodes["b"].v.URL; got != "" {
		t.Errorf("b's bad URL kept: %q", got)
	}
	if got := n.nodes["c"].v.URL; got != "https://10.0.0.3:8443" {
		t.Errorf("c's URL %q", got)
	}
	if c := strings.Count(logs.String(), "advertised URL"); c != 1 || strings.Contains(logs.String(), "secret") {
		t.Errorf("%d warnings, want 1 without the password:\n%s", c, logs.String())
	}
	v := n.ClusterView()
	live := 0
	for _, nd := range v.Nodes {
		if nd.Name == "b" && nd.URL != "" {
			t.Errorf("b in the view with URL %q", nd.URL)
		}
		if nd.Live {
			live++
		}
	}
	if live < 2 {
		t.Errorf("nodes %+v: b and c should be live", v.Nodes)
	}
}
