package app

import (
	"context"
	"os"

	"github.com/vinfer/vinfer/cluster"
	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/event"
)

// JoinCluster makes the app a node of the cluster of its configuration's cluster: section: the
// configuration's streams go to the cluster's registry instead of starting here, and the node
// starts and stops the streams that fall to it through the app's StreamControl. Close the node
// before Stop.
func (a *App) JoinCluster(ctx context.Context, c config.Cluster) (*cluster.Node, error) {
	name := c.Node
	if name == "" {
		name, _ = os.Hostname() // cluster.Start's default
	}
	event.SetNode(name) // event and evidence ids name this node (event/idnode.go), before any stream starts
	return cluster.Start(ctx, cluster.Options{Config: c, Local: a, Seed: a.Config.Streams,
		DefaultMaxStreams: a.Config.Sources.Streams(), Log: a.Log})
}
