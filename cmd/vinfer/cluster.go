package main

import (
	"errors"
	"fmt"
	"hash/fnv"
	"net"
	"os"
	"strconv"
	"strings"

	"github.com/vinfer/vinfer/config"
)

// shard is --shard i/N: this process runs the configuration's streams whose id hashes to i.
type shard struct{ i, n int }

// parseShard reads "i/N" (0 ≤ i < N) or "auto/N", where auto is the ordinal at the end of the
// host name (a StatefulSet pod NAME-ORDINAL).
func parseShard(v, hostname string) (shard, error) {
	a, b, ok := strings.Cut(v, "/")
	n, err := strconv.Atoi(b)
	if !ok || err != nil || n < 1 {
		return shard{}, fmt.Errorf("--shard %q: write i/N (0 ≤ i < N) or auto/N", v)
	}
	if a == "auto" {
		k := strings.LastIndexByte(hostname, '-')
		if k < 0 {
			return shard{}, fmt.Errorf("--shard auto/%d: host name %q does not end in -ORDINAL (a StatefulSet pod's name)", n, hostname)
		}
		a = hostname[k+1:]
	}
	i, err := strconv.Atoi(a)
	if err != nil || i < 0 || i >= n {
		return shard{}, fmt.Errorf("--shard %q: the index must be 0…%d", v, n-1)
	}
	return shard{i, n}, nil
}

// owns reports whether a stream id falls to this shard.
func (s shard) owns(id string) bool {
	h := fnv.New32a()
	h.Write([]byte(id))
	return int(h.Sum32()%uint32(s.n)) == s.i
}

// filter keeps the streams of this shard.
func (s shard) filter(streams []config.Stream) []config.Stream {
	var out []config.Stream
	for _, st := range streams {
		if s.owns(st.ID) {
			out = append(out, st)
		}
	}
	return out
}

// clusterDefaults fills the cluster section from the flags and the environment: the node name
// (--node-name, else the host name) and the URL other nodes forward to (--cluster-advertise,
// else http:// and the listen address, the host name standing in for an unspecified address).
func clusterDefaults(c *config.Cluster, nodeName, advertise, listen string) error {
	if nodeName != "" {
		c.Node = nodeName
	}
	if advertise != "" {
		c.Advertise = advertise
	}
	if c.Advertise == "" {
		host, port, err := net.SplitHostPort(listen)
		if err != nil {
			return fmt.Errorf("cluster: cannot derive an advertised URL from %q: set cluster.advertise or --cluster-advertise", listen)
		}
		if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
			if host, err = os.Hostname(); err != nil {
				return errors.New("cluster: set cluster.advertise or --cluster-advertise")
			}
		}
		c.Advertise = "http://" + net.JoinHostPort(host, port)
	}
	return c.Validate()
}
