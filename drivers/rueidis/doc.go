// Package rueidis adapts rueidis (github.com/redis/rueidis) to the
// [locker.Scripter] contract.
//
// [New] accepts any rueidis.Client: a single server, a Redis Cluster, or a
// Sentinel-managed master. The driver only sends EVALSHA, EVAL and
// SCRIPT LOAD and translates their replies; it adds no retries, caching or
// timeouts of its own, and it changes nothing in the client's configuration.
// Client-side caching is not used: script calls are never cacheable, so the
// driver works whether the client has caching enabled or not.
//
// rueidis panics on a command whose keys span several hash slots; the
// scriptlock core always passes keys that share one slot.
//
// This package has the same name as the upstream one, so import one of them
// under another name:
//
//	import (
//		"github.com/redis/rueidis"
//		rueidisdriver "github.com/scriptlock/scriptlock/drivers/rueidis"
//	)
//
//	client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{"localhost:6379"}})
//	if err != nil {
//		// handle err
//	}
//	s := rueidisdriver.New(client)
package rueidis
