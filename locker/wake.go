package locker

import (
	"context"
	"sync"
)

// wakeHub shares one subscription per wake channel among all waiters of a
// Client, when its Scripter implements Subscriber.
type wakeHub struct {
	mu   sync.Mutex
	subs map[string]*wakeSub
}

// wakeSub is one channel's subscription and its waiters.
type wakeSub struct {
	refs  int
	ready chan struct{} // closed when Subscribe returned
	err   error         // Subscribe's error
	unsub func()
	// waiters maps each waiter's channel to how it is woken.
	waiters map[chan struct{}]waker
}

// waker is how a waiter of a wakeSub is woken: alone (one such waiter per
// message) or with every message; handed, when set, first gets each
// message's non-empty payload (a hand-over's grant, on a waiter's own
// channel).
type waker struct {
	alone  bool
	handed func(payload string)
}

// joinWake subscribes the caller to channel. It returns a channel that
// receives (buffered, so a message arriving while the caller is busy is not
// lost) after every message, or, with alone set, after the messages that
// wake this waiter rather than another one of the same kind (each message
// wakes one of them: a release lets one waiter in), and a leave function to
// call when done waiting. It returns a nil channel when the Scripter has no Subscriber or
// subscribing failed; the caller then polls. It blocks until the shared
// subscription is confirmed or ctx is done.
func (c *Client) joinWake(ctx context.Context, channel string, alone bool) (<-chan struct{}, func(handOn bool)) {
	return c.joinWakeInto(ctx, channel, waker{alone: alone}, make(chan struct{}, 1))
}

// joinWakeInto is joinWake with the waiter's channel me (buffered, size
// 1) given: a waiter that joins several wake channels with one me is woken
// by a message on any of them; w.handed, when set, gets each message's
// non-empty payload before me is signalled.
func (c *Client) joinWakeInto(ctx context.Context, channel string, w waker, me chan struct{}) (<-chan struct{}, func(handOn bool)) {
	sub, ok := c.s.(Subscriber)
	if !ok {
		return nil, func(bool) {}
	}
	h := &c.wake
	h.mu.Lock()
	if h.subs == nil {
		h.subs = map[string]*wakeSub{}
	}
	ws := h.subs[channel]
	first := ws == nil
	if first {
		ws = &wakeSub{ready: make(chan struct{}), waiters: map[chan struct{}]waker{}}
		h.subs[channel] = ws
	}
	ws.refs++
	ws.waiters[me] = w
	h.mu.Unlock()

	leave := func(handOn bool) { h.leave(channel, ws, me, handOn) }
	if first {
		unsub, err := sub.Subscribe(ctx, channel, func(payload string) { h.notify(ws, payload) })
		h.mu.Lock()
		ws.unsub, ws.err = unsub, err
		h.mu.Unlock()
		close(ws.ready)
	} else {
		select {
		case <-ws.ready:
		case <-ctx.Done():
			leave(false)
			return nil, func(bool) {}
		}
	}
	h.mu.Lock()
	err := ws.err
	h.mu.Unlock()
	if err != nil {
		leave(false)
		return nil, func(bool) {}
	}
	return me, leave
}

// notify wakes every waiter of ws that is not woken alone, and one that
// is, after handing payload, when not empty, to the waiters that take it.
func (h *wakeHub) notify(ws *wakeSub, payload string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for w, k := range ws.waiters {
		if k.handed != nil && payload != "" {
			k.handed(payload)
		}
		if !k.alone {
			select {
			case w <- struct{}{}:
			default:
			}
		}
	}
	ws.wakeOne()
}

// wakeOne wakes one waiter woken alone that has no wake-up pending (a
// pending one already makes its waiter try again once), if there is one.
// The caller holds the hub's mutex.
func (ws *wakeSub) wakeOne() {
	for w, k := range ws.waiters {
		if !k.alone {
			continue
		}
		select {
		case w <- struct{}{}:
			return
		default:
		}
	}
}

// leave removes waiter me, handing on a wake-up it did not use (see
// joinWake); the last one out unsubscribes.
func (h *wakeHub) leave(channel string, ws *wakeSub, me chan struct{}, handOn bool) {
	h.mu.Lock()
	if _, ok := ws.waiters[me]; !ok {
		h.mu.Unlock()
		return
	}
	alone := ws.waiters[me].alone
	delete(ws.waiters, me)
	ws.refs--
	select {
	case <-me:
		handOn = true
	default:
	}
	if alone && handOn {
		ws.wakeOne() // lest nobody try
	}
	last := ws.refs == 0
	if last && h.subs[channel] == ws {
		delete(h.subs, channel)
	}
	h.mu.Unlock()
	if last {
		<-ws.ready // the first waiter's Subscribe has returned
		if ws.unsub != nil {
			ws.unsub()
		}
	}
}
