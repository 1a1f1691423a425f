package locker

import (
	"sync"
	"sync/atomic"
)

// hints counts, per lock kind and name, a Client's calls in a given
// waiting state and not yet returned: a Semaphore's Acquires refused at
// least once, a Mutex's Locks that starve. While there are some, a new
// call of the same kind and name expects to wait as they do, and
// subscribes before its first try (a Mutex's also makes that try as a
// starving waiter), saving the try that would only learn it. An entry is
// deleted when its count drops to 0; it is only a hint: a wrong one costs
// a subscription or a try, never a grant.
type hints struct {
	m sync.Map // hintKey -> *atomic.Int32
}

// hintKey keys hints.
type hintKey struct {
	kind string
	name string
}

// waiting reports whether calls are in kind's waiting state on name.
func (h *hints) waiting(kind, name string) bool {
	v, ok := h.m.Load(hintKey{kind, name})
	return ok && v.(*atomic.Int32).Load() > 0
}

// join counts the caller in kind's waiting state on name until it calls
// the returned function (once).
func (h *hints) join(kind, name string) (leave func()) {
	k := hintKey{kind, name}
	v, _ := h.m.LoadOrStore(k, new(atomic.Int32))
	n := v.(*atomic.Int32)
	n.Add(1)
	return func() {
		if n.Add(-1) == 0 {
			h.m.CompareAndDelete(k, n)
		}
	}
}
