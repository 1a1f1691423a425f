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
	refs    int
	ready   chan struct{} // closed when Subscribe returned
	err     error         // Subscribe's error
	unsub   func()
	waiters map[chan struct{}]struct{}
}

// joinWake subscribes the caller to channel. It returns a channel that
// receives (buffered, so a message arriving while the caller is busy is not
// lost) after every message, and a leave function to call when done
// waiting. It returns a nil channel when the Scripter has no Subscriber or
// subscribing failed; the caller then polls. It blocks until the shared
// subscription is confirmed or ctx is done.
func (c *Client) joinWake(ctx context.Context, channel string) (<-chan struct{}, func()) {
	sub, ok := c.s.(Subscriber)
	if !ok {
		return nil, func() {}
	}
	h := &c.wake
	me := make(chan struct{}, 1)
	h.mu.Lock()
	if h.subs == nil {
		h.subs = map[string]*wakeSub{}
	}
	ws := h.subs[channel]
	first := ws == nil
	if first {
		ws = &wakeSub{ready: make(chan struct{}), waiters: map[chan struct{}]struct{}{}}
		h.subs[channel] = ws
	}
	ws.refs++
	ws.waiters[me] = struct{}{}
	h.mu.Unlock()

	leave := func() { h.leave(channel, ws, me) }
	if first {
		unsub, err := sub.Subscribe(ctx, channel, func() { h.notify(ws) })
		h.mu.Lock()
		ws.unsub, ws.err = unsub, err
		h.mu.Unlock()
		close(ws.ready)
	} else {
		select {
		case <-ws.ready:
		case <-ctx.Done():
			leave()
			return nil, func() {}
		}
	}
	h.mu.Lock()
	err := ws.err
	h.mu.Unlock()
	if err != nil {
		leave()
		return nil, func() {}
	}
	return me, leave
}

// notify wakes every waiter of ws.
func (h *wakeHub) notify(ws *wakeSub) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for w := range ws.waiters {
		select {
		case w <- struct{}{}:
		default:
		}
	}
}

// leave removes waiter me; the last one out unsubscribes.
func (h *wakeHub) leave(channel string, ws *wakeSub, me chan struct{}) {
	h.mu.Lock()
	if _, ok := ws.waiters[me]; !ok {
		h.mu.Unlock()
		return
	}
	delete(ws.waiters, me)
	ws.refs--
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
