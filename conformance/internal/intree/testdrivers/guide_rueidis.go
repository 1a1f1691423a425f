package testdrivers

import "github.com/redis/rueidis"

// newRueidisClient makes a rueidis client with the settings scriptlock is
// certified with; opts says where (InitAddress: a server, or any nodes of
// a Cluster, which rueidis detects by itself) and how to log in.
func newRueidisClient(opts rueidis.ClientOption) (rueidis.Client, error) {
	// Scripts are never cached client-side, and the cache's CLIENT
	// TRACKING is a command the recommended ACL user may not run.
	opts.DisableCache = true
	return rueidis.NewClient(opts)
}
