package locker

import "context"

// Subscriber is an optional interface a Scripter may implement: push
// wake-ups for waiters. Scripts that free a lock (a mutex: only one someone
// waits for; release, expiry found by an acquire, read-write transitions)
// publish with
// SPUBLISH on the lock's wake channel "<prefix>{<name>}:wake", which lives
// in the lock's hash slot; a FIFO release that hands the lock to a queued
// waiter publishes on that waiter's own channel,
// "<prefix>{<name>}:wake:<waiter id>", instead. A Client whose Scripter
// implements Subscriber subscribes a waiting Lock to those channels and
// retries as soon as a message arrives; the Client shares one subscription
// among all waiters for the same name (and wakes one waiting Mutex per
// message) and drops it when the last one leaves.
//
// Without Subscriber, the core polls: it retries with jittered backoff, never
// sleeping longer than the holder's remaining TTL. With it, the core still
// keeps a timer bounded by the holder's remaining TTL, so a lost message or
// a crashed holder costs at most one TTL, never a hang.
//
// Implementations use sharded pub/sub (SSUBSCRIBE), which Redis 7 offers on
// standalone servers and Cluster alike, or plain SUBSCRIBE on a server that
// lacks it (Redis 6.2, miniredis: the scripts then PUBLISH), chosen without
// a user setting; they should multiplex all channels over as few
// connections as the deployment allows (one per Cluster shard).
type Subscriber interface {
	// Subscribe subscribes to the shard channel and calls onMessage, from a
	// goroutine of the driver, for every message published on it until the
	// returned unsubscribe function is called. Subscribe blocks until the
	// server has confirmed the subscription (so a message published after
	// Subscribe returns is delivered) or ctx is done; on error nothing stays
	// subscribed. onMessage must not block; a driver may call it spuriously,
	// for instance after reconnecting, when messages may have been lost.
	// unsubscribe does not block on the network, is idempotent, and
	// guarantees onMessage is not called after it returns. Subscribe and
	// unsubscribe are safe for concurrent use; several subscriptions to one
	// channel each get every message.
	Subscribe(ctx context.Context, channel string, onMessage func()) (unsubscribe func(), err error)
}
