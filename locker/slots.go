package locker

import (
	"context"
	"strconv"
	"sync"
)

// A waiter's own channel is a slot, "<wake channel>:<slot>", that the
// Mutex waiters of one Client on one name reuse one after another while
// some of them wait, so that steady contention costs no subscription per
// Lock: a waiter id is "<slot>.<n>", and the hand-over scripts publish on
// the slot of the id (ownChannel in mutex_prelude.lua), with the payload
// "<fence>:<waiter id>", which tells the slot's current waiter from an
// earlier one. A slot stays subscribed, with a ref of its own in the wake
// hub, while it is idle and another Lock of its Client on its name runs;
// the last one out unsubscribes every idle slot of the name.
type slotPool struct {
	mu    sync.Mutex
	names map[string]*slotSet // by wake channel
}

// slotSet is one name's slots.
type slotSet struct {
	active int     // Locks of the name holding a slot
	idle   []*slot // subscribed, unused
}

// slot is one own channel and its subscription's own ref.
type slot struct {
	id   string
	n    int        // waiter ids given out
	keep func(bool) // leaves the hub's subscription (nil: none, no Subscriber)
}

// takeSlot returns a waiter id and its own channel for a waiter on wake
// channel wake, and a function to give the slot back when the waiter is
// done. A reused slot is subscribed still. A new one is subscribed (bounded
// by ctx) before takeSlot returns when other Locks of the name run, so
// that it can stay subscribed for them; otherwise it is not, the waiter
// subscribes when it must wait (a Lock granted at once costs no
// subscription), and the slot is dropped when given back. subscribed
// reports whether the channel is subscribed already: joining it then
// costs the waiter no call to Redis.
func (c *Client) takeSlot(ctx context.Context, wake string) (waiter, channel string, subscribed bool, giveBack func()) {
	p := &c.slots
	p.mu.Lock()
	if p.names == nil {
		p.names = map[string]*slotSet{}
	}
	set := p.names[wake]
	if set == nil {
		set = &slotSet{}
		p.names[wake] = set
	}
	set.active++
	var s *slot
	if n := len(set.idle); n > 0 {
		s, set.idle = set.idle[n-1], set.idle[:n-1]
	}
	others := set.active > 1
	p.mu.Unlock()
	if s == nil {
		s = &slot{id: newToken()}
		if others {
			// the keep ref's wake-ups are never read
			if w, leave := c.joinWakeInto(ctx, wake+":"+s.id, waker{}, make(chan struct{}, 1)); w != nil {
				s.keep = leave
			}
		}
	}
	s.n++
	waiter = s.id + "." + strconv.Itoa(s.n)
	return waiter, wake + ":" + s.id, s.keep != nil, func() { c.giveSlot(wake, s) }
}

// giveSlot gives s back: idle while other Locks on wake run, else
// unsubscribed with the name's other idle slots.
func (c *Client) giveSlot(wake string, s *slot) {
	p := &c.slots
	p.mu.Lock()
	set := p.names[wake]
	set.active--
	var drop []*slot
	if set.active > 0 && s.keep != nil {
		set.idle = append(set.idle, s)
	} else {
		drop = append(set.idle, s)
		set.idle = nil
		if set.active == 0 {
			delete(p.names, wake)
		}
	}
	p.mu.Unlock()
	for _, d := range drop {
		if d.keep != nil {
			d.keep(false)
		}
	}
}
