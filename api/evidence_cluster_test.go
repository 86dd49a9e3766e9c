package api_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/vinfer/vinfer/api"
	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/internal/defs"
)

// memEvidence is a defs.Evidence of fixed events whose files are "ID kind" text files in dir.
type memEvidence struct {
	dir   string
	items []defs.EvidenceItem // newest first
}

func newMemEvidence(t *testing.T, items ...defs.EvidenceItem) memEvidence {
	sort.Slice(items, func(i, j int) bool { return items[i].ID > items[j].ID })
	for i := range items {
		items[i].HasClip, items[i].HasSnapshot, items[i].HasFrame = true, true, true
	}
	return memEvidence{dir: t.TempDir(), items: items}
}

func (m memEvidence) EvidenceList(q defs.EvidenceQuery) ([]defs.EvidenceItem, string, error) {
	var out []defs.EvidenceItem
	for _, it := range m.items {
		if (q.Stream == "" || it.Stream == q.Stream) && (q.Cursor == "" || it.ID < q.Cursor) {
			if len(out) == q.Limit {
				return out, out[len(out)-1].ID, nil
			}
			out = append(out, it)
		}
	}
	return out, "", nil
}

func (m memEvidence) EvidenceItem(id string) (defs.EvidenceItem, error) {
	if len(id) != 26 {
		return defs.EvidenceItem{}, defs.ErrBadEvidenceID
	}
	for _, it := range m.items {
		if it.ID == id {
			return it, nil
		}
	}
	return defs.EvidenceItem{}, defs.ErrEvidenceNotFound
}

func (m memEvidence) EvidenceFile(id string, kind defs.EvidenceFileKind) (*os.File, error) {
	if _, err := m.EvidenceItem(id); err != nil {
		return nil, err
	}
	p := filepath.Join(m.dir, fmt.Sprintf("%s-%d", id, kind))
	if err := os.WriteFile(p, []byte(evidenceFileText(id, kind)), 0o600); err != nil {
		return nil, err
	}
	return os.Open(p)
}

func evidenceFileText(id string, kind defs.EvidenceFileKind) string {
	return fmt.Sprintf("%s kind %d", id, kind)
}

// evID is the n-th test event id (ULIDs sort by time: a larger n is newer).
func evID(n int) string { return fmt.Sprintf("01JABCDEFG%016d", n) }

