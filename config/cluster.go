package config

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"time"
)

// Cluster makes vinfer one node of a cluster (package cluster, docs/deploy.md): the streams live
// in a NATS JetStream key-value bucket, each runs on exactly one live node chosen by rendezvous
// hashing weighted by capacity, and every node's API forwards per-stream calls to the owner.
type Cluster struct {
	// NATS is the server URL, or several separated by commas (nats://nats:4222).
	NATS string `yaml:"nats" json:"nats"`
	// Bucket is the prefix of the key-value buckets (BUCKET-streams, -owners, -nodes); default
	// "vinfer". Clusters sharing a NATS server use different buckets.
	Bucket string `yaml:"bucket,omitempty" json:"bucket,omitempty"`
	// Node is this node's name, unique in the cluster (default: the host name; --node-name).
	Node string `yaml:"node,omitempty" json:"node,omitempty"`
	// Advertise is the base URL other nodes forward API calls to (default: http:// and the
	// API's listen address; --cluster-advertise).
	Advertise string `yaml:"advertise,omitempty" json:"advertise,omitempty"`
	// Weight is this node's capacity relative to the others (e.g. its GPUs); default 1.
	Weight float64 `yaml:"weight,omitempty" json:"weight,omitempty"`
	// MaxStreams caps the streams this node runs (default sources.max_streams); streams no node
	// has room for wait in the registry (state pending).
	MaxStreams int `yaml:"max_streams,omitempty" json:"max_streams,omitempty"`
	// Lease is how long a node counts as alive after its last heartbeat, and how long a node
	// that cannot reach NATS keeps its streams (default 6s; heartbeats every third of it).
	Lease Duration `yaml:"lease,omitempty" json:"lease,omitempty"`
	// OnNATSUnavailable is what happens when NATS cannot be reached at start: fail (the
	// default: exit with the error) or standalone (run the configuration's streams alone, with
	// a warning).
	OnNATSUnavailable string `yaml:"on_nats_unavailable,omitempty" json:"on_nats_unavailable,omitempty"`
	// Auth are the credentials this node presents to NATS; the NATS account they open is the
	// cluster's trust boundary (docs/deploy.md).
	Auth ClusterAuth `yaml:"auth,omitempty" json:"auth,omitzero"`
	// TLS verifies the NATS server (CA) and presents a client certificate (mutual TLS).
	TLS ClusterTLS `yaml:"tls,omitempty" json:"tls,omitzero"`
	// TrustedPeers are the advertised base URLs this node forwards API calls, with the client's
	// bearer token, to: patterns matched against SCHEME://HOST:PORT of a heartbeat's URL, '*'
	// standing for any run of characters other than '.', ':' and '/' (http://10.0.0.*:8080,
	// https://*.vinfer.svc:8443). Empty: every node of the NATS account (or, with SecretFile,
	// every node whose heartbeat is signed).
	TrustedPeers []string `yaml:"trusted_peers,omitempty" json:"trusted_peers,omitempty"`
	// SecretFile holds a secret shared by every node (at least 32 bytes): heartbeats, owner
	// keys and registry entries carry an HMAC-SHA256 of it, and entries without a valid one are
	// ignored (cluster/sign.go).
	SecretFile string `yaml:"secret_file,omitempty" json:"secret_file,omitempty"`
}

// ClusterAuth are NATS credentials: at most one of user and password, token, an NKey seed
// file, or a credentials (JWT + NKey seed) file. Secrets never appear in JSON.
type ClusterAuth struct {
	User     string `yaml:"user,omitempty" json:"user,omitempty"`
	Password string `yaml:"password,omitempty" json:"-"`
	Token    string `yaml:"token,omitempty" json:"-"`
	// NKeySeedFile is a file holding a user NKey seed (SU…).
	NKeySeedFile string `yaml:"nkey_seed_file,omitempty" json:"nkey_seed_file,omitempty"`
	// CredentialsFile is a .creds file (user JWT and NKey seed, as `nsc` writes it).
	CredentialsFile string `yaml:"credentials_file,omitempty" json:"credentials_file,omitempty"`
}

// ClusterTLS configures TLS to NATS (implied by a tls:// URL or any field here).
type ClusterTLS struct {
	// CA is a PEM file of the certificate authorities that sign the server's certificate
	// (default: the system's).
	CA string `yaml:"ca,omitempty" json:"ca,omitempty"`
	// Cert and Key are this node's client certificate and key (PEM files), both or neither.
	Cert string `yaml:"cert,omitempty" json:"cert,omitempty"`
	Key  string `yaml:"key,omitempty" json:"key,omitempty"`
}

// Enabled reports whether any TLS field is set.
func (t ClusterTLS) Enabled() bool { return t.CA != "" || t.Cert != "" || t.Key != "" }

// Kind names the credentials set: "user", "token", "nkey", "credentials", or "" for none.
func (a ClusterAuth) Kind() string {
	switch {
	case a.User != "" || a.Password != "":
		return "user"
	case a.Token != "":
		return "token"
	case a.NKeySeedFile != "":
		return "nkey"
	case a.CredentialsFile != "":
		return "credentials"
	}
	return ""
}

