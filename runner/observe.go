package runner

import (
	"context"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/workloads"
)

// observe records the servers' keyspace notifications into the history.
func observe(ctx context.Context, cl *cluster.Cluster, rec *workloads.Recorder) (func(), error) {
	if !rec.Enabled() {
		return func() {}, nil
	}
	stop, err := cluster.Observe(ctx, cl, rec.Record, rec.Now)
	if err != nil {
		return func() {}, err
	}
	return stop, nil
}
