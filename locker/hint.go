package locker

import (
	"sync"
	"sync/atomic"
)

// waitHints counts, per Client, lock kind and name, the calls of that
// Client in a given waiting state and not yet returned: a Semaphore's
// Acquires refused at least once, a Mutex's Locks that starve. While there
// are some, a new call of the same kind and name expects to wait as they
// do, and subscribes before its first try (a Mutex's also makes that try
// as a starving waiter), saving the try that would only learn it. An
// entry is deleted when its count drops to 0; it is only a hint: a wrong
// one costs a subscription or a try, never a grant.
var waitHints sync.Map // hintKey -> *atomic.Int32

// hintKey keys waitHints.
type hintKey struct {
	c    *Client
	kind string
	name string
}

// waitHint reports whether calls of this Client are in kind's waiting
// state on name (see waitHints).
func (c *Client) waitHint(kind, name string) bool {
	v, ok := waitHints.Load(hintKey{c, kind, name})
	return ok && v.(*atomic.Int32).Load() > 0
}

// joinHint counts the caller in kind's waiting state on name until it
// calls the returned function (once).
func (c *Client) joinHint(kind, name string) (leave func()) {
	k := hintKey{c, kind, name}
	v, _ := waitHints.LoadOrStore(k, new(atomic.Int32))
	n := v.(*atomic.Int32)
	n.Add(1)
	return func() {
		if n.Add(-1) == 0 {
			waitHints.CompareAndDelete(k, n)
		}
	}
}
