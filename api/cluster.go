package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"time"

	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/internal/defs"
	"github.com/vinfer/vinfer/internal/redact"
)

// forwardedHeader marks a request one node forwarded to a stream's owner: the owner answers it
// itself, never forwards it again.
const forwardedHeader = "X-Vinfer-Forwarded-By"

// clusterView is GET /api/cluster's answer.
type clusterView struct {
	Self    string              `json:"self"`
	Bucket  string              `json:"bucket"`
	State   string              `json:"state"`
	Nodes   []clusterNodeView   `json:"nodes"`
	Streams []clusterStreamView `json:"streams"`
}

type clusterNodeView struct {
	Name            string            `json:"name"`
	URL             string            `json:"url,omitempty"`
	Self            bool              `json:"self,omitempty"`
	Live            bool              `json:"live"`
	LastSeenSeconds float64           `json:"last_seen_seconds"`
	Weight          float64           `json:"weight"`
	MaxStreams      int               `json:"max_streams,omitempty"`
	Streams         []string          `json:"streams"`
	Failed          map[string]string `json:"failed,omitempty"`
}

type clusterStreamView struct {
	ID       string `json:"id"`
	Model    string `json:"model"`
	Owner    string `json:"owner,omitempty"`
	Assigned string `json:"assigned,omitempty"`
	State    string `json:"state"`
}

// clusterInfo answers GET /api/cluster: the nodes, their streams, and each registry stream's
// owner, placement and state (running, moving, pending, unowned).
func (s *Server) clusterInfo(w http.ResponseWriter, r *http.Request) {
	if s.Cluster == nil {
		writeError(w, http.StatusNotFound, "this node is not in a cluster (cluster: section)")
		return
	}
	v := s.Cluster.ClusterView()
	out := clusterView{Self: v.Self, Bucket: v.Bucket, State: v.State, Nodes: []clusterNodeView{}, Streams: []clusterStreamView{}}
	for _, n := range v.Nodes {
		nv := clusterNodeView{Name: n.Name, URL: n.URL, Self: n.Name == v.Self, Live: n.Live, Weight: n.Weight,
			MaxStreams: n.MaxStreams, Streams: n.Streams, LastSeenSeconds: round2(n.LastSeen.Seconds())}
		if nv.Streams == nil {
			nv.Streams = []string{}
		}
		if len(n.Failed) > 0 {
			nv.Failed = map[string]string{}
			for id, e := range n.Failed {
				nv.Failed[id] = redact.Message(e, s.rawSource(id))
			}
		}
		out.Nodes = append(out.Nodes, nv)
	}
	for _, st := range v.Streams {
		out.Streams = append(out.Streams, clusterStreamView(st))
	}
	writeJSON(w, http.StatusOK, out)
}

// clustered serves a per-stream route locally when this node runs the stream (or is not in a
// cluster), and forwards it to the stream's owner otherwise.
func (s *Server) clustered(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		if id == "" {
			id = r.URL.Query().Get("stream")
		}
		if s.Cluster == nil || id == "" || s.streamExists(id) || r.Header.Get(forwardedHeader) != "" {
			h(w, r)
			return
		}
		node, base, self, ok := s.Cluster.Owner(id)
		if !ok || self || base == "" {
			h(w, r) // not in the cluster, or no live owner: the local answer (404)
			return
		}
		s.forward(w, r, node, base)
	}
}

