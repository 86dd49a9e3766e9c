package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/internal/defs"
)

// jsServer is an embedded nats-server with JetStream that a test restarts on the same port,
// with a store directory of its choice (a fresh one: the store is lost).
type jsServer struct {
	t    *testing.T
	s    *server.Server
	port int
	dir  string
}

func newJSServer(t *testing.T) *jsServer {
	j := &jsServer{t: t}
	j.start(-1, t.TempDir())
	t.Cleanup(func() { j.s.Shutdown() })
	return j
}

func (j *jsServer) start(port int, dir string) {
	j.t.Helper()
	s, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: port, JetStream: true,
		StoreDir: dir, NoLog: true, NoSigs: true})
	if err != nil {
		j.t.Fatal(err)
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		j.t.Fatalf("nats-server on port %d not ready", port)
	}
	j.s, j.port, j.dir = s, s.Addr().(*net.TCPAddr).Port, dir
}

func (j *jsServer) url() string { return fmt.Sprintf("nats://127.0.0.1:%d", j.port) }

// restart stops the server and starts another on its port with the store in dir.
func (j *jsServer) restart(dir string) {
	j.t.Helper()
	j.stop()
	j.start(j.port, dir)
}

func (j *jsServer) stop() {
	j.s.Shutdown()
	j.s.WaitForShutdown()
}

// converged: every node's view has every node live and each of ids running on its place.
func converged(nodes []*testNode, ids []string) (bool, string) {
	for _, n := range nodes {
		v := n.ClusterView()
		live := 0
		for _, m := range v.Nodes {
			if m.Live {
				live++
			}
		}
		if v.State != "member" || live != len(nodes) || len(v.Streams) != len(ids) {
			return false, fmt.Sprintf("%s: %s, %d live nodes, %d streams in its view", n.name, v.State, live, len(v.Streams))
		}
		for _, s := range v.Streams {
			if s.State != "running" {
				return false, fmt.Sprintf("%s: %s %s", n.name, s.ID, s.State)
			}
		}
	}
	return true, ""
}

// registryKeys lists the registry bucket's keys on the server at url.
func registryKeys(t *testing.T, url string) []string {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	kv, err := js.KeyValue(ctx, "vinfer-streams")
	if err != nil {
		t.Fatal(err)
	}
	keys, err := kv.Keys(ctx)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(keys)
	return keys
}

