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
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
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

func freeUDP(t *testing.T) int {
	c, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).Port
}

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
	waitAll := func(within time.Duration, what string, on ...*proc) time.Duration {
		t.Helper()
		allowed := map[string]bool{}
		for _, p := range on {
			allowed[p.name] = true
		}
		t0 := time.Now()
		for {
			s := snapshot()
			ok := len(s) == nStreams
			for _, n := range s {
				ok = ok && allowed[n]
			}
			if ok {
				return time.Since(t0)
			}
			if time.Since(t0) > within {
				t.Fatalf("%s: not within %s: %d streams placed on one node each: %v", what, within, len(s), count(s))
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	waitAll(90*time.Second, "30 streams on a, b, c", a, b, c)
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
	took := waitAll(10*time.Second, "node-b's streams on a and c after SIGKILL", a, c)
	t.Logf("node-b killed: its %d streams ran elsewhere within %.1fs", count(steady)[b.name], took.Seconds())

	// A 4th node: about a quarter move to it, and only to it.
	before := snapshot()
	d := start("node-d")
	mu.Lock()
	live[d] = true
	mu.Unlock()
	waitFor(t, 60*time.Second, "node-d runs streams", func() bool { return count(snapshot())[d.name] > 0 })
	time.Sleep(3 * time.Second) // a few reconcile rounds: everything that moves has moved
	waitAll(10*time.Second, "30 streams on a, c, d", a, c, d)
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
	waitFor(t, 5*time.Second, onC+" stopped on node-c", func() bool {
		ids, err := listStreams(c.url)
		return err == nil && !contains(ids, onC)
	})

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

func waitFor(t *testing.T, within time.Duration, what string, ok func() bool) {
	t.Helper()
	t0 := time.Now()
	for !ok() {
		if time.Since(t0) > within {
			t.Fatalf("%s: not within %s", what, within)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	lines := strings.Split(s[len(s)-n:], "\n")
	return strings.Join(lines[1:], "\n")
}
