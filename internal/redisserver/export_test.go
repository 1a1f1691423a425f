package redisserver

import "context"

// ExternalCluster exposes externalCluster as StartCluster calls it when
// SCRIPTLOCK_CLUSTER_ADDRS is set, to tests that must not set the variable.
func ExternalCluster(ctx context.Context, env string) (*Cluster, error) {
	return externalCluster(ctx, env, false)
}

// ExternalClusterWithReplicas is ExternalCluster as
// StartClusterWithReplicas calls it.
func ExternalClusterWithReplicas(ctx context.Context, env string) (*Cluster, error) {
	return externalCluster(ctx, env, true)
}
