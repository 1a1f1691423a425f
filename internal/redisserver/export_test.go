package redisserver

// ExternalCluster exposes externalCluster, which StartCluster uses when
// SCRIPTLOCK_CLUSTER_ADDRS is set, to tests that must not set the variable.
var ExternalCluster = externalCluster
