package locker

import (
	"errors"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// handed lets a FIFO or starving Mutex waiter take the lock that a release
// handed it from the wake-up alone, without the call that would ask Redis
// (see Subscriber: the wake-up on the waiter's own channel carries the
// grant's fence, the server µs of the grant, and the waiter id, for the
// own channel is a slot that waiters reuse, see slots.go). It may take it
// only when the id is its own, its last call was a refusal that carried
// the server µs of that refusal, the fence is later than that (so the
// grant came after the refusal, not before it: a late wake-up of a grant
// gone since is ignored), and that call started within the drift margin
// of the lease's TTL: the lease's validity then counts from that call's
// start, which the grant followed, and is at most that margin shorter than
// a grant learned by a call. Otherwise the waiter asks Redis, as it always
// did.
type handed struct {
	id      string       // the waiter's id, set before it subscribes
	fence   atomic.Int64 // the largest fence a wake-up for id carried (0: none)
	refused int64        // server µs of the waiter's last refusal (0: its last call was not one, or carried none)
	at      time.Time    // the local start of that call
}

// note records a wake-up's payload, "<fence>:<waiter id>" (see
// starving.handed).
func (h *handed) note(payload string) {
	fence, id, ok := strings.Cut(payload, ":")
	if !ok || id != h.id || h.id == "" {
		return // another waiter's, one before it on the slot
	}
	f, err := strconv.ParseInt(fence, 10, 64)
	if err != nil || f <= 0 {
		return
	}
	for {
		old := h.fence.Load()
		if f <= old || h.fence.CompareAndSwap(old, f) {
			return
		}
	}
}

// after records the outcome of the waiter's call that started at start:
// a refusal at server µs us (0: unknown), or err.
func (h *handed) after(start time.Time, us int64, err error) {
	if us > 0 && errors.Is(err, ErrNotObtained) {
		h.refused, h.at = us, start
		return
	}
	h.refused = 0
}

// take returns the fence of a grant handed to the waiter after its last
// refusal, and when that refusal's call started (the lease's validity
// counts from there), or 0 when it has none it may take: margin is the
// drift margin of the lease's TTL.
func (h *handed) take(margin time.Duration) (int64, time.Time) {
	f := h.fence.Load()
	if h.refused == 0 || f <= h.refused || time.Since(h.at) > margin {
		return 0, time.Time{}
	}
	return f, h.at
}
