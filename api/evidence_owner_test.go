package api_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vinfer/vinfer/api"
	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/event"
	"github.com/vinfer/vinfer/internal/defs"
)

// peersCluster is a cluster of live peers (name → base URL) beside "self"; it runs no stream.
type peersCluster struct{ peers map[string]string }

func (c peersCluster) ClusterView() defs.ClusterView {
	v := defs.ClusterView{Self: "self", Bucket: "vinfer", State: "member",
		Nodes: []defs.ClusterNode{{Name: "self", Live: true, Weight: 1}}}
	for name, u := range c.peers {
		v.Nodes = append(v.Nodes, defs.ClusterNode{Name: name, URL: u, Live: true, Weight: 1})
	}
	return v
}
func (peersCluster) Owner(string) (string, string, bool, bool) { return "", "", false, false }
func (peersCluster) RegisterStream(config.Stream) error        { return errors.New("not here") }
func (peersCluster) UnregisterStream(string) error             { return defs.ErrNoStream }

// evidencePeer is a node's evidence API that counts the requests it gets: GET
// /api/evidence/{id} is 200 for the ids it holds, 404 for others.
type evidencePeer struct {
	mu    sync.Mutex
	held  map[string]bool
	asked int
}

func (p *evidencePeer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id, _ := strings.CutPrefix(r.URL.Path, "/api/evidence/")
	p.mu.Lock()
	p.asked++
	held := p.held[id]
	p.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if !held {
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `{"error":"no such event"}`)
		return
	}
	fmt.Fprintf(w, `{"id":%q,"stream":"cam1","type":"track.start"}`, id)
}

func (p *evidencePeer) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.asked
}

// tagged returns n ids that name node (event.ID.Node), as that node's generator makes them.
func tagged(node string, n int) []string {
	g := event.NewGenerator([32]byte{byte(len(node)), node[len(node)-1]})
	g.SetNode(node)
	ids := make([]string, n)
	for i := range ids {
		ids[i] = g.New(time.Now()).String()
	}
	return ids
}

// TestEvidenceLookupOneNode: on a cluster node, GET /api/evidence/{id} of an id that names its
// node is sent to that node alone (one request, none to the three others); an id naming no
// live node, and a flood of such random ids, is 404 without a request to any peer; a flood
// of random ids naming a real node costs that node one request each, not one per node. An
// old-style id (naming no node) is still found by asking the nodes, at most 4 such lookups a
// second (bursts of 8), beyond that 429.
func TestEvidenceLookupOneNode(t *testing.T) {
	const token = "evidence-owner-token-01"
	names := []string{"node-a", "node-b", "node-c", "node-d"}
	peers, urls := map[string]*evidencePeer{}, map[string]string{}
	for _, n := range names {
		p := &evidencePeer{held: map[string]bool{}}
		srv := httptest.NewServer(p)
		t.Cleanup(srv.Close)
		peers[n], urls[n] = p, srv.URL
	}
	self := startWith(t, token, nil, func(s *api.Server) {
		s.Evidence = newMemEvidence(t)
		s.Cluster = peersCluster{peers: urls}
	})
	counts := func() string {
		var s []string
		for _, n := range names {
			s = append(s, fmt.Sprintf("%s=%d", n, peers[n].count()))
		}
		return strings.Join(s, " ")
	}

	// An id node-c made, held there: one request, to node-c.
	id := tagged("node-c", 1)[0]
	peers["node-c"].held[id] = true
	var it struct{ ID string }
	self.want("GET", "/api/evidence/"+id, "", 200, &it)
	if it.ID != id {
		t.Fatalf("GET %s: %+v", id, it)
	}
	if got := counts(); got != "node-a=0 node-b=0 node-c=1 node-d=0" {
		t.Fatalf("peers asked %s, want node-c once only", got)
	}

	// Ids of a node that is not in the cluster (its tag no peer's): 404, nobody asked.
	gone := "node-gone"
	for _, n := range names {
		if event.NodeTag(n) == event.NodeTag(gone) {
			t.Fatalf("test setup: %s and %s share a tag", n, gone)
		}
	}
	for _, id := range tagged(gone, 50) {
		self.want("GET", "/api/evidence/"+id, "", 404, nil)
	}
	if got := counts(); got != "node-a=0 node-b=0 node-c=1 node-d=0" {
		t.Fatalf("after 50 ids of no node: peers asked %s, want no more", got)
	}

	// 50 unknown ids naming node-b: one request each, to node-b (404 passed on).
	for _, id := range tagged("node-b", 50) {
		self.want("GET", "/api/evidence/"+id, "", 404, nil)
	}
	if got := counts(); got != "node-a=0 node-b=50 node-c=1 node-d=0" {
		t.Fatalf("after 50 unknown ids of node-b: peers asked %s, want 50 at node-b only", got)
	}

	// An old-style id (naming no node) held by node-a: found by asking every node.
	old := evID(7)
	if oid, err := event.ParseID(old); err != nil {
		t.Fatal(err)
	} else if _, named := oid.Node(); named {
		t.Fatalf("test setup: %s names a node", old)
	}
	peers["node-a"].held[old] = true
	self.want("GET", "/api/evidence/"+old, "", 200, &it)
	if it.ID != old {
		t.Fatalf("GET %s: %+v", old, it)
	}
	// A flood of old-style ids: each answered lookup asks the 4 nodes, and the lookups are
	// held to the rate (4 a second after a burst of 8, the old id above included).
	before := 0
	for _, n := range names {
		before += peers[n].count()
	}
	start := time.Now()
	answered, refused := 0, 0
	for i := range 40 {
		resp, _ := self.do("GET", "/api/evidence/"+evID(100+i), "")
		switch resp.StatusCode {
		case 404:
			answered++
		case 429:
			refused++
		default:
			t.Fatalf("old-style id: %s", resp.Status)
		}
	}
	elapsed := time.Since(start)
	after := 0
	for _, n := range names {
		after += peers[n].count()
	}
	if after-before != 4*answered {
		t.Fatalf("%d old-style lookups answered asked the peers %d times, want 4 each", answered, after-before)
	}
	if limit := 8 + int(elapsed.Seconds()*4) + 1; answered+1 > limit {
		t.Fatalf("%d old-style lookups in %v, want at most %d", answered+1, elapsed, limit)
	}
	if elapsed < 5*time.Second && refused == 0 {
		t.Fatalf("40 old-style lookups in %v all answered, want 429 beyond the rate", elapsed)
	}
}
