// Package locker is the driver-neutral core of scriptlock: distributed locks
// on Redis built from Lua scripts.
//
// A Client runs every operation as one script through a Scripter, the small
// contract a driver implements for a Redis client (the drivers directory
// has four: go-redis, redigo, rueidis and valkey-go). The core owns all policy:
// EVALSHA first, and on NOSCRIPT load the script and retry within the same
// call; validation; waiting and deadlines.
//
// # Keys
//
// A mutex called name lives in the hash "<prefix>{<name>}" (with '%', '{'
// and '}' of name escaped): its owner, fence and one field per hold. The
// braces form a hash tag, so every key of one lock is in one Cluster slot.
// A FIFO mutex queues its waiters in "<prefix>{<name>}:q" and ":qx"; a mutex
// acquire call whose outcome its caller could not know is listed for 30 s
// in "<prefix>{<name>}:x", so that Redis refuses it should it still arrive.
// A read-write lock lives in the hash "<prefix>{<name>}:rw" and the sorted
// set of its read holds' expiries "<prefix>{<name>}:rwr". A semaphore lives
// in the hash "<prefix>{<name>}:sem" with the sorted set ":semz" (every
// expiry, and its waiters in arrival order). A MultiLock holds the mutex of each
// of its names. An Election's term is a lease of its FIFO mutex, and the
// leader's value lives in "<prefix>{<name>}:leader", which expires with the
// term and goes with its Resign; changes are announced on the channel of
// the same name. Release messages go out on the shard channel
// "<prefix>{<name>}:wake" (a channel, passed to scripts as an argument,
// never as a key). Claim markers live in "<prefix>{<key>}:claim". Every key
// expires: after every lock is released or expired, and the 30 s window for
// abandoned calls (and for a SetPermits' undo record) has passed, no key
// is left under the prefix (a semaphore whose limit SetPermits stored keeps
// its hash until the limit is cleared).
// The default prefix is "scriptlock:".
//
// # Semantics
//
//   - Every acquire call gets an id of 128 random bits from crypto/rand,
//     which names the hold it grants; the owner token is that id, or the
//     caller-chosen MutexOptions.Owner.
//   - Every new grant gets a fence that strictly increases per lock name,
//     across expiries and holders and across a Mutex and an RWMutex of one
//     name: the server's clock in microseconds (or the last write fence + 1
//     kept in a read-write lock's hash, when larger). It rests on the server
//     clock not going back; no counter key outlives the lock.
//   - Unlock, Extend and TTL are owner-checked and tell apart: done,
//     ErrExpired (nobody holds it) and ErrHeldByOther (someone else does);
//     the latter two change nothing.
//   - Lock blocks until acquired or ctx is done; TryLock tries once. With
//     a ctx without deadline, a server that does not answer for
//     Options.UnreachableTimeout (default 10s) ends it with ErrUnreachable.
//   - A lease knows its local validity deadline on the monotonic clock.
//   - Time inside scripts is Redis's own; no client clock is sent.
//
// # Unknown outcomes
//
// Every script call ends one of three ways: done (the reply arrived),
// refused (the server answered with an error; nothing changed), or unknown
// (ctx ended or the connection broke after the command may have been read:
// Redis may have run it, may run it later, or may still get it from the
// client). For an unknown outcome the core assumes whichever is worse for
// safety, and cleans up in the background so the caller is not held back:
//
//   - acquire (TryLock, Lock, RLock, ...): an error, nothing held; a
//     clean-up drops the hold that very call granted, if any (never another
//     hold, even of the same Owner), and has Redis refuse the call should it
//     arrive later.
//   - Unlock: an error; the lease is ended at once (not Valid, Context
//     cancelled, no more refreshes) and the release is retried in the
//     background until done or the lease's deadline has passed.
//   - Extend: an error; the lease's deadline becomes the earliest the server
//     may have applied, and the call is refused if it arrives after a later
//     Extend of the lease.
//   - Downgrade: an error; the write lease is ended at once and a clean-up
//     drops both the write hold and the read hold the call may have made.
//   - Claim: an error; a clean-up drops the marker if this call set it, so
//     a retried Claim can win. ClaimAs lets the caller retry with its token.
//
// An answered error (NOPERM, WRONGTYPE, ...) changes nothing: the lease is
// as before. Client.Close waits for clean-ups in flight, briefly.
//
// # Failover
//
// Redis replicates asynchronously: a replica that takes over before it
// received a grant forgets it. Options.Ack makes every call that writes
// wait, on its own connection, until replicas have the write (WAIT) or it
// is fsynced (WAITAOF) before it succeeds; it needs a Scripter that
// implements Acknowledger. A Quorum instead takes a lock on a majority of
// independent deployments, each its own Client. Both are checked by the
// conformance rules Failover/* and Quorum/*.
//
// # Errors
//
// Errors wrap the sentinel errors declared in this package, so test them
// with errors.Is. When a context ends during a call, ctx.Err() is joined in.
// Bad input (empty or oversized name, TTL outside [MinTTL, MaxTTL], nil
// Scripter, nil context, options out of range, use after Close) returns a
// typed error before anything is sent to Redis.
package locker
