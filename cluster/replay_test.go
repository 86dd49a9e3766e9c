package cluster

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/vinfer/vinfer/config"
)

// TestReplayedRegistryEntry: with a shared secret, a client of the NATS server that copied a
// stream's signed registry entry while it was registered writes it back, byte for byte, after
// the stream was removed. The entry is older than the allowed skew: it is rejected as a replay
// and the removed stream runs nowhere.
func TestReplayedRegistryEntry(t *testing.T) {
	floor := skewFloor
	t.Cleanup(func() { skewFloor = floor }) // after the nodes closed
	skewFloor = 0                           // 5 leases
	url := natsServer(t)
	w := newWorld()
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("0123456789abcdef0123456789abcdef-shared\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	signed := func(o *Options) { o.Config.SecretFile = secret }
	a, err := startNode(t, url, w, "a", signed)
	if err != nil {
		t.Fatal(err)
	}
	b, err := startNode(t, url, w, "b", signed)
	if err != nil {
		t.Fatal(err)
	}
	gone := config.Stream{ID: "gone", Source: "/videos/gone.mp4", Model: "yolox", Loop: true}
	if err := a.RegisterStream(gone); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "gone runs", func() (bool, string) {
		n, ok := w.where()["gone"]
		return ok, "gone on " + n
	})

	// The attacker reads the entry as any client of the account can.
	ev := newAttacker(t, url)
	js, err := jetstream.New(ev.nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	kv, err := js.KeyValue(ctx, "vinfer-streams")
	if err != nil {
		t.Fatal(err)
	}
	e, err := kv.Get(ctx, "gone")
	if err != nil {
		t.Fatal(err)
	}
	captured := append([]byte(nil), e.Value()...)

	if err := a.UnregisterStream("gone"); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "gone stopped", func() (bool, string) {
		n, ok := w.where()["gone"]
		return !ok, "gone on " + n
	})
	// Past the skew a node allows between an entry's signed time and the server's stamp.
	skew := a.maxSkew() + time.Second
	eventually(t, 2*skew, "the captured entry aged past the skew", func() (bool, string) {
		return time.Since(e.Created()) > skew, "waiting"
	})
	before := a.ClusterView().Counters["rejected"] + b.ClusterView().Counters["rejected"]
	if err := ev.nc.Publish("$KV.vinfer-streams.gone", captured); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the replayed entry rejected", func() (bool, string) {
		if n, ok := w.where()["gone"]; ok {
			t.Fatalf("the removed stream runs again on %s after its registry entry was replayed", n)
		}
		after := a.ClusterView().Counters["rejected"] + b.ClusterView().Counters["rejected"]
		return after >= before+2, "rejected by fewer than both nodes"
	})
	for end := time.Now().Add(3 * testLease); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if n, ok := w.where()["gone"]; ok {
			t.Fatalf("the removed stream runs again on %s after its registry entry was replayed", n)
		}
	}
}
