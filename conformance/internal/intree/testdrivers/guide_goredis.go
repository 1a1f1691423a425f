package testdrivers

import "github.com/redis/go-redis/v9"

// The functions of the guide_*.go files appear word for word in
// docs/guide.md ("Connecting"), and the in-tree drivers are certified on
// the clients they make: internal/readme fails when the two differ.

// newRedisClient makes a go-redis client with the settings scriptlock is
// certified with; opts says where and how to log in (Addr, Username,
// Password, TLSConfig) and sizes the pool.
func newRedisClient(opts redis.Options) *redis.Client {
	opts.ContextTimeoutEnabled = true // a context deadline bounds socket I/O
	return redis.NewClient(&opts)
}

// newRedisClusterClient does the same for a Cluster (opts.Addrs: any of
// its nodes).
func newRedisClusterClient(opts redis.ClusterOptions) *redis.ClusterClient {
	opts.ContextTimeoutEnabled = true // a context deadline bounds socket I/O
	return redis.NewClusterClient(&opts)
}
