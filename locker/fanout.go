package locker

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// One operation over several servers (a Quorum's deployments, a
// MultiLock's Cluster slots) decides as soon as its answer is known and
// never waits for the slowest server: fanOut sends every call at once,
// hands each result to the caller as it arrives, and stops listening as
// soon as the caller has decided. Calls still running then go on in the
// background, each bounded by its budget, and their results are handed to
// a late function instead (a grant that arrives after the decision is
// attached to the lease or released). The background calls are tracked by
// their Client's janitor, so Client.Close waits for them (bounded) and no
// goroutine outlives it.

// fanResult is one call's result.
type fanResult[T any] struct {
	i   int
	v   T
	err error
}

// fanOut runs call(ctx_i, i) for every janitor jans[i] at once. Each call's
// context ends when ctx ends, budget after the start (budget > 0), or when
// the janitor is closed (Client.Close); with detach, it keeps only ctx's
// values and deadline once decided, so that the calls still running can
// finish after the caller returned. decide gets each result as it arrives,
// in the caller's goroutine, until it returns true or every call has
// returned; a call that has not returned by the deadline or when ctx ends
// is given to decide as failed with an unknown outcome. Results that come
// after that go to late (may be nil), in the call's own goroutine or the
// caller's. fanOut returns once decided.
func fanOut[T any](ctx context.Context, jans []*janitor, budget time.Duration, detach bool,
	call func(ctx context.Context, i int) (T, error),
	decide func(i int, v T, err error) bool,
	late func(i int, v T, err error),
) {
	var (
		mu      sync.Mutex
		decided bool
		ch      = make(chan fanResult[T], len(jans)) // never blocks a call
		stops   = make([]func() bool, len(jans))
	)
	deadline := time.Time{}
	if budget > 0 {
		deadline = time.Now().Add(budget)
	}
	if d, ok := ctx.Deadline(); ok && (deadline.IsZero() || d.Before(deadline)) {
		deadline = d
	}
	base := ctx
	if detach {
		base = context.WithoutCancel(ctx)
	}
	for i, j := range jans {
		var (
			cctx   context.Context
			cancel context.CancelFunc
		)
		if deadline.IsZero() {
			cctx, cancel = context.WithCancel(base)
		} else {
			cctx, cancel = context.WithDeadline(base, deadline)
		}
		stops[i] = func() bool { return false }
		if detach {
			stops[i] = context.AfterFunc(ctx, cancel) // until the decision, the caller's end ends the call
		}
		done := j.track(cancel)
		go func() {
			defer done()
			defer cancel()
			v, err := call(cctx, i)
			mu.Lock()
			if !decided {
				ch <- fanResult[T]{i, v, err}
				mu.Unlock()
				return
			}
			mu.Unlock()
			if late != nil {
				late(i, v, err)
			}
		}()
	}
	// A call that has not returned by the deadline, or when ctx ends, is
	// decided on as failed (its outcome unknown) without waiting for it: a
	// driver may not return at once (rueidis waits for room in a full
	// pipeline, whatever the context). Its result still goes to late.
	var end <-chan time.Time
	if !deadline.IsZero() {
		t := time.NewTimer(time.Until(deadline))
		defer t.Stop()
		end = t.C
	}
	got := make([]bool, len(jans))
	left := len(jans)
	giveUp := func(cause error) bool {
		var zero T
		for i := range got {
			if !got[i] {
				got[i], left = true, left-1
				if decide(i, zero, fmt.Errorf("locker: no answer: %w", cause)) {
					return true
				}
			}
		}
		return false
	}
loop:
	for left > 0 {
		select {
		case r := <-ch:
			if got[r.i] { // decided on as failed already
				if late != nil {
					late(r.i, r.v, r.err)
				}
				continue
			}
			got[r.i], left = true, left-1
			if decide(r.i, r.v, r.err) {
				break loop
			}
		case <-end:
			if giveUp(context.DeadlineExceeded) {
				break loop
			}
		case <-ctx.Done():
			if giveUp(ctx.Err()) {
				break loop
			}
		}
	}
	mu.Lock()
	decided = true
	mu.Unlock()
	for _, stop := range stops {
		stop() // the calls still running no longer depend on the caller's ctx
	}
	for {
		select {
		case r := <-ch: // arrived before the decision, not read
			if late != nil {
				late(r.i, r.v, r.err)
			}
		default:
			return
		}
	}
}

// track counts a background call of the Client, so that close waits for
// it; close's cancellation runs cancel. The call reports its end with the
// returned function. After close, the call is cancelled at once.
func (j *janitor) track(cancel context.CancelFunc) (done func()) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		cancel()
		return func() {}
	}
	j.enter()
	stop := context.AfterFunc(j.ctx, cancel)
	return func() {
		stop()
		j.leave()
	}
}
