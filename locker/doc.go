// Package locker is the driver-neutral core of scriptlock: distributed locks
// on Redis built from Lua scripts.
//
// A Client runs every operation as one script through a Scripter, the small
// contract a driver implements for a Redis client (see the drivers
// directory for go-redis, redigo and rueidis). The core owns all policy:
// EVALSHA first, and on NOSCRIPT load the script and retry within the same
// call; validation; waiting and deadlines.
//
// # Keys
//
// A lock called name lives in the hash "<prefix>{<name>}" (with '%', '{'
// and '}' of name escaped), and its fence counter in
// "<prefix>{<name>}:fence", which never expires. The braces form a hash tag,
// so every key of one lock is in one Cluster slot. A FIFO mutex queues its
// waiters in "<prefix>{<name>}:q" and ":qx"; a mutex acquire call that
// failed on the client side is listed for 30 s in "<prefix>{<name>}:x", so
// that Redis refuses it should the client still send it; a read-write lock
// lives in the
// hash "<prefix>{<name>}:rw" and shares the fence counter; release
// messages go out on the shard channel "<prefix>{<name>}:wake". Claim
// markers live in "<prefix>{<key>}:claim". The default prefix is
// "scriptlock:".
//
// # Semantics
//
//   - Every acquisition gets a token of 128 random bits from crypto/rand, or
//     the caller-chosen MutexOptions.Owner.
//   - Every new grant gets a fence that strictly increases per lock name,
//     across expiries and holders: the larger of the last fence + 1 and the
//     server's clock in microseconds, so fences keep increasing even when
//     the counter key is lost (a restart without persistence, a failover
//     before replication). Only a server clock that goes back, together
//     with such a loss, can break the order.
//   - Unlock, Extend and TTL are owner-checked and tell apart: done,
//     ErrExpired (nobody holds it) and ErrHeldByOther (someone else does);
//     the latter two change nothing.
//   - Lock blocks until acquired or ctx is done; TryLock tries once.
//   - A lease knows its local validity deadline on the monotonic clock.
//   - Time inside scripts is Redis's own; no client clock is sent.
//
// # Errors
//
// Errors wrap the sentinel errors declared in this package, so test them
// with errors.Is. When a context ends during a call, ctx.Err() is joined in.
// Bad input (empty or oversized name, TTL outside [MinTTL, MaxTTL], nil
// Scripter, nil context, options out of range, use after Close) returns a
// typed error before anything is sent to Redis.
package locker
