package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/vinfer/vinfer/analytics"
	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/internal/defs"
)

// world is what runs where, across the fake nodes of a test. A stream started while another
// node runs it is an overlap; the issue allows one for at most a lease (a node that looked dead
// on a loaded machine stops within a lease of losing its key): doubles records the longer ones.
type world struct {
	mu       sync.Mutex
	running  map[string]string // stream → node
	starts   map[string]int
	overlaps map[string]overlap // stream → the overlap in progress
	doubles  []string
}

type overlap struct {
	old   string // the node still running it
	since time.Time
	what  string
}

func newWorld() *world {
	return &world{running: map[string]string{}, starts: map[string]int{}, overlaps: map[string]overlap{}}
}

// stopped ends an overlap of stream id when node, its old runner, stops it; w.mu held.
func (w *world) stopped(id, node string) {
	if o, ok := w.overlaps[id]; ok && o.old == node {
		if d := time.Since(o.since); d > testLease {
			w.doubles = append(w.doubles, fmt.Sprintf("%s for %v", o.what, d.Round(time.Millisecond)))
		}
		delete(w.overlaps, id)
	}
}

// long returns the doubles, with the overlaps still in progress for longer than a lease.
func (w *world) long() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := append([]string(nil), w.doubles...)
	for _, o := range w.overlaps {
		if d := time.Since(o.since); d > testLease {
			out = append(out, fmt.Sprintf("%s for %v and on", o.what, d.Round(time.Millisecond)))
		}
	}
	return out
}

func (w *world) where() map[string]string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[string]string, len(w.running))
	for k, v := range w.running {
		out[k] = v
	}
	return out
}

// fakeLocal is a node's app: it "runs" a stream by recording it in the world.
type fakeLocal struct {
	w       *world
	node    string
	mu      sync.Mutex
	streams map[string]config.Stream
	remote  map[string]bool
	// block, when set, holds every start until it is closed (a node whose starts hang).
	block chan struct{}
}

func (f *fakeLocal) AddStream(s config.Stream) error { return f.add(s, false) }
func (f *fakeLocal) AddRemoteStream(s config.Stream) error {
	return f.add(s, true)
}
func (f *fakeLocal) add(s config.Stream, remote bool) error {
	if f.block != nil {
		<-f.block
		return errors.New("start gave up")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.streams[s.ID]; ok {
		return fmt.Errorf("stream %s already exists", s.ID)
	}
	f.w.mu.Lock()
	if other, ok := f.w.running[s.ID]; ok {
		f.w.overlaps[s.ID] = overlap{old: other, since: time.Now(), what: fmt.Sprintf("%s started on %s while running on %s", s.ID, f.node, other)}
	}
	f.w.running[s.ID] = f.node
	f.w.starts[s.ID]++
	f.w.mu.Unlock()
	f.streams[s.ID] = s
	f.remote[s.ID] = remote
	return nil
}
func (f *fakeLocal) RemoveStream(id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.streams[id]; !ok {
		return fmt.Errorf("no stream %q", id)
	}
	delete(f.streams, id)
	f.w.mu.Lock()
	if f.w.running[id] == f.node {
		delete(f.w.running, id)
	}
	f.w.stopped(id, f.node)
	f.w.mu.Unlock()
	return nil
}

// crash drops every stream without the cluster's knowledge (the process died).
func (f *fakeLocal) crash() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for id := range f.streams {
		f.w.mu.Lock()
		if f.w.running[id] == f.node {
			delete(f.w.running, id)
		}
		f.w.stopped(id, f.node)
		f.w.mu.Unlock()
	}
	f.streams = map[string]config.Stream{}
}
func (f *fakeLocal) SetScene(string, analytics.Config) error { return nil }
func (f *fakeLocal) Streams() []defs.StreamInfo {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []defs.StreamInfo
	for _, s := range f.streams {
		out = append(out, defs.StreamInfo{Decl: s})
	}
	return out
}
func (f *fakeLocal) Stream(id string) (defs.StreamInfo, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s, ok := f.streams[id]
	return defs.StreamInfo{Decl: s}, ok
}

// authServer is an embedded nats-server with JetStream and the given authentication (mod nil:
// none); it stops when the test ends.
func authServer(t *testing.T, mod func(*server.Options)) *server.Server {
	t.Helper()
	o := &server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(), NoLog: true, NoSigs: true}
	if mod != nil {
		mod(o)
	}
	s, err := server.NewServer(o)
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats-server not ready")
	}
	t.Cleanup(s.Shutdown)
	return s
}