// forward proxies a request to another node (its advertised base URL). The browser checks
// were made here; the forwarded request carries the client's bearer token (no other
// Authorization) and no Origin.
func (s *Server) forward(w http.ResponseWriter, r *http.Request, node, base string) {
	target, err := url.Parse(base)
	if err != nil {
		writeError(w, http.StatusBadGateway, "node %s advertises a bad URL", node)
		return
	}
	p := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.Out.Header.Del("Authorization")
			if a := forwardedAuth(r); a != "" {
				pr.Out.Header.Set("Authorization", a)
			}
			pr.Out.Header.Del("Origin")
			pr.Out.Header.Del("Sec-Fetch-Site")
			pr.Out.Header.Set(forwardedHeader, s.Cluster.ClusterView().Self)
			pr.SetXForwarded()
		},
		FlushInterval: -1, // event streams
		ModifyResponse: func(*http.Response) error {
			s.Metrics.ObserveForward(node, nil)
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			s.Metrics.ObserveForward(node, err)
			writeError(w, http.StatusBadGateway, "node %s, which runs this stream, did not answer: %v", node, err)
		},
	}
	w.Header().Set("X-Vinfer-Node", node)
	p.ServeHTTP(w, r)
}

// clusterAdd answers POST /api/streams on a cluster node: the declaration is checked here and
// written to the registry; the node it falls to starts it. 201 with where it runs once it
// started (within 5 s), 202 when it has not started yet (GET /api/cluster shows it).
func (s *Server) clusterAdd(w http.ResponseWriter, r *http.Request, c config.Stream) {
	if err := s.Cluster.RegisterStream(c); err != nil {
		if errors.Is(err, defs.ErrStreamExists) {
			writeError(w, http.StatusConflict, "stream %q already exists in the cluster: DELETE /api/streams/%s first, or choose another id", c.ID, c.ID)
			return
		}
		writeError(w, http.StatusServiceUnavailable, "%s", redact.Message(err.Error(), c.Source))
		return
	}
	s.Log.Info("api: stream registered in the cluster", "stream", c.ID, "source", redact.Source(c.Source), "model", c.Model)
	w.Header().Set("Location", "/api/streams/"+c.ID)
	deadline := time.Now().Add(5 * time.Second)
	for {
		for _, st := range s.Cluster.ClusterView().Streams {
			if st.ID == c.ID && st.Owner != "" && st.Owner == st.Assigned {
				writeJSON(w, http.StatusCreated, clusterStreamView(st))
				return
			}
			if st.ID == c.ID && time.Now().After(deadline) {
				writeJSON(w, http.StatusAccepted, clusterStreamView(st))
				return
			}
		}
		if time.Now().After(deadline) {
			writeJSON(w, http.StatusAccepted, clusterStreamView{ID: c.ID, Model: c.Model, State: "unowned"})
			return
		}
		select {
		case <-r.Context().Done():
			return
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// clusterDelete answers DELETE /api/streams/{id} on a cluster node: the stream leaves the
// registry and its owner stops it.
func (s *Server) clusterDelete(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if err := s.Cluster.UnregisterStream(id); err != nil {
		if errors.Is(err, defs.ErrNoStream) {
			writeError(w, http.StatusNotFound, "no stream %q in the cluster: GET /api/cluster lists them", id)
			return
		}
		writeError(w, http.StatusServiceUnavailable, "%s", err.Error())
		return
	}
	s.tracker.forget(id)
	s.Log.Info("api: stream removed from the cluster", "stream", id)
	w.WriteHeader(http.StatusNoContent)
}

// inCluster reports whether stream changes go through the cluster's registry.
func (s *Server) inCluster() bool { return s.Cluster != nil }

// peerListTimeout bounds one node's answer to a cluster-wide GET /api/streams; maxPeerList
// bounds its size.
const (
	peerListTimeout = 3 * time.Second
	maxPeerList     = 32 << 20
)

// peerClient asks the other nodes for their streams (no redirects followed).
var peerClient = &http.Client{
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
}

// clusterStreams answers GET /api/streams on a cluster node: every stream of the registry,
// sorted by id, each as its owner reports it (GET /api/streams?scope=local on that node, asked
// with the client's token) plus "node" (its owner, "" when none) and "placement" (running,
// moving, unowned, pending: GET /api/cluster's state). A stream no node reports yet has only
// its id, model, node, placement and a state: starting (its owner has not listed it yet),
// unreachable (its owner did not answer), or its placement. Nodes that did not answer are in
// "errors" (node → why).
func (s *Server) clusterStreams(w http.ResponseWriter, r *http.Request, local []StreamView) {
	v := s.Cluster.ClusterView()
	type answer struct {
		node    string
		streams []map[string]json.RawMessage
		err     error
	}
	var peers []defs.ClusterNode
	for _, n := range v.Nodes {
		if n.Live && n.Name != v.Self && n.URL != "" {
			peers = append(peers, n)
		}
	}
	answers := make(chan answer, len(peers))
	for _, n := range peers {
		go func() {
			st, err := s.peerStreams(r, n.URL, v.Self)
			answers <- answer{n.Name, st, err}
		}()
	}
	byID := map[string]map[string]json.RawMessage{}
	var order []string
	add := func(node string, m map[string]json.RawMessage) {
		var id string
		if json.Unmarshal(m["id"], &id) != nil || id == "" {
			return
		}
		if _, dup := byID[id]; dup {
			return // a stream listed by two nodes for an instant (a handover): the first answer
		}
		m["node"] = jsonString(node)
		byID[id] = m
		order = append(order, id)
	}
	for _, sv := range local {
		b, _ := json.Marshal(sv)
		var m map[string]json.RawMessage
		if json.Unmarshal(b, &m) == nil {
			add(v.Self, m)
		}
	}
	errs := map[string]string{}
	for range peers {
		a := <-answers
		if a.err != nil {
			errs[a.node] = a.err.Error()
			continue
		}
		for _, m := range a.streams {
			add(a.node, m)
		}
	}
	out := make([]map[string]json.RawMessage, 0, len(v.Streams)+len(order))
	inRegistry := map[string]bool{}
	for _, cs := range v.Streams {
		inRegistry[cs.ID] = true
		m, ok := byID[cs.ID]
		if !ok {
			state := cs.State
			switch _, down := errs[cs.Owner]; {
			case down:
				state = "unreachable"
			case cs.Owner != "":
				state = "starting"
			}
			m = map[string]json.RawMessage{"id": jsonString(cs.ID), "model": jsonString(cs.Model), "source": jsonString(""),
				"state": jsonString(state), "node": jsonString(cs.Owner), "dropped": json.RawMessage("{}"), "classes": json.RawMessage("{}")}
		}
		m["placement"] = jsonString(cs.State)
		out = append(out, m)
	}
	for _, id := range order { // running on a node, not (or no longer) in the registry
		if !inRegistry[id] {
			out = append(out, byID[id])
		}
	}
	body := map[string]any{"streams": out, "self": v.Self}
	if len(errs) > 0 {
		body["errors"] = errs
	}
	writeJSON(w, http.StatusOK, body)
}

// forwardedAuth is the Authorization header a call forwarded to another node carries: the
// client's bearer token ("Bearer TOKEN", from the header or ?access_token=), "" otherwise (a
// Basic or other scheme stays here).
func forwardedAuth(r *http.Request) string {
	if t, _ := bearer(r); t != "" {
		return "Bearer " + t
	}
	return ""
}

// peerStreams asks the node at base for its own streams, with the client's token.
func (s *Server) peerStreams(r *http.Request, base, self string) ([]map[string]json.RawMessage, error) {
	ctx, cancel := context.WithTimeout(r.Context(), peerListTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(base, "/")+"/api/streams?scope=local", nil)
	if err != nil {
		return nil, fmt.Errorf("bad advertised URL: %w", err)
	}
	if a := forwardedAuth(r); a != "" {
		req.Header.Set("Authorization", a)
	}
	req.Header.Set(forwardedHeader, self)
	resp, err := peerClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("answered %s", resp.Status)
	}
	var v struct {
		Streams []map[string]json.RawMessage `json:"streams"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxPeerList)).Decode(&v); err != nil {
		return nil, fmt.Errorf("unreadable answer: %w", err)
	}
	return v.Streams, nil
}

func jsonString(s string) json.RawMessage {
	b, _ := json.Marshal(s)
	return b
}
