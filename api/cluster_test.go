package api_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/vinfer/vinfer/api"
	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/internal/defs"
)

// fakeCluster is a cluster of this node ("self") and one other node, which runs every stream.
type fakeCluster struct {
	mu       sync.Mutex
	streams  map[string]config.Stream
	otherURL string
}

func (f *fakeCluster) ClusterView() defs.ClusterView {
	f.mu.Lock()
	defer f.mu.Unlock()
	v := defs.ClusterView{Self: "self", Bucket: "vinfer", State: "member",
		Nodes: []defs.ClusterNode{{Name: "other", URL: f.otherURL, Live: true, Weight: 1}, {Name: "self", Live: true, Weight: 1}}}
	var ids []string
	for id := range f.streams {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		v.Streams = append(v.Streams, defs.ClusterStream{ID: id, Model: f.streams[id].Model, Owner: "other", Assigned: "other", State: "running"})
		v.Nodes[0].Streams = append(v.Nodes[0].Streams, id)
	}
	return v
}

func (f *fakeCluster) Owner(id string) (string, string, bool, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.streams[id]; !ok {
		return "", "", false, false
	}
	return "other", f.otherURL, false, true
}

func (f *fakeCluster) RegisterStream(s config.Stream) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.streams[s.ID]; ok {
		return fmt.Errorf("stream %s: %w", s.ID, defs.ErrStreamExists)
	}
	f.streams[s.ID] = s
	return nil
}

func (f *fakeCluster) UnregisterStream(id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.streams[id]; !ok {
		return fmt.Errorf("stream %s: %w", id, defs.ErrNoStream)
	}
	delete(f.streams, id)
	return nil
}

// TestClusterRoutes: in a cluster, POST and DELETE go to the registry, GET /api/cluster shows
// it, and per-stream calls for a stream another node runs are forwarded there with the
// client's token and without its Origin.
func TestClusterRoutes(t *testing.T) {
	type seen struct{ path, auth, origin, fwd string }
	got := make(chan seen, 10)
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- seen{r.URL.RequestURI(), r.Header.Get("Authorization"), r.Header.Get("Origin"), r.Header.Get("X-Vinfer-Forwarded-By")}
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/api/streams" {
			fmt.Fprint(w, `{"streams":[{"id":"cam1","state":"running","inferred":5}]}`)
			return
		}
		fmt.Fprint(w, `{"id":"cam1","state":"running"}`)
	}))
	defer other.Close()
	fc := &fakeCluster{streams: map[string]config.Stream{}, otherURL: other.URL}
	e := startWith(t, "tok", nil, func(s *api.Server) { s.Cluster = fc })

	var created struct{ ID, Owner, State string }
	e.want("POST", "/api/streams", `{"id":"cam1","source":"rtsp://cam/1","model":"yolox"}`, http.StatusCreated, &created)
	if created.ID != "cam1" || created.Owner != "other" || created.State != "running" {
		t.Fatalf("created %+v", created)
	}
	e.want("POST", "/api/streams", `{"id":"cam1","source":"rtsp://cam/1","model":"yolox"}`, http.StatusConflict, nil)
	e.want("POST", "/api/streams", `{"id":"cam2","source":"rtsp://cam/2","model":"nope"}`, http.StatusBadRequest, nil)
	if len(e.app.Streams()) != 0 {
		t.Fatal("a cluster POST started the stream here")
	}

	var view struct {
		Self    string
		Streams []struct{ ID, Owner, State string }
	}
	e.want("GET", "/api/cluster", "", http.StatusOK, &view)
	if view.Self != "self" || len(view.Streams) != 1 || view.Streams[0].Owner != "other" {
		t.Fatalf("cluster view %+v", view)
	}

	// GET /api/streams is cluster-wide: the other node's streams, asked with the client's token.
	var all struct {
		Streams []struct {
			ID, State, Node, Placement string
			Inferred                   int
		}
	}
	e.want("GET", "/api/streams", "", http.StatusOK, &all)
	if len(all.Streams) != 1 || all.Streams[0].ID != "cam1" || all.Streams[0].Node != "other" || all.Streams[0].Inferred != 5 ||
		all.Streams[0].Placement != "running" {
		t.Fatalf("cluster-wide streams: %+v", all)
	}
	if s := <-got; s.path != "/api/streams?scope=local" || s.auth != "Bearer tok" || s.fwd != "self" {
		t.Fatalf("asked the other node as %+v", s)
	}
	e.want("GET", "/api/streams?scope=local", "", http.StatusOK, &all)
	if len(all.Streams) != 0 {
		t.Fatalf("local streams: %+v", all)
	}
	e.want("GET", "/api/streams?scope=nope", "", http.StatusBadRequest, nil)

	req, _ := http.NewRequest("GET", e.url+"/api/streams/cam1?x=1", nil)
	req.Header.Set("Authorization", "Bearer tok")
	req.Header.Set("Origin", e.url) // same origin: passes this node's guard, not sent on
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("X-Vinfer-Node") != "other" {
		t.Fatalf("GET /api/streams/cam1: %s, node %q", resp.Status, resp.Header.Get("X-Vinfer-Node"))
	}
	s := <-got
	if s.path != "/api/streams/cam1?x=1" || s.auth != "Bearer tok" || s.origin != "" || s.fwd != "self" {
		t.Fatalf("forwarded as %+v", s)
	}
	// Without the token, nothing is forwarded.
	if resp, _ := e.doToken("GET", "/api/streams/cam1", "", ""); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("without a token: %s", resp.Status)
	}
	// A forwarded request is answered here, never forwarded again.
	req, _ = http.NewRequest("GET", e.url+"/api/streams/cam1", nil)
	req.Header.Set("Authorization", "Bearer tok")
	req.Header.Set("X-Vinfer-Forwarded-By", "other")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusNotFound {
		t.Fatalf("forwarded twice: %v %v", err, resp.Status)
	}

	// The cluster's metrics: the nodes, the streams per node, the forwarded request.
	metrics := string(e.want("GET", "/metrics", "", http.StatusOK, nil))
	for _, want := range []string{`vinfer_cluster_member 1`, `vinfer_cluster_nodes{state="live"} 2`,
		`vinfer_cluster_streams{node="other"} 1`, `vinfer_cluster_registry_streams{state="running"} 1`,
		`vinfer_cluster_forwarded_requests_total{node="other",result="ok"} 1`,
		`vinfer_cluster_ownership_changes_total{kind="started"} 0`} {
		if !strings.Contains(metrics, want+"\n") {
			t.Errorf("/metrics lacks %s", want)
		}
	}

	e.want("DELETE", "/api/streams/cam1", "", http.StatusNoContent, nil)
	e.want("DELETE", "/api/streams/cam1", "", http.StatusNotFound, nil)
	e.want("GET", "/api/streams/cam1", "", http.StatusNotFound, nil)
	select {
	case s := <-got:
		t.Fatalf("forwarded after removal: %+v", s)
	default:
	}
}

