package locker

import "context"

// Subscriber is an optional interface a Scripter may implement: push
// wake-ups for waiters. Scripts that free a lock (a mutex: only one someone
// waits for; release, expiry found by an acquire, read-write transitions)
// publish with
// SPUBLISH on the lock's wake channel "<prefix>{<name>}:wake", which lives
// in the lock's hash slot; a FIFO release that hands the lock to a queued
// waiter publishes on that waiter's own channel,
// "<prefix>{<name>}:wake:<slot>", instead (the slot is the waiter id up to
// its first '.': a Client's waiters on one name reuse their slots one
// after another), with "<fence>:<waiter id>" as the message's payload (the
// other wake-ups carry none), so that the waiter need not ask Redis what
// it was given. A Client whose Scripter
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
// a user setting: such a server answers SSUBSCRIBE with an "unknown
// command" error, and on a Cluster of them PUBLISH reaches every node, so
// SUBSCRIBE on the channel's node (or any) hears it. They should multiplex
// all channels over as few connections as the deployment allows (one per
// Cluster shard), and leave the server-side subscription (SUNSUBSCRIBE)
// when a channel's last subscriber leaves.
//
// The core calls Subscribe with the waiting call's ctx, which may have no
// deadline, and waits for it before it polls: a Subscribe whose server
// cannot be reached must fail on its own within a few seconds (the in-tree
// drivers wait 5 s for the confirmation) rather than wait for ctx. No
// goroutine of the driver may outlive the last unsubscribe (or, for a
// driver that owns connections, its Close) by more than about 2 s: the
// conformance suite counts one that runs 3 s later as a leak.
type Subscriber interface {
	// Subscribe subscribes to the shard channel and calls onMessage, from a
	// goroutine of the driver, with the payload of every message published
	// on it until the returned unsubscribe function is called. Subscribe
	// blocks until the server has confirmed the subscription (so a message
	// published after Subscribe returns is delivered) or ctx is done; on
	// error nothing stays subscribed. onMessage must not block; a driver
	// may call it spuriously, with an empty payload, for instance after
	// reconnecting, when messages may have been lost. unsubscribe does not
	// block on the network, is idempotent, and guarantees onMessage is not
	// called after it returns. Subscribe and unsubscribe are safe for
	// concurrent use; several subscriptions to one channel each get every
	// message.
	Subscribe(ctx context.Context, channel string, onMessage func(payload string)) (unsubscribe func(), err error)
}
