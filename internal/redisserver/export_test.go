package redisserver

import (
	"context"
	"strings"
)

// ExternalCluster exposes externalCluster as StartCluster calls it when
// SCRIPTLOCK_CLUSTER_ADDRS is set, to tests that must not set the variable.
func ExternalCluster(ctx context.Context, env string) (*Cluster, error) {
	return externalCluster(ctx, EnvClusterAddrs, splitAddrs(env), Dial{}, false)
}

// ExternalClusterWithReplicas is ExternalCluster as
// StartClusterWithReplicas calls it.
func ExternalClusterWithReplicas(ctx context.Context, env string) (*Cluster, error) {
	return externalCluster(ctx, EnvClusterAddrs, splitAddrs(env), Dial{}, true)
}

func splitAddrs(env string) []string {
	var addrs []string
	for _, a := range strings.Split(env, ",") {
		if a = strings.TrimSpace(a); a != "" {
			addrs = append(addrs, a)
		}
	}
	return addrs
}
