// Package goredis adapts go-redis v9 (github.com/redis/go-redis/v9) to the
// [locker.Scripter] contract.
//
// [New] accepts any [redis.Scripter]: a *redis.Client, *redis.ClusterClient,
// *redis.Ring, or a redis.UniversalClient holding one of them. The driver only
// sends EVALSHA, EVAL and SCRIPT LOAD and translates their replies; it adds no
// retries, caching or timeouts of its own, and it changes nothing in the
// client's configuration.
//
// Two client options matter:
//
//   - go-redis retries a command on network errors (Options.MaxRetries,
//     3 by default), so a script may run twice on the server. That is safe:
//     a re-sent call carries the same call id (or extend number), and the
//     scripts treat a second run of one call as the first (see docs/guide.md,
//     "Unknown outcomes").
//   - Set Options.ContextTimeoutEnabled (ClusterOptions, RingOptions and
//     UniversalOptions have it too) to true, so that a context deadline
//     bounds the socket reads and writes of a call. Without it go-redis uses
//     its ReadTimeout and WriteTimeout and a call may outlive its context.
//
// Even so, go-redis honours a context only through its deadline: a call
// whose context is already done fails at once with the context's error, and
// a deadline cuts a call short, but a context canceled (without a deadline)
// while the command is in flight does not interrupt it; the call returns when
// the reply arrives or ReadTimeout fires. The driver does not add a watchdog
// goroutine of its own.
//
// # Push wake-ups
//
// The Scripter also implements [locker.Subscriber] with sharded pub/sub
// (SSUBSCRIBE; plain SUBSCRIBE on a server without it, such as Redis 6.2
// or miniredis), so waiters are woken by the release itself. It needs a
// *redis.Client, *redis.ClusterClient or *redis.Ring; with any other
// redis.Scripter, Subscribe fails and the core polls.
//
// All channels served by one node share one go-redis PubSub (one
// connection from that node client's pub/sub pool): one for a single
// server, one per master of a Cluster, one per shard of a Ring. The
// connection is opened by the first Subscribe for its node and closed when
// the node's last subscription is unsubscribed; while open it is served by
// two goroutines of the driver (a reader and a writer). Nothing runs when
// nothing is subscribed, and the Scripter needs no Close.
//
// go-redis's own PubSub reconnection is not relied on (it resubscribes all
// channels in one command, which a Cluster node refuses when they span
// slots). Instead, when a connection is lost, or found dead because a PING
// sent after 3 s of silence stays unanswered for 3 s, every subscriber of
// that connection is called at once (messages may have been lost), and the
// driver reconnects with backoff (50 ms doubling to 2 s, calling the
// subscribers again after each failed attempt) for as long as
// subscriptions remain, routes each channel afresh, subscribes again, and
// calls the subscribers once more when the server confirms. A MOVED reply,
// or the server dropping a channel by itself (its slot migrated, or a
// failover demoted the node), moves the channel to its current master the
// same way. A Subscribe still waiting for its confirmation fails instead,
// as it does after 5 s without one.
//
// # Replica acknowledgement
//
// The Scripter implements [locker.Acknowledger] (for locker.Options.Ack)
// on a *redis.Client and a *redis.ClusterClient: the script and WAIT (or
// WAITAOF) go in one pipeline to the node of the script's key. Other
// clients fail each acknowledged call with an error saying so. Keep the
// client's ReadTimeout above Ack.Timeout: go-redis reads a pipeline's
// replies under it.
//
// A minimal setup:
//
//	rdb := redis.NewClient(&redis.Options{
//		Addr:                  "localhost:6379",
//		ContextTimeoutEnabled: true,
//	})
//	s := goredis.New(rdb)
package goredis
