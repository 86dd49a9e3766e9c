// Package cluster_test runs vinfer's cluster mode end to end: an embedded NATS server with
// JetStream and real `vinfer run` processes on loopback, sharing one configuration with 30
// streams. The streams are RTP listeners (rtp://127.0.0.1:PORT), which cost nothing while no
// one sends and cannot run twice: a second node binding the same UDP port would fail to start
// it. The test samples every node's GET /api/streams every 200 ms.
package cluster_test

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/vinfer/vinfer/internal/testutil"
)

const nStreams = 30

type proc struct {
	name string
	url  string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
}

func repoRoot(t *testing.T) string {
	r, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func freeTCP(t *testing.T) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// freeUDP returns an RTP port whose RTCP port (+1) is free too, distinct from every other
// stream's pair.
func freeUDP(t *testing.T) int { return testutil.UDPPortPair(t) }

// listStreams returns the ids of a node's local streams (?scope=local), nil when it does not
// answer.
func listStreams(url string) ([]string, error) {
	c := &http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(url + "/api/streams?scope=local")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var v struct {
		Streams []struct {
			ID    string `json:"id"`
			State string `json:"state"`
		} `json:"streams"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		return nil, err
	}
	var out []string
	for _, s := range v.Streams {
		if s.State != "failed" {
			out = append(out, s.ID)
		}
	}
	return out, nil
}

func TestClusterProcesses(t *testing.T) {
	f := newFixture(t, nStreams)
	start := f.start
	a, b, c := start("node-a"), start("node-b"), start("node-c")

	// The sampler: where every stream runs, every 200 ms; a stream on two nodes in two
	// samples in a row ran twice (one sample can straddle a handover of a few milliseconds).
	var mu sync.Mutex
	where := map[string][]string{}
	var doubles []string
	prevDouble := map[string]bool{}
	live := map[*proc]bool{a: true, b: true, c: true}
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			select {
			case <-stop:
				return
			case <-time.After(200 * time.Millisecond):
			}
			mu.Lock()
			ps := []*proc{}
			for p, ok := range live {
				if ok {
					ps = append(ps, p)
				}
			}
			mu.Unlock()
			now := map[string][]string{}
			complete := true
			for _, p := range ps {
				ids, err := listStreams(p.url)
				if err != nil {
					complete = false
					continue
				}
				for _, id := range ids {
					now[id] = append(now[id], p.name)
				}
			}
			mu.Lock()
			if complete {
				where = now
			}
			for id, nodes := range now {
				if len(nodes) > 1 {
					if prevDouble[id] {
						doubles = append(doubles, fmt.Sprintf("%s on %v", id, nodes))
					}
					prevDouble[id] = true
				} else {
					delete(prevDouble, id)
				}
			}
			mu.Unlock()
		}
	}()
	defer func() { close(stop); <-sampled }()

	snapshot := func() map[string]string {
		mu.Lock()
		defer mu.Unlock()
		out := map[string]string{}
		for id, nodes := range where {
			if len(nodes) == 1 {
				out[id] = nodes[0]
			}
		}
		return out
	}
	total := nStreams // streams in the registry
	waitAll := func(what string, on ...*proc) time.Duration {
		t.Helper()
		allowed := map[string]bool{}
		for _, p := range on {
			allowed[p.name] = true
		}
		return waitProgress(t, what, func() (bool, string) {
			s := snapshot()
			ok := len(s) == total
			for _, n := range s {
				ok = ok && allowed[n]
			}
			return ok, placement(s)
		})
	}
	f.waitUp(a, b, c)
	waitAll("30 streams on a, b, c", a, b, c)
	steady := snapshot()
	t.Logf("3 nodes: %v", count(steady))
	for _, p := range []*proc{a, b, c} {
		if count(steady)[p.name] == 0 {
			t.Errorf("%s runs no stream", p.name)
		}
	}

	// Every node's API shows the cluster and forwards a per-stream call to the owner.
	var onC string
	for id, n := range steady {
		if n == c.name && (onC == "" || id < onC) {
			onC = id
		}
	}
	resp, err := http.Get(a.url + "/api/streams/" + onC)
	if err != nil || resp.StatusCode != http.StatusOK || resp.Header.Get("X-Vinfer-Node") != c.name {
		t.Fatalf("GET %s on node-a: %v %v, forwarded to %q, want 200 from node-c", onC, err, resp.StatusCode, resp.Header.Get("X-Vinfer-Node"))
	}
	resp.Body.Close()
	var view struct {
		Nodes []struct {
			Name    string
			Live    bool
			Streams []string
		}
	}
	resp, err = http.Get(b.url + "/api/cluster")
	if err != nil {
		t.Fatal(err)
	}
	json.NewDecoder(resp.Body).Decode(&view)
	resp.Body.Close()
	if len(view.Nodes) != 3 {
		t.Fatalf("node-b's /api/cluster: %+v", view)
	}

	// SIGKILL node-b: its streams run on a and c within 10 s.
	mu.Lock()
	live[b] = false
	mu.Unlock()
	if err := b.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-b.done
	took := waitAll("node-b's streams on a and c after SIGKILL", a, c)
	t.Logf("node-b killed: its %d streams ran elsewhere within %.1fs", count(steady)[b.name], took.Seconds())

	// A 4th node: about a quarter move to it, and only to it.
	before := snapshot()
	d := start("node-d")
	mu.Lock()
	live[d] = true
	mu.Unlock()
	f.waitUp(d)
	// Everything that moves has moved: node-a's cluster-wide list has every stream running on
	// its assigned node, and the nodes' local lists agree.
	waitProgress(t, "30 streams on a, c, d, settled", func() (bool, string) {
		s := snapshot()
		ok := len(s) == nStreams && count(s)[d.name] > 0
		for _, n := range s {
			ok = ok && n != b.name
		}
		var v struct{ Streams []clusterStream }
		if err := getJSON(t, a.url+"/api/streams", &v); err != nil {
			return false, err.Error()
		}
		for _, cs := range v.Streams {
			ok = ok && cs.Placement == "running" && s[cs.ID] == cs.Node
		}
		return ok && len(v.Streams) == nStreams, placement(s)
	})
	after := snapshot()
	moved := 0
	for id, n := range after {
		if before[id] != n {
			moved++
			if n != d.name {
				t.Errorf("%s moved %s → %s, not to the new node", id, before[id], n)
			}
		}
	}
	t.Logf("4th node: %d of 30 streams moved to it: %v", moved, count(after))
	if moved < 3 || moved > 15 {
		t.Errorf("%d of 30 streams moved to the 4th node, want about 7", moved)
	}

	// Remove through node-a a stream node-c runs: it stops on node-c.
	onC = ""
	for id, n := range after {
		if n == c.name && (onC == "" || id < onC) {
			onC = id
		}
	}
	req, _ := http.NewRequest(http.MethodDelete, a.url+"/api/streams/"+onC, nil)
	resp, err = http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE %s on node-a: %v %v", onC, err, resp.StatusCode)
	}
	total--
	waitProgress(t, onC+" stopped on node-c", func() (bool, string) {
		ids, err := listStreams(c.url)
		return err == nil && !contains(ids, onC), fmt.Sprint(ids, err)
	})

	// SIGTERM node-d: it hands its streams over, and its summary says so (issue 25 item 8:
	// it said "0 stream(s)").
	onD := count(snapshot())[d.name]
	mu.Lock()
	live[d] = false
	mu.Unlock()
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	waitProgress(t, "node-d exited", func() (bool, string) {
		select {
		case <-d.done:
			return true, ""
		default:
			b, _ := os.ReadFile(d.log)
			return false, fmt.Sprint(len(b))
		}
	})
	waitAll("node-d's streams on a and c after SIGTERM", a, c)
	logD, _ := os.ReadFile(d.log)
	if !regexp.MustCompile(fmt.Sprintf(`summary: %d stream\(s\) in [0-9.]+s: 0 here at the end, %d stopped for the cluster \(%d handed over\)`, onD, onD, onD)).Match(logD) {
		t.Errorf("node-d's summary does not list its %d streams handed over:\n%s", onD, tail(string(logD), 3000))
	}
	for _, p := range []*proc{a, c, d} {
		b, _ := os.ReadFile(p.log)
		for _, line := range strings.Split(string(b), "\n") {
			if strings.Count(line, " node=") > 1 {
				t.Errorf("%s: node= twice: %s", p.name, line)
			}
		}
	}

	mu.Lock()
	defer mu.Unlock()
	if len(doubles) > 0 {
		t.Fatalf("streams ran on two nodes: %v", doubles)
	}
}

func count(m map[string]string) map[string]int {
	out := map[string]int{}
	for _, n := range m {
		out[n]++
	}
	return out
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// placement is a snapshot's streams per node, for progress and failure messages.
func placement(s map[string]string) string {
	return fmt.Sprintf("%d placed: %v %v", len(s), count(s), s)
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	lines := strings.Split(s[len(s)-n:], "\n")
	return strings.Join(lines[1:], "\n")
}
