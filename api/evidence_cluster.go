package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"

	scene "github.com/vinfer/vinfer/event"
	"github.com/vinfer/vinfer/internal/defs"
)

// Evidence through a cluster (docs/evidence.md, docs/deploy.md): each node records the events
// of the streams it runs, so a node answers
//
//   - GET /api/evidence (and the recorded GET /api/events) with every live node's page merged,
//     newest first: the same query (stream, type, since, until, cursor, limit) to each, each
//     item with "node" (the node that holds it), nodes that did not answer in "errors";
//   - GET /api/evidence/{id}[/clip.mp4|/snapshot.jpg|/frame.jpg] itself when it holds the
//     event, otherwise forwarded (query, Range and bearer token kept) to the node that does:
//     the one the id names (event.ID.Node), or for ids that name none, found by asking the
//     live nodes for /api/evidence/{id} (rate-limited; remembered: maxHeldBy ids).

// maxHeldBy bounds the remembered event id → node entries (dropped all at once when full).
const maxHeldBy = 4096

// heldBy remembers which node holds an event found on another node.
type heldBy struct {
	mu sync.Mutex
	m  map[string]string
}

func (h *heldBy) get(id string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.m[id]
}

func (h *heldBy) put(id, node string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.m == nil || len(h.m) >= maxHeldBy {
		h.m = map[string]string{}
	}
	h.m[id] = node
}

// evidenceIDOK reports an event id (a ULID: 26 ASCII characters of Crockford base32, the
// first at most 7; event.ParseID), the only kind that is sent on to another node.
func evidenceIDOK(id string) bool {
	_, err := scene.ParseID(id)
	return err == nil
}

// evidenceHeld serves an event's route here when this node holds the event (or is not in a
// cluster, or the request was forwarded to it), and forwards it to the node that holds it
// otherwise; when no node does, the local answer (404).
func (s *Server) evidenceHeld(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		if s.Cluster == nil || r.Header.Get(forwardedHeader) != "" || !evidenceIDOK(id) || s.holdsEvidence(id) {
			h(w, r)
			return
		}
		v := s.Cluster.ClusterView()
		peers := map[string]string{}
		for _, n := range v.Nodes {
			if n.Live && n.Name != v.Self && n.URL != "" {
				peers[n.Name] = n.URL
			}
		}
		node := s.evHeldBy.get(id)
		if _, live := peers[node]; !live {
			var ok bool
			if node, ok = s.evidenceOwner(r, id, v.Self, peers); !ok {
				w.Header().Set("Retry-After", "1")
				writeError(w, http.StatusTooManyRequests, "too many lookups of event ids that name no node (made before vinfer named the node in them): try again in a second")
				return
			}
		}
		if node == "" {
			if s.Evidence == nil {
				writeError(w, http.StatusNotFound, "no node of the cluster holds event %s: GET /api/evidence lists them", id)
				return
			}
			h(w, r)
			return
		}
		s.forward(w, r, node, peers[node])
	}
}

// evidenceOwner returns the live peer (of peers: name → base URL) to forward event id to, ""
// when none holds it. An id that names its node (event.ID.Node) goes to the peer with that
// tag without asking (or, when a few share it, to the one of them that has it): one request
// at most per lookup, none for a tag no live peer has. An id that names none (made before
// vinfer named nodes) is asked of every peer, at most legacyLookupRate a second per client
// and legacyLookupTotal over all (api/lookupfair.go; ok false beyond), the answer remembered.
func (s *Server) evidenceOwner(r *http.Request, id, self string, peers map[string]string) (node string, ok bool) {
	eid, err := scene.ParseID(id)
	if tag, named := eid.Node(); err == nil && named {
		var names []string
		for name := range peers {
			if scene.NodeTag(name) == tag {
				names = append(names, name)
			}
		}
		switch len(names) {
		case 0:
			return "", true
		case 1:
			return names[0], true
		}
		some := map[string]string{}
		for _, name := range names {
			some[name] = peers[name]
		}
		return s.askHolder(r, id, self, some), true
	}
	if !s.evLegacy.allow(r, time.Now()) {
		return "", false
	}
	node = s.askHolder(r, id, self, peers)
	if node != "" {
		s.evHeldBy.put(id, node)
	}
	return node, true
}

// holdsEvidence reports whether this node answers for the event itself: it records evidence and
// knows the id (also when its files are gone).
func (s *Server) holdsEvidence(id string) bool {
	if s.Evidence == nil {
		return false
	}
	_, err := s.Evidence.EvidenceItem(id)
	return err == nil || !errors.Is(err, defs.ErrEvidenceNotFound)
}