// TestStoreLost: NATS restarts with an empty JetStream store. The nodes make the buckets again,
// repopulate the registry from what they knew and converge: the streams registered before the
// restart (from the configuration and through the API) still run once each, on their place; one
// registered after it is placed; both nodes are live in both views. A restart that keeps the
// store changes nothing either.
func TestStoreLost(t *testing.T) {
	ns := newJSServer(t)
	w := newWorld()
	seed := streamsN(8)
	a, err := startNode(t, ns.url(), w, "a", func(o *Options) { o.Seed = seed })
	if err != nil {
		t.Fatal(err)
	}
	b, err := startNode(t, ns.url(), w, "b", nil)
	if err != nil {
		t.Fatal(err)
	}
	nodes := []*testNode{a, b}
	if err := b.RegisterStream(config.Stream{ID: "api-before", Source: "/videos/before.mp4", Model: "yolox"}); err != nil {
		t.Fatal(err)
	}
	ids := append(sortedIDs(seed), "api-before")
	slices.Sort(ids)
	eventually(t, 10*time.Second, "9 streams placed over a and b", func() (bool, string) {
		if ok, msg := placedAsAssigned(w, ids, []string{"a", "b"}); !ok {
			return false, msg
		}
		return converged(nodes, ids)
	})

	t0 := time.Now()
	ns.restart(t.TempDir())
	eventually(t, 30*time.Second, "buckets rebuilt, 9 streams placed over a and b", func() (bool, string) {
		for _, n := range nodes {
			if n.ClusterView().Counters["store_recovered"] == 0 {
				return false, n.name + " did not rebuild the store"
			}
		}
		if ok, msg := placedAsAssigned(w, ids, []string{"a", "b"}); !ok {
			return false, msg
		}
		return converged(nodes, ids)
	})
	t.Logf("store lost: converged %.1fs after the restart (lease %s)", time.Since(t0).Seconds(), testLease)
	if got := registryKeys(t, ns.url()); !slices.Equal(got, ids) {
		t.Errorf("registry after the restart: %v, want %v", got, ids)
	}

	if err := a.RegisterStream(config.Stream{ID: "api-after", Source: "/videos/after.mp4", Model: "yolox"}); err != nil {
		t.Fatal(err)
	}
	ids = append(ids, "api-after")
	slices.Sort(ids)
	eventually(t, 10*time.Second, "api-after placed", func() (bool, string) {
		if ok, msg := placedAsAssigned(w, ids, []string{"a", "b"}); !ok {
			return false, msg
		}
		return converged(nodes, ids)
	})

	// NATS down for longer than a lease: both nodes stop their streams (isolated); it comes
	// back with an empty store: the registry is rebuilt from what the nodes knew.
	ns.stop()
	eventually(t, 10*time.Second, "both nodes isolated, no stream running", func() (bool, string) {
		for _, n := range nodes {
			if v := n.ClusterView(); v.State != "isolated" {
				return false, n.name + " " + v.State
			}
		}
		return len(w.where()) == 0, fmt.Sprintf("%d streams running", len(w.where()))
	})
	ns.start(ns.port, t.TempDir())
	took := eventually(t, 30*time.Second, "10 streams placed over a and b after a long outage", func() (bool, string) {
		if ok, msg := placedAsAssigned(w, ids, []string{"a", "b"}); !ok {
			return false, msg
		}
		return converged(nodes, ids)
	})
	if got := registryKeys(t, ns.url()); !slices.Equal(got, ids) {
		t.Errorf("registry after the long outage: %v, want %v", got, ids)
	}
	t.Logf("NATS down until both nodes stopped their streams, back with an empty store: converged %.1fs after", took.Seconds())

	// The same store again: nothing lost, nothing to rebuild; a new stream is placed.
	recovered := map[string]uint64{}
	for _, n := range nodes {
		recovered[n.name] = n.ClusterView().Counters["store_recovered"]
	}
	ns.restart(ns.dir)
	// Right after a restart the node may not be reconnected yet: the API reports that and the
	// client retries (a retry of a write that did land finds the stream there).
	eventually(t, 10*time.Second, "api-same-store registered", func() (bool, string) {
		err := b.RegisterStream(config.Stream{ID: "api-same-store", Source: "/videos/same.mp4", Model: "yolox"})
		return err == nil || errors.Is(err, defs.ErrStreamExists), fmt.Sprint(err)
	})
	ids = append(ids, "api-same-store")
	slices.Sort(ids)
	eventually(t, 20*time.Second, "api-same-store placed after a restart with the same store", func() (bool, string) {
		if ok, msg := placedAsAssigned(w, ids, []string{"a", "b"}); !ok {
			return false, msg
		}
		return converged(nodes, ids)
	})
	for _, n := range nodes {
		if got := n.ClusterView().Counters["store_recovered"]; got != recovered[n.name] {
			t.Errorf("%s rebuilt the store after a restart that kept it (%d → %d)", n.name, recovered[n.name], got)
		}
	}
	if got := registryKeys(t, ns.url()); !slices.Equal(got, ids) {
		t.Errorf("registry: %v, want %v", got, ids)
	}
	if d := w.long(); len(d) > 0 {
		t.Fatalf("streams ran twice for longer than a lease:\n%v", d)
	}
}

// TestStoreLostWhileRecovering: NATS restarts (store kept) and, while the node reads the
// buckets again, the registry bucket is lost (a NATS that crash-loops without a persistent
// store): the watch fails, and the next recovery rebuilds the registry from what the node knew
// before, not from the half-read view of the failed attempt.
func TestStoreLostWhileRecovering(t *testing.T) {
	ns := newJSServer(t)
	w := newWorld()
	a, err := startNode(t, ns.url(), w, "a", nil)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for i := range 3 {
		id := fmt.Sprintf("api-%d", i)
		if err := a.RegisterStream(config.Stream{ID: id, Source: "/videos/" + id + ".mp4", Model: "yolox"}); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	eventually(t, 10*time.Second, "3 streams placed on a", func() (bool, string) {
		return converged([]*testNode{a}, ids)
	})
	var fired atomic.Bool
	url := ns.url() // the same port after the restart
	hook := func() {
		if fired.Swap(true) {
			return
		}
		nc, err := nats.Connect(url)
		if err != nil {
			t.Error(err)
			return
		}
		defer nc.Close()
		js, err := jetstream.New(nc)
		if err != nil {
			t.Error(err)
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := js.DeleteKeyValue(ctx, "vinfer-streams"); err != nil {
			t.Error(err)
		}
	}
	testHookBeforeWatch.Store(&hook)
	t.Cleanup(func() { testHookBeforeWatch.Store(nil) })
	ns.restart(ns.dir)
	eventually(t, 30*time.Second, "the registry rebuilt with the 3 streams", func() (bool, string) {
		if !fired.Load() {
			return false, "no recovery yet"
		}
		got, err := registryKeysNow(ns.url())
		if err != nil || !slices.Equal(got, ids) {
			return false, fmt.Sprintf("registry %v (%v)", got, err)
		}
		return converged([]*testNode{a}, ids)
	})
}

// registryKeysNow is registryKeys returning its error (an empty or missing bucket: an error).
func registryKeysNow(url string) ([]string, error) {
	nc, err := nats.Connect(url)
	if err != nil {
		return nil, err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	kv, err := js.KeyValue(ctx, "vinfer-streams")
	if err != nil {
		return nil, err
	}
	keys, err := kv.Keys(ctx)
	slices.Sort(keys)
	return keys, err
}
