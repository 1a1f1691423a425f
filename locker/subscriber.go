package locker

import "context"

// Subscriber is an optional interface a Scripter may implement: push
// wake-ups for waiters. Scripts that free a lock publish with SPUBLISH on
// its wake channel, "<prefix>{<name>}:wake"; a FIFO hand-over publishes on
// the waiter's own channel, "<prefix>{<name>}:wake:<slot>", with the grant
// as the payload. A waiting call subscribes (the Client shares one
// subscription per channel among its waiters) and retries as soon as a
// message arrives; it still keeps a timer bounded by the holder's TTL, so
// a lost message costs at most one TTL, never a hang. Without Subscriber
// the core polls with jittered backoff.
//
// Implementations use SSUBSCRIBE (SUBSCRIBE on a server without it),
// multiplex channels over one connection per shard, fail a Subscribe whose
// server cannot be reached within a few seconds, and leave no goroutine
// running 2 s after the last unsubscribe. docs/drivers.md has the details.
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
