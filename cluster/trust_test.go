package cluster

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/internal/testutil"
)

// TestNATSAuth: against a nats-server that requires credentials, a node with cluster.auth's
// user and password (or token, or NKey seed file) joins; one without them, with a wrong
// password, another NKey or a missing seed file is refused with ErrAuth.
func TestNATSAuth(t *testing.T) {
	user, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := user.PublicKey()
	seed, _ := user.Seed()
	seedFile := filepath.Join(t.TempDir(), "vinfer.nk")
	if err := os.WriteFile(seedFile, seed, 0o600); err != nil {
		t.Fatal(err)
	}
	stranger, _ := nkeys.CreateUser()
	strangerSeed, _ := stranger.Seed()
	strangerFile := filepath.Join(t.TempDir(), "stranger.nk")
	if err := os.WriteFile(strangerFile, strangerSeed, 0o600); err != nil {
		t.Fatal(err)
	}
	nkeyd := authServer(t, func(o *server.Options) { o.Nkeys = []*server.NkeyUser{{Nkey: pub}} })
	users := authServer(t, func(o *server.Options) { o.Username, o.Password = "vinfer", "s3cret-pw" })
	tokens := authServer(t, func(o *server.Options) { o.Authorization = "t0ken-for-nats" })
	cases := []struct {
		name string
		url  string
		auth config.ClusterAuth
		ok   bool
	}{
		{"user", users.ClientURL(), config.ClusterAuth{User: "vinfer", Password: "s3cret-pw"}, true},
		{"no-credentials", users.ClientURL(), config.ClusterAuth{}, false},
		{"wrong-password", users.ClientURL(), config.ClusterAuth{User: "vinfer", Password: "guess"}, false},
		{"token", tokens.ClientURL(), config.ClusterAuth{Token: "t0ken-for-nats"}, true},
		{"no-token", tokens.ClientURL(), config.ClusterAuth{}, false},
		{"nkey", nkeyd.ClientURL(), config.ClusterAuth{NKeySeedFile: seedFile}, true},
		{"other-nkey", nkeyd.ClientURL(), config.ClusterAuth{NKeySeedFile: strangerFile}, false},
		{"no-nkey", nkeyd.ClientURL(), config.ClusterAuth{}, false},
		{"missing-seed-file", nkeyd.ClientURL(), config.ClusterAuth{NKeySeedFile: seedFile + ".gone"}, false},
	}
	for _, c := range cases {
		_, err := startNode(t, c.url, newWorld(), c.name, func(o *Options) { o.Config.Auth = c.auth })
		switch {
		case c.ok && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case !c.ok && !errors.Is(err, ErrAuth):
			t.Errorf("%s: %v, want ErrAuth", c.name, err)
		case !c.ok && (strings.Contains(err.Error(), "s3cret") || strings.Contains(err.Error(), "guess")):
			t.Errorf("%s: the error shows the password: %v", c.name, err)
		}
	}
}

