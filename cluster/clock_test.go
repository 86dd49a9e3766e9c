package cluster

import (
	"log/slog"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/internal/testutil"
)

// reported: the log reports peer's clock off by about want (the heartbeat's way to the server
// counts in).
func reported(log, peer string, want time.Duration) bool {
	m := regexp.MustCompile(`peer=` + peer + ` offset=(\S+)`).FindStringSubmatch(log)
	if m == nil {
		return false
	}
	d, err := time.ParseDuration(m[1])
	return err == nil && (d-want).Abs() < 10*time.Second
}

// TestClockOff: of three nodes, b's wall clock is an hour ahead and c's an hour behind. Every
// node sees all three live for two leases (a liveness judged on the heartbeats' stamps would
// have c dead at once), the streams stay where Assign puts them over the three, none is taken
// over or fenced, and each offset is reported. Killed, b (its stamps an hour ahead, which a
// stamp-based judge would keep alive for an hour) is dead one lease later, like any node.
func TestClockOff(t *testing.T) {
	const lease = 3 * time.Second // heartbeats every second: a loaded machine does not miss three
	url := natsServer(t)
	w := newWorld()
	seed := streamsN(12)
	ids := sortedIDs(seed)
	logs := &testutil.LogBuffer{}
	clock := func(off time.Duration) func(*Options) {
		return func(o *Options) {
			o.Config.Lease = config.Duration(lease)
			o.wall = func() time.Time { return time.Now().Add(off) }
		}
	}
	a, err := startNode(t, url, w, "a", func(o *Options) {
		o.Config.Lease = config.Duration(lease)
		o.Seed = seed
		o.Log = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	})
	if err != nil {
		t.Fatal(err)
	}
	b, err := startNode(t, url, w, "b", clock(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	c, err := startNode(t, url, w, "c", clock(-time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	nodes := []*testNode{a, b, c}
	eventually(t, 10*time.Second, "12 streams placed over a, b, c", func() (bool, string) {
		if ok, msg := placedAsAssigned(w, ids, []string{"a", "b", "c"}); !ok {
			return false, msg
		}
		return converged(nodes, ids)
	})
	starts := map[string]int{}
	w.mu.Lock()
	for k, v := range w.starts {
		starts[k] = v
	}
	w.mu.Unlock()

	// Sampled for two leases: every sample has all three live and the placement unchanged.
	end := time.Now().Add(2 * lease)
	samples := 0
	for time.Now().Before(end) {
		if ok, msg := converged(nodes, ids); !ok {
			t.Fatalf("sample %d: %s", samples, msg)
		}
		if ok, msg := placedAsAssigned(w, ids, []string{"a", "b", "c"}); !ok {
			t.Fatalf("sample %d: %s", samples, msg)
		}
		samples++
		time.Sleep(100 * time.Millisecond) // the sampling period, not a wait for a condition
	}
	for _, n := range nodes {
		cs := n.ClusterView().Counters
		if cs["taken_over"] != 0 || cs["fenced"] != 0 {
			t.Errorf("%s took over %d streams and had %d fenced", n.name, cs["taken_over"], cs["fenced"])
		}
	}
	w.mu.Lock()
	for _, id := range ids {
		if w.starts[id] != starts[id] {
			t.Errorf("%s restarted", id)
		}
	}
	w.mu.Unlock()
	eventually(t, 5*time.Second, "a reports b's and c's clocks", func() (bool, string) {
		l := logs.String()
		return reported(l, "b", time.Hour) && reported(l, "c", -time.Hour), l
	})
	if l := logs.String(); strings.Contains(l, "peer=a offset") {
		t.Errorf("a's own clock reported as off:\n%s", l)
	}
	t.Logf("%d samples over %s: 3 nodes live, 12 streams in place", samples, 2*lease)

	// b dies: its streams run on a and c about a lease later.
	onB := 0
	for _, n := range w.where() {
		if n == "b" {
			onB++
		}
	}
	b.kill()
	b.local.crash()
	took := eventually(t, 15*time.Second, "b's streams on a and c", func() (bool, string) {
		return placedAsAssigned(w, ids, []string{"a", "c"})
	})
	t.Logf("b (clock +1h, %d streams) killed: its streams on a and c after %.1fs (lease %s)", onB, took.Seconds(), lease)
	for _, n := range []*testNode{a, c} {
		for _, m := range n.ClusterView().Nodes {
			if m.Name == "b" && m.Live {
				t.Errorf("%s still sees b live", n.name)
			}
		}
	}
	if d := w.long(); len(d) > 0 {
		t.Fatalf("streams ran twice for longer than a lease:\n%v", d)
	}
}
