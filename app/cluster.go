package app

import (
	"context"

	"github.com/vinfer/vinfer/cluster"
	"github.com/vinfer/vinfer/config"
)

// JoinCluster makes the app a node of the cluster of its configuration's cluster: section: the
// configuration's streams go to the cluster's registry instead of starting here, and the node
// starts and stops the streams that fall to it through the app's StreamControl. Close the node
// before Stop.
func (a *App) JoinCluster(ctx context.Context, c config.Cluster) (*cluster.Node, error) {
	return cluster.Start(ctx, cluster.Options{Config: c, Local: a, Seed: a.Config.Streams,
		DefaultMaxStreams: a.Config.Sources.Streams(), Log: a.Log})
}