// TestNATSTLS: against a nats-server that requires TLS with client certificates, a node with
// cluster.tls (the CA, its certificate and key) joins; one with the CA but no certificate is
// refused with ErrAuth, and so is one that does not trust the server's CA.
func TestNATSTLS(t *testing.T) {
	dir := t.TempDir()
	ca, caKey := makeCert(t, dir, "ca", nil, nil)
	makeCert(t, dir, "server", ca, caKey)
	makeCert(t, dir, "client", ca, caKey)
	other, otherKey := makeCert(t, dir, "other-ca", nil, nil)
	makeCert(t, dir, "stranger", other, otherKey)
	p := func(name string) string { return filepath.Join(dir, name) }
	tc, err := server.GenTLSConfig(&server.TLSConfigOpts{CertFile: p("server.pem"), KeyFile: p("server.key"),
		CaFile: p("ca.pem"), Verify: true, Timeout: 5})
	if err != nil {
		t.Fatal(err)
	}
	s := authServer(t, func(o *server.Options) { o.TLSConfig, o.TLSVerify, o.TLSTimeout = tc, true, 5 })
	url := fmt.Sprintf("tls://127.0.0.1:%d", s.Addr().(*net.TCPAddr).Port)
	cases := []struct {
		name string
		tls  config.ClusterTLS
		ok   bool
	}{
		{"mutual", config.ClusterTLS{CA: p("ca.pem"), Cert: p("client.pem"), Key: p("client.key")}, true},
		{"no-client-cert", config.ClusterTLS{CA: p("ca.pem")}, false},
		{"untrusted-server", config.ClusterTLS{CA: p("other-ca.pem"), Cert: p("stranger.pem"), Key: p("stranger.key")}, false},
	}
	for _, c := range cases {
		_, err := startNode(t, url, newWorld(), c.name, func(o *Options) { o.Config.TLS = c.tls })
		if c.ok && err != nil {
			t.Errorf("%s: %v", c.name, err)
		} else if !c.ok && !errors.Is(err, ErrAuth) {
			t.Errorf("%s: %v, want ErrAuth", c.name, err)
		}
	}
	// A missing file is named.
	_, err = startNode(t, url, newWorld(), "missing", func(o *Options) { o.Config.TLS = config.ClusterTLS{CA: p("nope.pem")} })
	if !errors.Is(err, ErrAuth) || !strings.Contains(err.Error(), "cluster.tls.ca") {
		t.Errorf("missing CA file: %v", err)
	}
}

// makeCert writes NAME.pem and NAME.key under dir: a CA when parent is nil, else a
// certificate for 127.0.0.1 signed by parent.
func makeCert(t *testing.T, dir, name string, parent *x509.Certificate, parentKey *ecdsa.PrivateKey) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	signer, signKey := tmpl, key
	if parent == nil {
		tmpl.IsCA, tmpl.BasicConstraintsValid = true, true
		tmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature
	} else {
		tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
		tmpl.KeyUsage = x509.KeyUsageDigitalSignature
		signer, signKey = parent, parentKey
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signer, &key.PublicKey, signKey)
	if err != nil {
		t.Fatal(err)
	}
	kb, _ := x509.MarshalECPrivateKey(key)
	write := func(file, typ string, b []byte) {
		if err := os.WriteFile(filepath.Join(dir, file), pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: b}), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(name+".pem", "CERTIFICATE", der)
	write(name+".key", "EC PRIVATE KEY", kb)
	cert, _ := x509.ParseCertificate(der)
	return cert, key
}

// attacker writes to the NATS server as anyone who can reach it can: a forged heartbeat of node
// "evil" advertising its own URL, every lease/3, and owner keys of every stream in its name.
type attacker struct {
	nc *nats.Conn
}

const attackerURL = "http://attacker.example:9999"

func newAttacker(t *testing.T, url string) *attacker {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return &attacker{nc: nc}
}

// forge publishes on the key-value subjects directly ($KV.BUCKET.KEY, as JetStream's KV stores
// them), without going through any node.
func (a *attacker) forge(t *testing.T, bucket, key string, v any) {
	t.Helper()
	b, _ := json.Marshal(v)
	if err := a.nc.Publish("$KV."+bucket+"."+key, b); err != nil {
		t.Fatal(err)
	}
}

