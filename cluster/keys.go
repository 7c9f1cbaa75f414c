package cluster

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"
)

// scanBatch is SCAN's COUNT hint: a batch costs the server about as much as
// a few small commands, so a user's large keyspace is walked without
// blocking it.
const scanBatch = 1000

// FindKeys SCANs every data node (never KEYS) for keys matching pattern (a
// glob, keyspace.Prefix.Pattern) and returns up to limit of them per node,
// by node name; nodes with none are absent.
func (c *Cluster) FindKeys(ctx context.Context, pattern string, limit int) (map[string][]string, error) {
	out := map[string][]string{}
	for _, n := range c.Nodes {
		err := c.scanNode(ctx, n, pattern, func(cl *redis.Client, keys []string) error {
			out[n.Name] = append(out[n.Name], keys[:min(len(keys), limit-len(out[n.Name]))]...)
			if len(out[n.Name]) >= limit {
				return errEnough
			}
			return nil
		})
		if err != nil && !errors.Is(err, errEnough) {
			return out, fmt.Errorf("node %s: SCAN MATCH %s: %w", n.Name, pattern, err)
		}
	}
	return out, nil
}

var errEnough = errors.New("enough keys")

// DeleteKeys removes the keys matching pattern on every master node: SCAN
// MATCH, then UNLINK of exactly the keys the SCAN returned, nothing else.
// Replicas are skipped (they follow their master; a write there is refused).
// It returns how many keys it removed.
func (c *Cluster) DeleteKeys(ctx context.Context, pattern string) (int64, error) {
	if pattern == "" || pattern == "*" {
		return 0, fmt.Errorf("%w: refusing to delete keys matching %q (only a run's own prefix)", ErrBadSpec, pattern)
	}
	var total int64
	var errs []error
	for _, n := range c.Nodes {
		if n.Role == "replica" {
			continue
		}
		err := c.scanNode(ctx, n, pattern, func(cl *redis.Client, keys []string) error {
			d, err := cl.Unlink(ctx, keys...).Result()
			total += d
			return err
		})
		if err != nil && !strings.Contains(err.Error(), "READONLY") {
			errs = append(errs, fmt.Errorf("node %s: delete keys matching %s: %w", n.Name, pattern, err))
		}
	}
	return total, errors.Join(errs...)
}

// scanNode calls fn with each non-empty SCAN MATCH batch of node n.
func (c *Cluster) scanNode(ctx context.Context, n *Node, pattern string, fn func(*redis.Client, []string) error) error {
	cl := c.AdminClient(n)
	defer cl.Close()
	var cursor uint64
	for {
		keys, next, err := cl.Scan(ctx, cursor, pattern, scanBatch).Result()
		if err != nil {
			return err
		}
		if len(keys) > 0 {
			if err := fn(cl, keys); err != nil {
				return err
			}
		}
		if cursor = next; cursor == 0 {
			return nil
		}
	}
}