// askHolder asks the peers (name → base URL) for GET /api/evidence/{id} with the client's token,
// each within peerListTimeout, and returns the first that has it ("" when none does).
func (s *Server) askHolder(r *http.Request, id, self string, peers map[string]string) string {
	ctx, cancel := context.WithTimeout(r.Context(), peerListTimeout)
	defer cancel()
	found := make(chan string, len(peers))
	for name, base := range peers {
		go func() {
			resp, err := s.peerGet(ctx, r, base, "/api/evidence/"+url.PathEscape(id), self)
			if err != nil {
				found <- ""
				return
			}
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxPeerList))
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				found <- name
				return
			}
			found <- ""
		}()
	}
	for range peers {
		if n := <-found; n != "" {
			return n
		}
	}
	return ""
}

// peerGet sends GET base+path to another node with the client's bearer token, marked as
// forwarded (the peer answers for itself).
func (s *Server) peerGet(ctx context.Context, r *http.Request, base, path, self string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(base, "/")+path, nil)
	if err != nil {
		return nil, fmt.Errorf("bad advertised URL: %w", err)
	}
	if a := forwardedAuth(r); a != "" {
		req.Header.Set("Authorization", a)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set(forwardedHeader, self)
	return peerClient.Do(req)
}

// evidencePage is a node's page of recorded events.
type evidencePage struct {
	node  string
	items []map[string]json.RawMessage
	next  string
	err   error
}

// clusterEvidence answers a list on a cluster node: the local page (local, next) and every live
// peer's page for the same query (q, already checked here) merged, newest first (by id, a
// ULID), at most limit items. The next cursor is the last item's id when any node has more.
func (s *Server) clusterEvidence(w http.ResponseWriter, r *http.Request, q url.Values, limit int, local []map[string]json.RawMessage, next string) {
	v := s.Cluster.ClusterView()
	var peers []defs.ClusterNode
	for _, n := range v.Nodes {
		if n.Live && n.Name != v.Self && n.URL != "" {
			peers = append(peers, n)
		}
	}
	pq := url.Values{}
	for k, vs := range q {
		if k != "access_token" { // the token goes in the Authorization header
			pq[k] = vs
		}
	}
	pages := make(chan evidencePage, len(peers))
	for _, p := range peers {
		go func() { pages <- s.peerEvidence(r, p.Name, p.URL, "/api/evidence?"+pq.Encode(), v.Self) }()
	}
	var all []map[string]json.RawMessage
	more := next != ""
	for _, it := range local {
		it["node"] = jsonString(v.Self)
		all = append(all, it)
	}
	errs := map[string]string{}
	for range peers {
		p := <-pages
		if p.err != nil {
			errs[p.node] = p.err.Error()
			continue
		}
		more = more || p.next != ""
		for _, it := range p.items {
			it["node"] = jsonString(p.node)
			all = append(all, it)
			var id string
			if json.Unmarshal(it["id"], &id) == nil && evidenceIDOK(id) {
				s.evHeldBy.put(id, p.node) // the page's clips and thumbnails go there unasked
			}
		}
	}
	id := func(m map[string]json.RawMessage) string {
		var s string
		_ = json.Unmarshal(m["id"], &s)
		return strings.ToUpper(s)
	}
	sort.SliceStable(all, func(i, j int) bool { return id(all[i]) > id(all[j]) })
	items := make([]map[string]json.RawMessage, 0, min(len(all), limit))
	seen := map[string]bool{}
	for _, it := range all {
		if k := id(it); !seen[k] {
			seen[k] = true
			if len(items) == limit {
				more = true
				break
			}
			items = append(items, it)
		}
	}
	out := map[string]any{"items": items, "next": ""}
	if more && len(items) > 0 {
		n := id(items[len(items)-1])
		out["next"] = n
		q.Set("cursor", n)
		out["next_url"] = (&url.URL{Path: r.URL.Path, RawQuery: q.Encode()}).String()
	}
	if len(errs) > 0 {
		out["errors"] = errs
	}
	writeJSON(w, http.StatusOK, out)
}

// peerEvidence asks one node for its page (path with the query); a node that records no
// evidence (404) has an empty page.
func (s *Server) peerEvidence(r *http.Request, node, base, path, self string) evidencePage {
	p := evidencePage{node: node}
	ctx, cancel := context.WithTimeout(r.Context(), peerListTimeout)
	defer cancel()
	resp, err := s.peerGet(ctx, r, base, path, self)
	if err != nil {
		p.err = err
		return p
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		return p
	}
	if resp.StatusCode != http.StatusOK {
		p.err = fmt.Errorf("answered %s", resp.Status)
		return p
	}
	var v struct {
		Items []map[string]json.RawMessage `json:"items"`
		Next  string                       `json:"next"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxPeerList)).Decode(&v); err != nil {
		p.err = fmt.Errorf("unreadable answer: %w", err)
		return p
	}
	p.items, p.next = v.Items, v.Next
	return p
}