// heartbeats forges evil's heartbeat, with weight, every lease/3 until the test ends.
func (a *attacker) heartbeats(t *testing.T, weight float64) {
	stop := make(chan struct{})
	done := make(chan struct{})
	t.Cleanup(func() { close(stop); <-done })
	go func() {
		defer close(done)
		tick := time.NewTicker(testLease / 3)
		defer tick.Stop()
		for seq := uint64(1); ; seq++ {
			b, _ := json.Marshal(beat{Node: "evil", Instance: "forged", URL: attackerURL, Weight: weight, Seq: seq,
				SentMS: time.Now().UnixMilli()})
			_ = a.nc.Publish("$KV.vinfer-nodes.evil", b)
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
}

// noTokenToAttacker fails when any node would forward a call on a stream to the attacker's URL.
func noTokenToAttacker(t *testing.T, nodes []*testNode, ids []string) {
	t.Helper()
	for _, n := range nodes {
		for _, id := range ids {
			if _, u, _, _ := n.Owner(id); u == attackerURL {
				t.Fatalf("%s would forward calls on %s, with the client's token, to %s", n.name, id, u)
			}
		}
		for _, nd := range n.ClusterView().Nodes {
			if nd.URL == attackerURL {
				t.Fatalf("%s lists the forged node with its URL", n.name)
			}
		}
	}
}

// onNodes: every stream runs, on one of the nodes named.
func onNodes(w *world, ids []string, nodes ...string) (bool, string) {
	got := w.where()
	var off []string
	for _, id := range ids {
		if n, ok := got[id]; !ok || !strings.Contains(" "+strings.Join(nodes, " ")+" ", " "+n+" ") {
			off = append(off, fmt.Sprintf("%s on %q", id, n))
		}
	}
	return len(off) == 0, fmt.Sprintf("%d streams elsewhere: %s", len(off), strings.Join(off, ", "))
}

// TestForgedHeartbeatTrustedPeers: with cluster.trusted_peers and no shared secret, a client
// of the NATS server publishes a heartbeat of a node "evil" (weight 20: most streams are
// placed on it) advertising its own URL, and owner keys of every stream in its name. No node
// forwards a call there, and every stream runs on a real node within a few leases: evil does
// not take what is placed on it, so it is skipped.
func TestForgedHeartbeatTrustedPeers(t *testing.T) {
	trusted := func(o *Options) { o.Config.TrustedPeers = []string{"http://*.test:8080"} }
	logs := &testutil.LogBuffer{}
	url, w, ids, a, b := startTwo(t, func(o *Options) {
		trusted(o)
		o.Log = slog.New(slog.NewTextHandler(io.MultiWriter(logs, os.Stderr), &slog.HandlerOptions{Level: slog.LevelWarn}))
	}, trusted)
	ev := newAttacker(t, url)
	ev.heartbeats(t, 20)
	for _, id := range ids {
		ev.forge(t, "vinfer-owners", id, ownerEntry{Node: "evil", Instance: "forged"})
	}
	nodes := []*testNode{a, b}
	eventually(t, 30*time.Second, "a and b see evil", func() (bool, string) {
		noTokenToAttacker(t, nodes, ids)
		for _, n := range nodes {
			if !hasNode(n, "evil") {
				return false, n.name + " does not list evil"
			}
		}
		return true, ""
	})
	t0 := time.Now()
	progressWait(t, 10, "every stream back on a and b", func() (bool, string) {
		noTokenToAttacker(t, nodes, ids)
		return onNodes(w, ids, "a", "b")
	})
	t.Logf("forged node and owner keys: every stream on a real node %.1fs later (lease %s)", time.Since(t0).Seconds(), testLease)
	// a's warnings name the forged node as the peer, once per line (issue 25 item 8: a line
	// carried node= twice).
	if !strings.Contains(logs.String(), "peer=evil") {
		t.Errorf("no warning names the forged node:\n%s", logs)
	}
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Count(line, " node=") > 1 {
			t.Errorf("node= twice: %s", line)
		}
	}
	// It stays so while evil keeps beating: sample for two leases.
	for end := time.Now().Add(2 * testLease); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		noTokenToAttacker(t, nodes, ids)
		if ok, msg := onNodes(w, ids, "a", "b"); !ok {
			t.Fatalf("after the takeover: %s", msg)
		}
	}
}

