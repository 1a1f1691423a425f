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
// # Push wake-ups
//
// The Scripter also implements [locker.Subscriber] with sharded pub/sub
// (SSUBSCRIBE through Client.Receive; plain SUBSCRIBE on a server without
// it, such as Redis 6.2), so waiters are woken by the release itself. On
// miniredis, set ClientOption.DisableCache and AlwaysRESP2: it refuses
// other commands on a connection that subscribed. The driver opens no
// connection of its own: rueidis carries the subscriptions on its
// connection to the node that owns each channel's slot (with RESP3, the
// node's pipelined connection; with RESP2, one extra connection per node),
// so all channels of a node share one connection, and rueidis routes,
// follows MOVED and reconnects. Unlike the other drivers, each subscribed
// channel has a goroutine of the driver, blocked in Client.Receive, from
// its first Subscribe until its last subscription ends; it then sends
// SUNSUBSCRIBE (UNSUBSCRIBE) on that connection (rueidis itself leaves the
// server subscribed when a Receive call returns) and exits.
// Nothing runs when nothing is subscribed, and the Scripter needs no Close.
//
// Subscribe returns once rueidis reports the server's confirmation. When
// the connection fails, the driver stops rueidis from retrying behind its
// back, calls every subscriber of the channel at once (messages may have
// been lost) and subscribes again, pausing 50 ms doubling to 2 s between
// calls that fail; while the node cannot be reached at all, rueidis keeps
// retrying inside that call with its own backoff. The driver calls the
// subscribers once more when the server confirms again, and whenever
// rueidis reports a resubscription of its own. A Subscribe still waiting
// for its confirmation fails when the connection fails, and after 5 s
// without one, which is how an unreachable server shows up.
//
// Known limitation (rueidis v1.0.79): with ClientOption.AlwaysRESP2, once
// the extra pub/sub connection to a node drops, rueidis never opens a new
// one (until the node's main connection fails too). Subscribers of that
// node then hear nothing but the driver's calls after each failed attempt,
// which amount to polling every 2 s, and new Subscribe calls fail. Keep the
// default RESP3 protocol.
//
// This package has the same name as the upstream one, so import one of them
// under another name:
//
//	import (
//		"github.com/redis/rueidis"
//		rueidisdriver "github.com/scriptlock/scriptlock/drivers/rueidis"
//	)
//
//	client, err := rueidis.NewClient(rueidis.ClientOption{
//		InitAddress:  []string{"localhost:6379"}, // a Cluster: any of its nodes
//		DisableCache: true,                       // as the conformance suite certifies it
//	})
//	if err != nil {
//		// handle err
//	}
//	s := rueidisdriver.New(client)
//
// # Replica acknowledgement
//
// The Scripter implements [locker.Acknowledger] (for locker.Options.Ack):
// the script and WAIT (or WAITAOF) travel together on one connection (of
// the blocking pool on a single server, of a dedicated client bound to the
// key's slot on a Cluster).
package rueidis