// TestClusterForwardsBearerOnly: calls forwarded to another node (GET /api/streams, a stream
// it runs) carry the client's bearer token and no other Authorization (Basic stays here).
func TestClusterForwardsBearerOnly(t *testing.T) {
	got := make(chan string, 10)
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Get("Authorization")
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/api/streams" {
			fmt.Fprint(w, `{"streams":[]}`)
			return
		}
		fmt.Fprint(w, `{"id":"cam1","state":"running"}`)
	}))
	defer other.Close()
	fc := &fakeCluster{streams: map[string]config.Stream{"cam1": {ID: "cam1", Model: "yolox"}}, otherURL: other.URL}
	e := startWith(t, "", nil, func(s *api.Server) { s.Cluster = fc })
	cases := []struct{ path, auth, want string }{
		{"/api/streams", "Bearer abc", "Bearer abc"},
		{"/api/streams", "Basic dXNlcjpwdw==", ""},
		{"/api/streams", "Digest x", ""},
		{"/api/streams?access_token=abc", "", "Bearer abc"},
		{"/api/streams/cam1", "bearer abc", "Bearer abc"},
		{"/api/streams/cam1", "Basic dXNlcjpwdw==", ""},
		{"/api/streams/cam1", "", ""},
	}
	for _, c := range cases {
		req, _ := http.NewRequest("GET", e.url+c.path, nil)
		if c.auth != "" {
			req.Header.Set("Authorization", c.auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s (%s): %s", c.path, c.auth, resp.Status)
		}
		if a := <-got; a != c.want {
			t.Errorf("%s with %q: forwarded Authorization %q, want %q", c.path, c.auth, a, c.want)
		}
	}
}