// TestForgedHeartbeatSigned: with cluster.secret_file, the forged heartbeat and owner keys are
// ignored altogether: evil is never a member, and the streams never leave a and b.
func TestForgedHeartbeatSigned(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("0123456789abcdef0123456789abcdef-shared\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	signed := func(o *Options) { o.Config.SecretFile = secret }
	url, w, ids, a, b := startTwo(t, signed, signed)
	nodes := []*testNode{a, b}
	ev := newAttacker(t, url)
	ev.heartbeats(t, 20)
	for _, id := range ids {
		ev.forge(t, "vinfer-owners", id, ownerEntry{Node: "evil", Instance: "forged"})
	}
	eventually(t, 30*time.Second, "the forged entries rejected", func() (bool, string) {
		for _, n := range nodes {
			if n.ClusterView().Counters["rejected"] == 0 {
				return false, n.name + " rejected none"
			}
		}
		return true, ""
	})
	for end := time.Now().Add(3 * testLease); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		noTokenToAttacker(t, nodes, ids)
		for _, n := range nodes {
			if hasNode(n, "evil") {
				t.Fatalf("%s lists the forged node", n.name)
			}
		}
	}
	// The forged owner keys count as free: the streams run on a and b (taken again).
	progressWait(t, 10, "every stream on a and b", func() (bool, string) { return onNodes(w, ids, "a", "b") })
	// A node with another secret joins nobody's cluster: its heartbeat is rejected too.
	other := filepath.Join(t.TempDir(), "other")
	if err := os.WriteFile(other, []byte(strings.Repeat("x", 40)), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := startNode(t, url, newWorld(), "c", func(o *Options) { o.Config.SecretFile = other }); err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(2 * testLease); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if hasNode(a, "c") {
			t.Fatal("a lists c, whose heartbeat is signed with another secret")
		}
	}
	// A secret too short is refused.
	short := filepath.Join(t.TempDir(), "short")
	_ = os.WriteFile(short, []byte("short"), 0o600)
	if _, err := startNode(t, url, newWorld(), "d", func(o *Options) { o.Config.SecretFile = short }); !errors.Is(err, ErrSecret) {
		t.Errorf("short secret: %v, want ErrSecret", err)
	}
}

// TestStuckNode: node c's starts hang (its owner keys are taken, nothing runs). The streams
// placed on it run on a and b within a few leases, while c keeps beating.
func TestStuckNode(t *testing.T) {
	url, w, ids, a, _ := startTwo(t, nil, nil)
	block := make(chan struct{})
	if _, err := startNode(t, url, w, "c", func(o *Options) { o.Local.(*fakeLocal).block = block }); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { close(block) }) // before c's Close (cleanups run last first)
	eventually(t, 30*time.Second, "c took a stream", func() (bool, string) {
		for _, s := range a.ClusterView().Streams {
			if s.Owner == "c" {
				return true, ""
			}
		}
		return false, "no owner key held by c"
	})
	progressWait(t, 10, "every stream on a and b", func() (bool, string) { return onNodes(w, ids, "a", "b") })
	if a.ClusterView().Counters["shunned"] == 0 {
		t.Error("a shunned no node")
	}
}

// startTwo starts nodes a, seeded with 12 streams, and b on a NATS server of the test, each
// changed by its mod (nil: none), and waits until the streams run on them.
func startTwo(t *testing.T, modA, modB func(*Options)) (url string, w *world, ids []string, a, b *testNode) {
	t.Helper()
	url = natsServer(t)
	w = newWorld()
	seed := streamsN(12)
	ids = sortedIDs(seed)
	a, err := startNode(t, url, w, "a", func(o *Options) {
		if modA != nil {
			modA(o)
		}
		o.Seed = seed
	})
	if err != nil {
		t.Fatal(err)
	}
	if b, err = startNode(t, url, w, "b", modB); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "12 streams on a and b", func() (bool, string) { return onNodes(w, ids, "a", "b") })
	return url, w, ids, a, b
}

