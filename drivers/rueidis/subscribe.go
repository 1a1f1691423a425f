package rueidis

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	"github.com/scriptlock/scriptlock/drivers/internal/pubsubmux"
)

// Timing of Subscribe; see its doc.
const (
	confirmTimeout     = 5 * time.Second       // longest wait for the server's confirmation
	unsubscribeTimeout = 2 * time.Second       // longest wait for the SUNSUBSCRIBE reply, in the background (shorter than the conformance leak check's 3 s)
	minBackoff         = 50 * time.Millisecond // first pause before subscribing again after an error
	maxBackoff         = 2 * time.Second       // longest such pause
)

// Subscribe implements locker.Subscriber with sharded pub/sub (SSUBSCRIBE),
// or plain pub/sub (SUBSCRIBE) on a server that has no sharded pub/sub
// (Redis before 7.0), where the scripts publish with PUBLISH: the driver
// tries SSUBSCRIBE and, when the server answers that it does not know the
// command, subscribes with SUBSCRIBE instead and keeps doing so until one
// of its pub/sub connections is lost (the server may have been upgraded).
// It subscribes onMessage to the shard channel name and blocks until the
// server confirms the subscription (at once when the channel is already
// subscribed), ctx is done, or the subscription fails; it then returns an
// error and leaves nothing subscribed. It also fails when no confirmation
// arrives within 5 s (rueidis retries a subscription whose connection
// cannot be made by itself, so an unreachable server shows up this way).
//
// Channels go through rueidis's own pub/sub connection to the node that
// owns the channel's slot, shared by all channels of that node; the driver
// opens no connection of its own. Each subscribed channel has one goroutine
// of the driver, blocked in Client.Receive, from its first Subscribe until
// its last subscription is unsubscribed; it then sends SUNSUBSCRIBE on that
// connection and exits. See the package doc for connection losses.
//
// onMessage is called from that goroutine for every message on the
// channel, with the message's payload (its body, as published with
// SPUBLISH or PUBLISH), never concurrently with itself, and must not block.
// It may also be called spuriously, with the empty payload "", when
// messages may have been lost (after a reconnection, for instance). unsubscribe is
// idempotent and never blocks on the network; once it returns onMessage is
// not called again. It waits for a call of onMessage in progress, so
// onMessage must not call its own unsubscribe. Subscribe and unsubscribe
// are safe for concurrent use.
func (s *Scripter) Subscribe(ctx context.Context, name string, onMessage func(payload string)) (unsubscribe func(), err error) {
	if onMessage == nil {
		return nil, fmt.Errorf("rueidis: subscribe %q: nil onMessage", name)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	p := &s.ps
	sb := &sub{Listener: pubsubmux.NewListener(onMessage)}
	p.mu.Lock()
	if p.chans == nil {
		p.chans = make(map[string]*channel)
	}
	ch := p.chans[name]
	if ch == nil {
		ch = &channel{name: name, subs: make(map[*sub]struct{}), wake: make(chan struct{}, 1)}
		p.chans[name] = ch
		go p.run(s.c, ch)
	}
	ch.subs[sb] = struct{}{}
	sb.ch = ch
	if ch.live {
		sb.confirmed = true
		sb.Confirm()
	}
	p.mu.Unlock()
	unsubscribe = func() { p.unsubscribe(sb) }

	if err := sb.Await(ctx, "rueidis", name, confirmTimeout); err != nil {
		unsubscribe()
		return nil, err
	}
	return unsubscribe, nil
}

// pubsub is a Scripter's subscription state. Its zero value is ready.
type pubsub struct {
	mu    sync.Mutex
	chans map[string]*channel // channels with a running goroutine

	// plain is set when the server answered SSUBSCRIBE with an unknown
	// command error: subscribe with SUBSCRIBE. A lost connection clears it.
	plain atomic.Bool
}

// channel is one shard channel and its goroutine; guarded by pubsub.mu.
type channel struct {
	name   string
	subs   map[*sub]struct{}
	gen    uint64             // identifies the current Receive call; hooks of older ones are ignored
	cancel context.CancelFunc // ends the current Receive call
	live   bool               // the current Receive call's subscription is confirmed
	lost   bool               // confirmed subs may have missed messages: call them once live again
	wake   chan struct{}      // interrupts the backoff pause when the last sub leaves
}

// sub is one Subscribe call's subscription.
type sub struct {
	*pubsubmux.Listener

	// Guarded by pubsub.mu.
	ch        *channel // nil once unsubscribed or failed
	confirmed bool
}

// run is a channel's goroutine: it keeps one Receive call subscribed while
// the channel has subscribers.
func (p *pubsub) run(c rueidis.Client, ch *channel) {
	var backoff time.Duration
	for {
		p.mu.Lock()
		if len(ch.subs) == 0 {
			delete(p.chans, ch.name)
			p.mu.Unlock()
			return
		}
		ch.gen++
		gen := ch.gen
		ctx, cancel := context.WithCancel(context.Background())
		ch.cancel = cancel
		p.mu.Unlock()
		plain := p.plain.Load()

		rctx := rueidis.WithOnSubscriptionHook(ctx, func(s rueidis.PubSubSubscription) {
			p.onSubscription(ch, gen, s)
		})
		var failed atomic.Bool // a connection error ended the call, not the last subscriber leaving
		rctx = rueidis.WithOnReceiveReturnHook(rctx, func(err error, cc rueidis.CommandClient) error {
			switch {
			case ctx.Err() != nil && !failed.Load():
				// The last subscriber left: rueidis stopped listening but
				// the connection is still subscribed. Leave the channel on
				// that very connection.
				uctx, ucancel := context.WithTimeout(context.Background(), unsubscribeTimeout)
				if plain {
					_ = cc.Do(uctx, cc.B().Unsubscribe().Channel(ch.name).Build()).Error()
				} else {
					_ = cc.Do(uctx, cc.B().Sunsubscribe().Channel(ch.name).Build()).Error()
				}
				ucancel()
			case err != nil && ctx.Err() == nil:
				if _, server := rueidis.IsRedisErr(err); !server {
					// The connection failed. Stop rueidis from retrying
					// behind our back: subscribers must hear of the loss,
					// and a waiting Subscribe must fail now.
					failed.Store(true)
					cancel()
				}
			}
			return err
		})
		name, subscribe := "SSUBSCRIBE", c.B().Ssubscribe().Channel(ch.name).Build()
		if plain {
			// Routed like SSUBSCRIBE, to the master of the channel's slot:
			// PUBLISH reaches every node of a Cluster, that one included.
			name, subscribe = "SUBSCRIBE", c.B().Subscribe().Channel(ch.name).Build().SetSlot(ch.name)
		}
		err := c.Receive(rctx, subscribe, func(m rueidis.PubSubMessage) {
			p.deliver(ch, m.Message)
		})
		stopped := ctx.Err() != nil && !failed.Load()
		cancel()
		// No sharded pub/sub on this server (Redis 6.2): the scripts
		// publish with PUBLISH there. Subscribe again at once, with
		// SUBSCRIBE; that is no failure.
		unknown := !plain && !stopped && pubsubmux.IsUnknownCommand(err)
		switch {
		case unknown:
			p.plain.Store(true)
		case failed.Load():
			p.plain.Store(false) // ask again on the next connection
		}

		// Receive returned: unsubscribed (by us or by the server, as when
		// the slot moves), or an error rueidis does not retry.
		var notify []*sub
		p.mu.Lock()
		if ch.gen == gen {
			ch.gen++ // ignore late hooks of this call
		}
		ch.live = false
		for sb := range ch.subs {
			switch {
			case sb.confirmed:
				notify = append(notify, sb)
				ch.lost = true
			case err != nil && !stopped && !unknown:
				p.fail(sb, fmt.Errorf("rueidis: %s %q: %w", name, ch.name, err))
			}
		}
		p.mu.Unlock()
		deliver(notify, "") // spurious: messages may have been lost

		if stopped || unknown {
			backoff = 0
			continue
		}
		backoff = min(max(2*backoff, minBackoff), maxBackoff)
		t := time.NewTimer(backoff)
		select {
		case <-t.C:
		case <-ch.wake:
		}
		t.Stop()
	}
}

// onSubscription handles rueidis's subscription events for ch's Receive
// call gen; it runs on rueidis's connection goroutine.
func (p *pubsub) onSubscription(ch *channel, gen uint64, s rueidis.PubSubSubscription) {
	var notify []*sub
	p.mu.Lock()
	if ch.gen != gen || s.Channel != ch.name {
		p.mu.Unlock()
		return
	}
	switch s.Kind {
	case "ssubscribe", "subscribe":
		if ch.live {
			// rueidis subscribed again, after reconnecting: messages may
			// have been lost in between.
			ch.lost = true
		}
		ch.live = true
		for sb := range ch.subs {
			if !sb.confirmed {
				sb.confirmed = true
				sb.Confirm()
			} else if ch.lost {
				notify = append(notify, sb)
			}
		}
		ch.lost = false
	case "sunsubscribe", "unsubscribe":
		ch.live = false
	}
	p.mu.Unlock()
	deliver(notify, "") // spurious: messages may have been lost
}

// deliver calls the confirmed subscribers of ch with a message's payload.
func (p *pubsub) deliver(ch *channel, payload string) {
	p.mu.Lock()
	subs := make([]*sub, 0, len(ch.subs))
	for sb := range ch.subs {
		if sb.confirmed {
			subs = append(subs, sb)
		}
	}
	p.mu.Unlock()
	deliver(subs, payload)
}

// deliver calls each sub's onMessage with payload ("" for a spurious
// call) unless it has been unsubscribed.
func deliver(subs []*sub, payload string) {
	for _, sb := range subs {
		sb.Deliver(payload)
	}
}

// detach removes sb from its channel and, if it was the last one, ends the
// channel's Receive call. Called with p.mu held.
func (p *pubsub) detach(sb *sub) {
	ch := sb.ch
	if ch == nil {
		return
	}
	sb.ch = nil
	delete(ch.subs, sb)
	if len(ch.subs) > 0 {
		return
	}
	ch.live = false
	ch.gen++ // a confirmation still on its way must not count for later subscribers
	if ch.cancel != nil {
		ch.cancel()
	}
	select {
	case ch.wake <- struct{}{}:
	default:
	}
}

// fail detaches a subscription that was never confirmed and hands err to
// its Subscribe call. Called with p.mu held.
func (p *pubsub) fail(sb *sub, err error) {
	p.detach(sb)
	sb.Fail(err)
}

// unsubscribe ends sb without blocking on the network.
func (p *pubsub) unsubscribe(sb *sub) {
	p.mu.Lock()
	p.detach(sb)
	p.mu.Unlock()
	sb.Stop()
}
