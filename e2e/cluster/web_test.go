package cluster_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/coder/websocket"
	"github.com/pion/webrtc/v4"

	"github.com/vinfer/vinfer/internal/testutil/browsertest"
)

const webStreams = 8

// pageLimit bounds the page showing what the servers already say: rendering, not the cluster.
const pageLimit = 3 * time.Minute

// clusterStream is one entry of a cluster-wide GET /api/streams.
type clusterStream struct {
	ID, State, Node, Placement string
}

func getJSON(t *testing.T, url string, v any) error {
	t.Helper()
	c := &http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

// metric returns the value of one series of a node's /metrics (-1 when absent).
func metric(t *testing.T, url, series string) float64 {
	t.Helper()
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Get(url + "/metrics")
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(series) + ` (\S+)$`).FindSubmatch(b)
	if m == nil {
		return -1
	}
	v, _ := strconv.ParseFloat(string(m[1]), 64)
	return v
}

// liveThroughNode: the live video routes of a stream that node owner runs, asked of node p,
// are answered by the owner (X-Vinfer-Node): a WebRTC offer gets its answer (201), the
// fragmented MP4 WebSocket opens (101).
func liveThroughNode(t *testing.T, p *proc, where map[string]string, owner string) {
	t.Helper()
	id := ""
	for s, n := range where {
		if n == owner {
			id = s
			break
		}
	}
	pc, err := webrtc.NewPeerConnection(webrtc.Configuration{})
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	if _, err := pc.AddTransceiverFromKind(webrtc.RTPCodecTypeVideo, webrtc.RTPTransceiverInit{Direction: webrtc.RTPTransceiverDirectionRecvonly}); err != nil {
		t.Fatal(err)
	}
	offer, err := pc.CreateOffer(nil)
	if err != nil {
		t.Fatal(err)
	}
	gathered := webrtc.GatheringCompletePromise(pc)
	if err := pc.SetLocalDescription(offer); err != nil {
		t.Fatal(err)
	}
	<-gathered
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Post(p.url+"/api/streams/"+id+"/whep", "application/sdp", strings.NewReader(pc.LocalDescription().SDP))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated || resp.Header.Get("X-Vinfer-Node") != owner || !strings.HasPrefix(string(body), "v=0") {
		t.Fatalf("WHEP offer for %s (on %s) through %s: %s from %q: %s", id, owner, p.name, resp.Status, resp.Header.Get("X-Vinfer-Node"), body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, wresp, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(p.url, "http")+"/api/streams/"+id+"/mse", nil)
	if err != nil {
		t.Fatalf("fMP4 WebSocket for %s through %s: %v", id, p.name, err)
	}
	c.CloseNow()
	if got := wresp.Header.Get("X-Vinfer-Node"); got != owner {
		t.Fatalf("fMP4 WebSocket for %s answered by %q, want %s", id, got, owner)
	}
}

// TestClusterWeb: two vinfer processes on an embedded nats-server share 8 streams. Every node's
// GET /api/streams lists all 8, each with the node that runs it (the node whose ?scope=local
// lists it); /metrics shows the cluster (vinfer_cluster_nodes, vinfer_cluster_streams{node});
// node-a's web page in headless Chromium shows both nodes live with the streams each owns and
// tags every stream card with its node. SIGKILL node-b: the page shows it dead, then all 8
// streams under node-a, and node-a counts them as taken over.
func TestClusterWeb(t *testing.T) {
	f := newFixture(t, webStreams)
	ctx := browsertest.New(t, 15*time.Minute, 1440, 1000)
	start := f.start
	a, b := start("node-a"), start("node-b")

	// Both nodes run streams, and each node's cluster-wide list names the node that runs each.
	local := func() map[string]string {
		out := map[string]string{}
		for _, p := range []*proc{a, b} {
			ids, err := listStreams(p.url)
			if err != nil {
				return nil
			}
			for _, id := range ids {
				out[id] = p.name
			}
		}
		return out
	}
	var where map[string]string
	f.waitUp(a, b)
	// Settled: both run some, and each node's cluster-wide list names the node that runs each
	// stream, placed where it runs.
	waitProgress(t, "8 streams on node-a and node-b, both running some, as both lists say", func() (bool, string) {
		where = local()
		n := count(where)
		state := placement(where)
		ok := len(where) == webStreams && n[a.name] > 0 && n[b.name] > 0
		for _, p := range []*proc{a, b} {
			var v struct{ Streams []clusterStream }
			if err := getJSON(t, p.url+"/api/streams", &v); err != nil {
				return false, state + " " + err.Error()
			}
			ok = ok && len(v.Streams) == webStreams
			for _, s := range v.Streams {
				ok = ok && where[s.ID] == s.Node && s.Placement == "running"
				state += fmt.Sprintf(" %s:%s/%s", s.ID, s.Node, s.Placement)
			}
		}
		return ok, state
	})
	n := count(where)
	t.Logf("streams per node: %v", n)
	waitProgress(t, "node-a's /metrics shows the cluster", func() (bool, string) {
		got := []float64{metric(t, a.url, `vinfer_cluster_nodes{state="live"}`),
			metric(t, a.url, `vinfer_cluster_streams{node="node-a"}`), metric(t, a.url, `vinfer_cluster_streams{node="node-b"}`),
			metric(t, a.url, `vinfer_cluster_registry_streams{state="running"}`), metric(t, a.url, `vinfer_cluster_member`)}
		want := []float64{2, float64(n[a.name]), float64(n[b.name]), webStreams, 1}
		return fmt.Sprint(got) == fmt.Sprint(want), fmt.Sprintf("%v, want %v", got, want)
	})
	if got := metric(t, a.url, `vinfer_cluster_ownership_changes_total{kind="started"}`); got < float64(n[a.name]) {
		t.Errorf("node-a counted %v started streams, runs %d", got, n[a.name])
	}
	if got := metric(t, a.url, `vinfer_cluster_store_recoveries_total`); got != 0 {
		t.Errorf("vinfer_cluster_store_recoveries_total = %v on a cluster whose store was never lost, want 0", got)
	}

	liveThroughNode(t, a, where, b.name)

	// The page on node-a: both nodes live, each with its streams; each card tagged with its node.
	if err := chromedp.Do(ctx,
		chromedp.Navigate(a.url+"/"),
		chromedp.WaitVisible(chromedp.CSS(`#cluster`)),
	); err != nil {
		t.Fatalf("page load: %v", err)
	}
	want, _ := json.Marshal(where)
	pollPage(t, ctx, "nodes and streams", fmt.Sprintf(`(() => {
		const where = %s;
		const nodes = [...document.querySelectorAll('#cluster .cl-node')];
		if (nodes.length !== 2 || nodes.some(n => n.dataset.live !== '1')) return false;
		for (const n of nodes)
			for (const c of n.querySelectorAll('.cl-stream'))
				if (where[c.dataset.stream] !== n.dataset.node) return false;
		if (document.querySelectorAll('#cluster .cl-stream').length !== %d) return false;
		const cards = [...document.querySelectorAll('.stream[data-stream]')];
		return cards.length === %d && cards.every(c => c.dataset.node === where[c.dataset.stream] &&
			c.querySelector('.cl-tag').textContent === where[c.dataset.stream]) &&
			!!document.querySelector('#nav-cluster:not([hidden])');
	})()`, want, webStreams, webStreams), pageLimit)
	shootPage(t, ctx, "web-cluster.png")

	// SIGKILL node-b: the page shows it dead, then every stream under node-a.
	if err := b.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-b.done
	waitProgress(t, "node-b's streams on node-a", func() (bool, string) {
		ids, err := listStreams(a.url)
		return err == nil && len(ids) == webStreams, fmt.Sprint(ids, err)
	})
	pollPage(t, ctx, "node-b dead, its streams on node-a", fmt.Sprintf(`(() => {
		const nb = document.querySelector('#cluster .cl-node[data-node="node-b"]');
		const na = document.querySelector('#cluster .cl-node[data-node="node-a"]');
		return (!nb || nb.dataset.live === '0') && !!na && na.querySelectorAll('.cl-stream').length === %d &&
			[...document.querySelectorAll('.stream[data-stream]')].every(c => c.dataset.node === 'node-a');
	})()`, webStreams), pageLimit)
	shootPage(t, ctx, "web-cluster-failover.png")
	if got := metric(t, a.url, `vinfer_cluster_ownership_changes_total{kind="taken_over"}`); got < float64(n[b.name]) {
		t.Errorf("node-a counted %v streams taken over, node-b ran %d", got, n[b.name])
	}
}

// pollPage waits for a page condition, one the servers already meet (the page only has to
// show it: it polls every few seconds); on failure it saves a screenshot and fails the test.
func pollPage(t *testing.T, ctx context.Context, step, expr string, timeout time.Duration) {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(timeout),
		chromedp.WithPollingInterval(200*time.Millisecond))); err != nil {
		shootPage(t, ctx, "web-cluster-"+strings.ReplaceAll(step, " ", "-")+"-failed.png")
		t.Fatalf("%s: %v", step, err)
	}
}

// shootPage saves a screenshot under out/test-artifacts/cluster (or $VINFER_TEST_ARTIFACTS).
func shootPage(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Errorf("screenshot %s: %v", name, err)
		return
	}
	dir := os.Getenv("VINFER_TEST_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join(repoRoot(t), "out", "test-artifacts")
	}
	dir = filepath.Join(dir, "cluster")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("artifact: %s", p)
}