// natsServer is an embedded nats-server with JetStream, without authentication; it returns
// its client URL.
func natsServer(t *testing.T) string {
	t.Helper()
	return authServer(t, nil).ClientURL()
}

const testLease = 1500 * time.Millisecond

type testNode struct {
	*Node
	local *fakeLocal
}

func startNode(t *testing.T, url string, w *world, name string, mod func(*Options)) (*testNode, error) {
	t.Helper()
	f := &fakeLocal{w: w, node: name, streams: map[string]config.Stream{}, remote: map[string]bool{}}
	o := Options{Config: config.Cluster{NATS: url, Node: name, Advertise: "http://" + name + ".test:8080",
		Lease: config.Duration(testLease)}, Local: f, DefaultMaxStreams: 256, RetryFailed: time.Second,
		Log: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: testLogLevel()}))}
	if mod != nil {
		mod(&o)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	n, err := Start(ctx, o)
	if err != nil {
		return nil, err
	}
	tn := &testNode{Node: n, local: f}
	t.Cleanup(func() {
		select {
		case <-n.ctx.Done():
		default:
			n.Close()
		}
	})
	return tn, nil
}

func streamsN(n int) []config.Stream {
	out := make([]config.Stream, n)
	for i := range out {
		out[i] = config.Stream{ID: fmt.Sprintf("cam-%02d", i), Source: fmt.Sprintf("/videos/cam-%02d.mp4", i), Model: "yolox", Loop: true}
	}
	return out
}

// eventually polls cond every 50 ms until it holds. within is how long the state cond reports
// (its message) may stay the same: a loaded machine slows the nodes down, and a wait fails
// only when nothing moves for that long (or after 10 times that in all).
func eventually(t *testing.T, within time.Duration, what string, cond func() (bool, string)) time.Duration {
	t.Helper()
	t0, changed := time.Now(), time.Now()
	var last string
	for {
		ok, msg := cond()
		if ok {
			return time.Since(t0)
		}
		if msg != last {
			last, changed = msg, time.Now()
		}
		if time.Since(changed) > within || time.Since(t0) > 10*within {
			t.Fatalf("%s: no progress for %s (%s)", what, time.Since(changed).Round(time.Millisecond), last)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// placedAsAssigned: every stream runs, on the node Assign gives for these nodes.
func placedAsAssigned(w *world, ids []string, nodes []string) (bool, string) {
	var members []Member
	for _, n := range nodes {
		members = append(members, Member{Name: n, Weight: 1, Max: 256})
	}
	want := Assign(ids, members)
	got := w.where()
	var bad []string
	for _, id := range ids {
		if got[id] != want[id] {
			bad = append(bad, fmt.Sprintf("%s on %q, not %s", id, got[id], want[id]))
		}
	}
	if len(got) != len(ids) {
		return false, fmt.Sprintf("%d of %d streams running", len(got), len(ids))
	}
	return len(bad) == 0, fmt.Sprintf("%d streams not on their assigned node: %s", len(bad), strings.Join(bad, ", "))
}

func sortedIDs(ss []config.Stream) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = s.ID
	}
	sort.Strings(out)
	return out
}

// TestClusterLifecycle: 30 streams over 3 nodes, each on exactly one; a node killed → its
// streams elsewhere within a lease and a bit; a 4th node → about a quarter move to it, handed
// over (never running twice); a stream removed through node A stops on its owner.
func TestClusterLifecycle(t *testing.T) {
	url := natsServer(t)
	w := newWorld()
	seed := streamsN(30)
	ids := sortedIDs(seed)
	a, err := startNode(t, url, w, "a", func(o *Options) { o.Seed = seed })
	if err != nil {
		t.Fatal(err)
	}
	b, err := startNode(t, url, w, "b", nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := startNode(t, url, w, "c", nil)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "30 streams placed over a, b, c", func() (bool, string) { return placedAsAssigned(w, ids, []string{"a", "b", "c"}) })
	perNode := map[string]int{}
	for _, n := range w.where() {
		perNode[n]++
	}
	t.Logf("placement over 3 nodes: %v", perNode)
	// Each node learns the others' owner keys through its watch, a moment after they start.
	eventually(t, 10*time.Second, "every view: 3 nodes, 30 streams running", func() (bool, string) {
		return converged([]*testNode{a, b, c}, ids)
	})
	// Per-stream calls are forwarded to the owner: every node knows it.
	for _, id := range ids {
		owner := w.where()[id]
		for _, n := range []*testNode{a, b, c} {
			node, u, self, ok := n.Owner(id)
			if !ok || node != owner || self != (n.name == owner) || u != "http://"+owner+".test:8080" {
				t.Fatalf("%s: Owner(%s) = %s %s %v %v, want %s", n.name, id, node, u, self, ok, owner)
			}
		}
	}

	// SIGKILL b: its streams start on a and c within the lease plus a reconcile tick.
	b.kill()
	b.local.crash()
	took := eventually(t, 10*time.Second, "b's streams on a and c", func() (bool, string) { return placedAsAssigned(w, ids, []string{"a", "c"}) })
	t.Logf("b's %d streams restarted elsewhere %.1fs after it died (lease %s)", perNode["b"], took.Seconds(), testLease)

	// A 4th node: about a quarter of the streams move to it, and only to it.
	before := w.where()
	starts := map[string]int{}
	w.mu.Lock()
	for k, v := range w.starts {
		starts[k] = v
	}
	w.mu.Unlock()
	if _, err := startNode(t, url, w, "d", nil); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "streams placed over a, c, d", func() (bool, string) { return placedAsAssigned(w, ids, []string{"a", "c", "d"}) })
	after := w.where()
	moved := 0
	w.mu.Lock()
	for _, id := range ids {
		if before[id] != after[id] {
			moved++
			if after[id] != "d" {
				t.Errorf("%s moved %s → %s, not to the new node", id, before[id], after[id])
			}
		} else if w.starts[id] != starts[id] {
			t.Errorf("%s restarted on %s although it did not move", id, after[id])
		}
	}
	w.mu.Unlock()
	t.Logf("4th node: %d of 30 streams moved to it", moved)
	if moved < 4 || moved > 16 {
		t.Errorf("%d of 30 streams moved to the 4th of 3 nodes, want about 10", moved)
	}

	// Remove, through a, a stream c runs: it stops on c.
	var onC string
	for _, id := range ids {
		if after[id] == "c" {
			onC = id
			break
		}
	}
	if err := a.UnregisterStream(onC); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, onC+" stopped on c", func() (bool, string) {
		_, running := c.local.Stream(onC)
		return !running, "still running"
	})
	if err := a.UnregisterStream(onC); !errors.Is(err, defs.ErrNoStream) {
		t.Errorf("removing it again: %v, want ErrNoStream", err)
	}
	// Added through d: starts on its node, with the API's path policy (AddRemoteStream).
	ns := config.Stream{ID: "new-cam", Source: "/videos/new.mp4", Model: "yolox"}
	if err := a.RegisterStream(ns); err != nil {
		t.Fatal(err)
	}
	if err := c.RegisterStream(ns); !errors.Is(err, defs.ErrStreamExists) {
		t.Errorf("registering it twice: %v, want ErrStreamExists", err)
	}
	eventually(t, 5*time.Second, "new-cam running", func() (bool, string) { _, ok := w.where()["new-cam"]; return ok, "not running" })
	owner := w.where()["new-cam"]
	for _, n := range []*testNode{a, c} {
		if n.name == owner && !n.local.remote["new-cam"] {
			t.Error("an API-added stream was started as trusted (without the path policy)")
		}
	}
	if d := w.long(); len(d) > 0 {
		t.Fatalf("streams ran twice for longer than a lease:\n%v", d)
	}
}

