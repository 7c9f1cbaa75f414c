package cluster

import (
	"context"
	"strings"
	"time"
)

// ServerVersion is what the first node says it runs (INFO server):
// "redis 7.4.1", "valkey 8.0.1" (Valkey names itself in server_name), or
// "" when it does not answer.
func (c *Cluster) ServerVersion(ctx context.Context) string {
	if len(c.Nodes) == 0 {
		return ""
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	s, err := c.AdminClient(c.Nodes[0]).Info(ctx, "server").Result()
	if err != nil {
		return ""
	}
	return parseServerVersion(s)
}

func parseServerVersion(info string) string {
	name, version := "redis", ""
	for _, l := range strings.Split(info, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(l), ":")
		if !ok {
			continue
		}
		switch k {
		case "server_name":
			name = v
		case "valkey_version":
			version = v
		case "redis_version":
			if version == "" {
				version = v
			}
		}
	}
	if version == "" {
		return ""
	}
	return name + " " + version
}
