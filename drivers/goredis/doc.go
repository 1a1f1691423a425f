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
//     every script of scriptlock is idempotent.
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
// A minimal setup:
//
//	rdb := redis.NewClient(&redis.Options{
//		Addr:                  "localhost:6379",
//		ContextTimeoutEnabled: true,
//	})
//	s := goredis.New(rdb)
package goredis