// TestDuplicateNameRefused: a second live node with a taken name is refused.
func TestDuplicateNameRefused(t *testing.T) {
	url := natsServer(t)
	w := newWorld()
	if _, err := startNode(t, url, w, "same", nil); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	_, err := startNode(t, url, w, "same", nil)
	if !errors.Is(err, ErrDuplicateName) {
		t.Fatalf("second node named same: %v, want ErrDuplicateName", err)
	}
	t.Logf("refused after %.1fs", time.Since(t0).Seconds())
}

// TestRestartTakesOverDeadName: a node restarted with its name (a StatefulSet pod) after a
// crash waits for the old heartbeat to go stale, then joins and runs its streams again.
func TestRestartTakesOverDeadName(t *testing.T) {
	url := natsServer(t)
	w := newWorld()
	p, err := startNode(t, url, w, "pod-0", func(o *Options) { o.Seed = streamsN(3) })
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "3 streams on pod-0", func() (bool, string) { return len(w.where()) == 3, "" })
	p.kill()
	p.local.crash()
	if _, err := startNode(t, url, w, "pod-0", nil); err != nil {
		t.Fatalf("restart with the same name: %v", err)
	}
	eventually(t, 10*time.Second, "3 streams on the restarted pod-0", func() (bool, string) { return len(w.where()) == 3, "" })
}