// TestEvidenceCluster: through a cluster node that does not run the stream, the evidence list
// (?stream= and without it, merged newest first across the nodes and paged with the cursor)
// has the other node's events marked with their node, and an event's JSON, clip (a range
// request), snapshot and frame (?boxes=1 kept), also under /api/events/{id}, come from the
// node that holds it; an id no node holds is a 404, a bad one a 400.
func TestEvidenceCluster(t *testing.T) {
	const token = "ev-cluster"
	ev := func(n int, stream string) defs.EvidenceItem {
		return defs.EvidenceItem{ID: evID(n), Stream: stream, Type: "track.start"}
	}
	other := startWith(t, token, nil, func(s *api.Server) {
		s.Evidence = newMemEvidence(t, ev(1, "cam1"), ev(3, "cam1"), ev(5, "cam1"))
	})
	fc := &fakeCluster{streams: map[string]config.Stream{"cam1": {ID: "cam1", Model: "yolox"}}, otherURL: other.url}
	self := startWith(t, token, nil, func(s *api.Server) {
		s.Evidence = newMemEvidence(t, ev(2, "cam2"), ev(4, "cam2"))
		s.Cluster = fc
	})
	type page struct {
		Items []struct {
			ID, Stream, Node string
			SnapshotURL      string `json:"snapshot_url"`
			ClipURL          string `json:"clip_url"`
			FrameURL         string `json:"frame_url"`
		}
		Next   string
		Errors map[string]string
	}
	ids := func(p page) string {
		var s []string
		for _, it := range p.Items {
			s = append(s, it.ID[len(it.ID)-1:]+"@"+it.Node)
		}
		return strings.Join(s, " ")
	}
	var p page
	self.want("GET", "/api/evidence?stream=cam1", "", 200, &p)
	if got := ids(p); got != "5@other 3@other 1@other" || p.Next != "" {
		t.Fatalf("?stream=cam1 through self: %q next %q, want 5@other 3@other 1@other", got, p.Next)
	}
	snap := p.Items[1].SnapshotURL // the evidence page's thumbnail: snapshot_url + "?boxes=1"
	// The merged list, two a page.
	var pages []string
	cursor := ""
	for range 5 {
		p = page{}
		self.want("GET", "/api/evidence?limit=2"+cursor, "", 200, &p)
		if len(p.Errors) > 0 {
			t.Fatalf("errors: %v", p.Errors)
		}
		pages = append(pages, ids(p))
		if p.Next == "" {
			break
		}
		cursor = "&cursor=" + p.Next
	}
	if got := strings.Join(pages, " | "); got != "5@other 4@self | 3@other 2@self | 1@other" {
		t.Fatalf("merged pages %q", got)
	}
	// The recorded /api/events list is the same.
	p = page{}
	self.want("GET", "/api/events?limit=10&type=track.start", "", 200, &p)
	if got := ids(p); got != "5@other 4@self 3@other 2@self 1@other" {
		t.Fatalf("/api/events?limit=10: %q", got)
	}

	// One event of the other node, and its files.
	id := evID(3)
	var it struct{ ID, Stream string }
	self.want("GET", "/api/evidence/"+id, "", 200, &it)
	if it.ID != id || it.Stream != "cam1" {
		t.Fatalf("/api/evidence/%s through self: %+v", id, it)
	}
	get := func(path, rng string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", self.url+path, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		if rng != "" {
			req.Header.Set("Range", rng)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, c := range []struct {
		path, rng string
		code      int
		want      string
	}{
		{"/api/evidence/" + id + "/snapshot.jpg", "", 200, evidenceFileText(id, defs.EvidenceSnapshot)},
		{snap + "?boxes=1", "", 200, evidenceFileText(id, defs.EvidenceSnapshotBoxed)},
		{"/api/evidence/" + id + "/frame.jpg?boxes=1", "", 200, evidenceFileText(id, defs.EvidenceFrameBoxed)},
		{"/api/evidence/" + id + "/clip.mp4", "bytes=2-5", 206, evidenceFileText(id, defs.EvidenceClipFile)[2:6]},
		{"/api/events/" + id + "/snapshot.jpg?boxes=1", "", 200, evidenceFileText(id, defs.EvidenceSnapshotBoxed)},
		{"/api/events/" + evID(4) + "/frame.jpg", "", 200, evidenceFileText(evID(4), defs.EvidenceFrame)},
	} {
		if code, body := get(c.path, c.rng); code != c.code || body != c.want {
			t.Errorf("%s (%s): %d %q, want %d %q", c.path, c.rng, code, body, c.code, c.want)
		}
	}
	if code, body := get("/api/evidence/"+evID(9)+"/clip.mp4", ""); code != 404 {
		t.Errorf("an id no node holds: %d %s", code, body)
	}
	if code, body := get("/api/evidence/not-an-id/clip.mp4", ""); code != 400 {
		t.Errorf("a bad id: %d %s", code, body)
	}
}

// TestEvidenceClusterPeerDown: a node that does not answer is named under "errors" of the
// merged list, which still has this node's events; an id this node does not hold is a 404.
func TestEvidenceClusterPeerDown(t *testing.T) {
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	self := startWith(t, "", nil, func(s *api.Server) {
		s.Evidence = newMemEvidence(t, defs.EvidenceItem{ID: evID(2), Stream: "cam2"})
		s.Cluster = &fakeCluster{streams: map[string]config.Stream{"cam1": {ID: "cam1", Model: "yolox"}}, otherURL: down.URL}
	})
	var p struct {
		Items  []struct{ ID, Node string }
		Errors map[string]string
	}
	self.want("GET", "/api/evidence?stream=cam2", "", 200, &p)
	if len(p.Items) != 1 || p.Items[0].ID != evID(2) || p.Items[0].Node != "self" || p.Errors["other"] == "" {
		t.Fatalf("with the other node down: %+v", p)
	}
	self.want("GET", "/api/evidence/"+evID(3)+"/snapshot.jpg?boxes=1", "", 404, nil)
}