func hasNode(n *testNode, name string) bool {
	for _, nd := range n.ClusterView().Nodes {
		if nd.Name == name && nd.Live {
			return true
		}
	}
	return false
}

// TestForgedOwnerKeys: without a shared secret, a forged node that is placed nothing (weight
// 0.001) writes owner keys of every stream in its name. The real nodes stop their streams
// (the keys moved), and take the keys back from it: it holds them without running them.
func TestForgedOwnerKeys(t *testing.T) {
	url, w, ids, a, _ := startTwo(t, nil, nil)
	ev := newAttacker(t, url)
	ev.heartbeats(t, 0.001)
	eventually(t, 30*time.Second, "a sees evil", func() (bool, string) { return hasNode(a, "evil"), "" })
	for _, id := range ids {
		ev.forge(t, "vinfer-owners", id, ownerEntry{Node: "evil", Instance: "forged"})
	}
	eventually(t, 30*time.Second, "a stream fenced", func() (bool, string) {
		return a.ClusterView().Counters["fenced"] > 0, fmt.Sprint(a.ClusterView().Counters)
	})
	t0 := time.Now()
	progressWait(t, 10, "every stream back on a and b", func() (bool, string) { return onNodes(w, ids, "a", "b") })
	t.Logf("owner keys forged: every stream on a real node %.1fs later (lease %s)", time.Since(t0).Seconds(), testLease)
	for _, s := range a.ClusterView().Streams {
		if s.Owner == "evil" {
			t.Errorf("%s still owned by evil", s.ID)
		}
	}
}

// TestSignedReconnect: a signed node cut off from NATS and back reads the buckets again; the
// heartbeats it had already accepted are the same entries, not replays: nothing is rejected.
func TestSignedReconnect(t *testing.T) {
	url := natsServer(t)
	w := newWorld()
	seed := streamsN(6)
	ids := sortedIDs(seed)
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte(strings.Repeat("k", 32)), 0o600); err != nil {
		t.Fatal(err)
	}
	px := newProxy(t, strings.TrimPrefix(url, "nats://"))
	a, err := startNode(t, px.url(), w, "a", func(o *Options) { o.Config.SecretFile = secret; o.Seed = seed })
	if err != nil {
		t.Fatal(err)
	}
	if _, err := startNode(t, url, w, "b", func(o *Options) { o.Config.SecretFile = secret }); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "6 streams over a and b", func() (bool, string) { return placedAsAssigned(w, ids, []string{"a", "b"}) })
	px.setCut(true)
	eventually(t, 30*time.Second, "a isolated", func() (bool, string) { return a.ClusterView().State == "isolated", a.ClusterView().State })
	px.setCut(false)
	progressWait(t, 10, "a rejoined, streams over a and b", func() (bool, string) { return placedAsAssigned(w, ids, []string{"a", "b"}) })
	if n := a.ClusterView().Counters["rejected"]; n != 0 {
		t.Errorf("a rejected %d entries after its reconnect, want 0", n)
	}
}

// TestTrustWarning: a node with neither trusted_peers nor secret_file says, once, that it
// forwards tokens to any node of the NATS account; one with either does not.
func TestTrustWarning(t *testing.T) {
	url := natsServer(t)
	const warning = "neither cluster.trusted_peers nor cluster.secret_file"
	for _, c := range []struct {
		name string
		mod  func(*Options)
		want int
	}{
		{"open", func(*Options) {}, 1},
		{"trusted", func(o *Options) { o.Config.TrustedPeers = []string{"http://*.test:8080"} }, 0},
	} {
		logs := &testutil.LogBuffer{}
		if _, err := startNode(t, url, newWorld(), c.name, func(o *Options) {
			c.mod(o)
			o.Log = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
		}); err != nil {
			t.Fatal(err)
		}
		if got := logs.Count(warning); got != c.want {
			t.Errorf("%s: %d warnings, want %d:\n%s", c.name, got, c.want, logs)
		}
	}
}
