package testdrivers

import "github.com/valkey-io/valkey-go"

// newValkeyClient makes a valkey-go client with the settings scriptlock is
// certified with; opts says where (InitAddress: a server, or any nodes of
// a Cluster, which valkey-go detects by itself) and how to log in.
func newValkeyClient(opts valkey.ClientOption) (valkey.Client, error) {
	// Scripts are never cached client-side, and the cache's CLIENT
	// TRACKING is a command the recommended ACL user may not run.
	opts.DisableCache = true
	return valkey.NewClient(opts)
}