// validate checks that one kind of credentials is set, completely.
func (a ClusterAuth) validate() []error {
	var errs []error
	n := 0
	for _, set := range []bool{a.User != "" || a.Password != "", a.Token != "", a.NKeySeedFile != "", a.CredentialsFile != ""} {
		if set {
			n++
		}
	}
	if n > 1 {
		errs = append(errs, errors.New("cluster.auth: set one of user and password, token, nkey_seed_file or credentials_file"))
	}
	if (a.User == "") != (a.Password == "") {
		errs = append(errs, errors.New("cluster.auth: user and password go together"))
	}
	return errs
}

// Cluster defaults.
const (
	DefaultClusterBucket = "vinfer"
	DefaultClusterLease  = 6 * time.Second
)

var clusterName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// Validate checks the fields; each error names the one to fix.
func (c *Cluster) Validate() error {
	var errs []error
	if strings.TrimSpace(c.NATS) == "" {
		errs = append(errs, errors.New("cluster.nats: the NATS server URL is required (nats://host:4222)"))
	}
	for _, u := range strings.Split(c.NATS, ",") {
		if p, err := url.Parse(strings.TrimSpace(u)); u != "" && (err != nil || p.Host == "") {
			errs = append(errs, fmt.Errorf("cluster.nats: %q is not a URL such as nats://host:4222", u))
		}
	}
	if c.Bucket != "" && !clusterName.MatchString(c.Bucket) {
		errs = append(errs, fmt.Errorf("cluster.bucket %q: 1–64 letters, digits, _ or -", c.Bucket))
	}
	if c.Node != "" && !clusterName.MatchString(c.Node) {
		errs = append(errs, fmt.Errorf("cluster.node %q: 1–64 letters, digits, _ or -", c.Node))
	}
	if c.Advertise != "" {
		if p, err := url.Parse(c.Advertise); err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
			errs = append(errs, fmt.Errorf("cluster.advertise %q: an http:// or https:// base URL", c.Advertise))
		}
	}
	if c.Weight < 0 {
		errs = append(errs, errors.New("cluster.weight must be > 0"))
	}
	if c.MaxStreams < 0 {
		errs = append(errs, errors.New("cluster.max_streams must be ≥ 0"))
	}
	if c.Lease < 0 || (c.Lease > 0 && time.Duration(c.Lease) < 500*time.Millisecond) {
		errs = append(errs, errors.New("cluster.lease must be at least 500ms"))
	}
	errs = append(errs, c.Auth.validate()...)
	if (c.TLS.Cert == "") != (c.TLS.Key == "") {
		errs = append(errs, errors.New("cluster.tls: cert and key go together"))
	}
	for _, p := range c.TrustedPeers {
		if _, err := PeerPattern(p); err != nil {
			errs = append(errs, err)
		}
	}
	switch c.OnNATSUnavailable {
	case "", "fail", "standalone":
	default:
		errs = append(errs, fmt.Errorf("cluster.on_nats_unavailable %q: fail or standalone", c.OnNATSUnavailable))
	}
	return errors.Join(errs...)
}

// BucketName is Bucket or its default.
func (c *Cluster) BucketName() string {
	if c.Bucket == "" {
		return DefaultClusterBucket
	}
	return c.Bucket
}

// LeaseDuration is Lease or its default.
func (c *Cluster) LeaseDuration() time.Duration {
	if c.Lease <= 0 {
		return DefaultClusterLease
	}
	return time.Duration(c.Lease)
}

// NodeWeight is Weight or its default.
func (c *Cluster) NodeWeight() float64 {
	if c.Weight <= 0 {
		return 1
	}
	return c.Weight
}

// PeerPattern compiles a TrustedPeers entry: SCHEME://HOST[:PORT] with http or https, '*'
// matching any run of characters other than '.', ':' and '/'. The pattern matches an
// advertised URL's SCHEME://HOST:PORT (the port made explicit: 80 for http, 443 for https).
func PeerPattern(p string) (*regexp.Regexp, error) {
	bad := fmt.Errorf("cluster.trusted_peers %q: write SCHEME://HOST[:PORT], http or https, '*' for any run of a host label's characters", p)
	scheme, rest, ok := strings.Cut(p, "://")
	if !ok || (scheme != "http" && scheme != "https") || rest == "" || strings.ContainsAny(rest, "/?#@") {
		return nil, bad
	}
	host, port := rest, ""
	if i := strings.LastIndexByte(rest, ':'); i >= 0 && !strings.HasSuffix(rest, "]") {
		host, port = rest[:i], rest[i+1:]
	}
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[scheme]
	}
	if host == "" || strings.ContainsAny(host, " \t") {
		return nil, bad
	}
	quote := func(s string) string {
		return strings.ReplaceAll(regexp.QuoteMeta(strings.ToLower(s)), `\*`, `[^.:/]+`)
	}
	return regexp.Compile("^" + scheme + "://" + quote(host) + ":" + quote(port) + "$")
}