// TestAllAtCap: streams beyond every node's cap wait in the registry, visible as pending, and
// start when room appears.
func TestAllAtCap(t *testing.T) {
	url := natsServer(t)
	w := newWorld()
	capped := func(o *Options) { o.Config.MaxStreams = 2 }
	a, err := startNode(t, url, w, "a", func(o *Options) { capped(o); o.Seed = streamsN(5) })
	if err != nil {
		t.Fatal(err)
	}
	if _, err := startNode(t, url, w, "b", capped); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "4 streams running, 1 pending", func() (bool, string) {
		pending := 0
		for _, s := range a.ClusterView().Streams {
			if s.State == "pending" {
				pending++
			}
		}
		return len(w.where()) == 4 && pending == 1, fmt.Sprintf("%d running, %d pending", len(w.where()), pending)
	})
	if _, err := startNode(t, url, w, "c", capped); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "5 streams running with a third node", func() (bool, string) { return len(w.where()) == 5, "" })
}

// TestNATSUnavailable: Start fails clearly when NATS cannot be reached.
func TestNATSUnavailable(t *testing.T) {
	_, err := startNode(t, "nats://127.0.0.1:1", newWorld(), "x", nil)
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("%v, want ErrUnavailable", err)
	}
}

// proxy is a TCP relay to the NATS server that the test can cut (a network partition).
type proxy struct {
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
	cut   bool
}

func newProxy(t *testing.T, target string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.mu.Lock()
			if p.cut {
				p.mu.Unlock()
				c.Close()
				continue
			}
			u, err := net.Dial("tcp", target)
			if err != nil {
				p.mu.Unlock()
				c.Close()
				continue
			}
			p.conns = append(p.conns, c, u)
			p.mu.Unlock()
			go func() { io.Copy(u, c); u.Close() }()
			go func() { io.Copy(c, u); c.Close() }()
		}
	}()
	t.Cleanup(func() { ln.Close() })
	return p
}

func (p *proxy) url() string { return "nats://" + p.ln.Addr().String() }

func (p *proxy) setCut(cut bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = cut
	if cut {
		for _, c := range p.conns {
			c.Close()
		}
		p.conns = nil
	}
}

// TestLostNATS: a node cut off from NATS stops its streams within a lease; the others run them
// after the lease, never while it still runs them; when NATS is back the node rejoins.
func TestLostNATS(t *testing.T) {
	url := natsServer(t)
	w := newWorld()
	seed := streamsN(12)
	ids := sortedIDs(seed)
	px := newProxy(t, strings.TrimPrefix(url, "nats://"))
	cutNode, err := startNode(t, px.url(), w, "a", func(o *Options) { o.Seed = seed })
	if err != nil {
		t.Fatal(err)
	}
	if _, err := startNode(t, url, w, "b", nil); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "12 streams over a and b", func() (bool, string) { return placedAsAssigned(w, ids, []string{"a", "b"}) })
	onA := 0
	for _, n := range w.where() {
		if n == "a" {
			onA++
		}
	}
	t0 := time.Now()
	px.setCut(true)
	// Within 3/4 of a lease and a tick (lease/6) by design; the bound leaves room for a loaded
	// machine. None runs on both for longer than a lease (w.long).
	stopped := eventually(t, 2*testLease, "a stopped its streams", func() (bool, string) {
		return len(cutNode.local.Streams()) == 0, fmt.Sprintf("%d still run", len(cutNode.local.Streams()))
	})
	eventually(t, 10*time.Second, "all 12 on b", func() (bool, string) { return placedAsAssigned(w, ids, []string{"b"}) })
	t.Logf("a (%d streams) cut off: stopped them after %.1fs, b ran all after %.1fs", onA, stopped.Seconds(), time.Since(t0).Seconds())
	if v := cutNode.ClusterView(); v.State != "isolated" {
		t.Errorf("a's state %q, want isolated", v.State)
	}
	px.setCut(false)
	eventually(t, 15*time.Second, "a rejoined and runs its share again", func() (bool, string) { return placedAsAssigned(w, ids, []string{"a", "b"}) })
	if d := w.long(); len(d) > 0 {
		t.Fatalf("streams ran twice for longer than a lease: %v", d)
	}
}

// testLogLevel is Warn, Debug with VINFER_CLUSTER_DEBUG=1.
func testLogLevel() slog.Level {
	if os.Getenv("VINFER_CLUSTER_DEBUG") == "1" {
		return slog.LevelDebug
	}
	return slog.LevelWarn
}

// progressWait is eventually with its stall limit in leases.
func progressWait(t *testing.T, stall int, what string, cond func() (bool, string)) time.Duration {
	t.Helper()
	return eventually(t, time.Duration(stall)*testLease, what, cond)
}
