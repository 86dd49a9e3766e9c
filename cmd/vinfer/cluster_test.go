package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/vinfer/vinfer/config"
)

func TestParseShard(t *testing.T) {
	for _, tc := range []struct {
		v, host string
		want    shard
		err     string
	}{
		{"0/3", "", shard{0, 3}, ""},
		{"2/3", "", shard{2, 3}, ""},
		{"auto/4", "cams-vinfer-3", shard{3, 4}, ""},
		{"3/3", "", shard{}, "0…2"},
		{"auto/4", "laptop", shard{}, "-ORDINAL"},
		{"auto/2", "cams-vinfer-2", shard{}, "0…1"},
		{"1", "", shard{}, "i/N"},
		{"a/0", "", shard{}, "i/N"},
	} {
		got, err := parseShard(tc.v, tc.host)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s (host %s): %v, want an error with %q", tc.v, tc.host, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s (host %s): %v %v, want %v", tc.v, tc.host, got, err, tc.want)
		}
	}
}

// TestShardsPartition: every stream falls to exactly one of N shards.
func TestShardsPartition(t *testing.T) {
	var streams []config.Stream
	for i := range 100 {
		streams = append(streams, config.Stream{ID: fmt.Sprintf("cam-%d", i)})
	}
	seen := map[string]int{}
	for i := range 4 {
		part := shard{i, 4}.filter(streams)
		if len(part) < 10 {
			t.Errorf("shard %d/4 has %d of 100 streams", i, len(part))
		}
		for _, s := range part {
			seen[s.ID]++
		}
	}
	for _, s := range streams {
		if seen[s.ID] != 1 {
			t.Fatalf("%s in %d shards", s.ID, seen[s.ID])
		}
	}
}

func TestClusterDefaults(t *testing.T) {
	c := config.Cluster{NATS: "nats://n:4222"}
	if err := clusterDefaults(&c, "node-1", "", "127.0.0.1:8080"); err != nil || c.Node != "node-1" || c.Advertise != "http://127.0.0.1:8080" {
		t.Fatalf("%+v %v", c, err)
	}
	c = config.Cluster{NATS: "nats://n:4222"}
	if err := clusterDefaults(&c, "", "http://10.1.2.3:8080", "0.0.0.0:8080"); err != nil || c.Advertise != "http://10.1.2.3:8080" {
		t.Fatalf("%+v %v", c, err)
	}
	c = config.Cluster{NATS: "nats://n:4222"}
	if err := clusterDefaults(&c, "bad name!", "", "127.0.0.1:8080"); err == nil {
		t.Fatal("a node name with spaces accepted")
	}
}
