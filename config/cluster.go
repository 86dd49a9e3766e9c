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
