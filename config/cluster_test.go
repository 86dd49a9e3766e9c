package config

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestClusterTrust: the cluster section's credentials, TLS, trusted peers and secret parse;
// each mistake is refused with an error naming its field.
func TestClusterTrust(t *testing.T) {
	const head = "models: [{name: m, path: m.onnx}]\ncluster:\n  nats: tls://nats.example:4222\n"
	ok := head + `  auth: {user: vinfer, password: pw}
  tls: {ca: /etc/vinfer/ca.pem, cert: /etc/vinfer/node.pem, key: /etc/vinfer/node.key}
  trusted_peers: ["http://10.0.0.*:8080", "https://*.vinfer.svc:8443"]
  secret_file: /etc/vinfer/cluster.secret
`
	c, err := Parse([]byte(ok))
	if err != nil {
		t.Fatal(err)
	}
	if c.Cluster.Auth.Kind() != "user" || !c.Cluster.TLS.Enabled() || len(c.Cluster.TrustedPeers) != 2 || c.Cluster.SecretFile == "" {
		t.Fatalf("%+v", c.Cluster)
	}
	for bad, field := range map[string]string{
		"  auth: {user: vinfer}":                            "cluster.auth",
		"  auth: {password: pw}":                            "cluster.auth",
		"  auth: {token: t, credentials_file: /x.creds}":    "cluster.auth",
		"  auth: {user: u, password: p, nkey_seed_file: x}": "cluster.auth",
		"  tls: {cert: /c.pem}":                             "cluster.tls",
		"  trusted_peers: [\"10.0.0.1:8080\"]":              "cluster.trusted_peers",
		"  trusted_peers: [\"ftp://x\"]":                    "cluster.trusted_peers",
		"  trusted_peers: [\"http://x/path\"]":              "cluster.trusted_peers",
		"  auth: {bogus: 1}":                                "bogus",
	} {
		_, err := Parse([]byte(head + bad + "\n"))
		if err == nil || !strings.Contains(err.Error(), field) {
			t.Errorf("%s: %v, want an error naming %s", bad, err, field)
		}
	}
	// Patterns: '*' stands for one run of a host label's characters; ports are explicit.
	for pat, cases := range map[string]map[string]bool{
		"http://10.0.0.*:8080": {"http://10.0.0.7:8080": true, "http://10.0.0.7.evil.example:8080": false, "http://10.0.0.7:8081": false, "https://10.0.0.7:8080": false},
		"https://*.vinfer.svc": {"https://node-1.vinfer.svc:443": true, "https://a.b.vinfer.svc:443": false, "https://node-1.vinfer.svc:8443": false},
	} {
		re, err := PeerPattern(pat)
		if err != nil {
			t.Fatal(err)
		}
		for u, want := range cases {
			if re.MatchString(u) != want {
				t.Errorf("%s ~ %s: %v, want %v", pat, u, !want, want)
			}
		}
	}
	// Secrets never reach JSON (the API's /api/config).
	if j, _ := json.Marshal(c.Cluster); strings.Contains(string(j), "pw") {
		t.Errorf("the password in JSON: %s", j)
	}
}
