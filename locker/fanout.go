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
	f := &fan[T]{
		ch:    make(chan fanResult[T], len(jans)), // never blocks a call
		stops: make([]func() bool, len(jans)),
		got:   make([]bool, len(jans)),
		left:  len(jans),
	}
	deadline := time.Time{}
	if budget > 0 {
		deadline = time.Now().Add(budget)
	}
	if d, ok := ctx.Deadline(); ok && (deadline.IsZero() || d.Before(deadline)) {
		deadline = d
	}
	for i, j := range jans {
		f.start(ctx, i, j, deadline, detach, call, late)
	}
	f.collect(ctx, deadline, decide, late)
	f.finish(late)
}

// fan is one fanOut's state: the results not yet decided on, and whether
// the caller has decided.
type fan[T any] struct {
	mu      sync.Mutex
	decided bool
	ch      chan fanResult[T]
	stops   []func() bool // detach the calls from the caller's ctx
	got     []bool        // results decided on, by call
	left    int           // calls not decided on
}

// start runs call i in a goroutine tracked by its janitor j.
func (f *fan[T]) start(ctx context.Context, i int, j *janitor, deadline time.Time, detach bool,
	call func(ctx context.Context, i int) (T, error), late func(i int, v T, err error)) {
	base := ctx
	if detach {
		base = context.WithoutCancel(ctx)
	}
	var (
		cctx   context.Context
		cancel context.CancelFunc
	)
	if deadline.IsZero() {
		cctx, cancel = context.WithCancel(base)
	} else {
		cctx, cancel = context.WithDeadline(base, deadline)
	}
	f.stops[i] = func() bool { return false }
	if detach {
		f.stops[i] = context.AfterFunc(ctx, cancel) // until the decision, the caller's end ends the call
	}
	done := j.track(cancel)
	go func() {
		defer done()
		defer cancel()
		v, err := call(cctx, i)
		f.mu.Lock()
		if !f.decided {
			f.ch <- fanResult[T]{i, v, err}
			f.mu.Unlock()
			return
		}
		f.mu.Unlock()
		if late != nil {
			late(i, v, err)
		}
	}()
}

// collect hands results to decide until it decides or every call is
// decided on. A call that has not returned by the deadline, or when ctx
// ends, is decided on as failed (its outcome unknown) without waiting for
// it: a driver may not return at once (rueidis waits for room in a full
// pipeline, whatever the context). Its result still goes to late.
func (f *fan[T]) collect(ctx context.Context, deadline time.Time, decide func(i int, v T, err error) bool, late func(i int, v T, err error)) {
	var end <-chan time.Time
	if !deadline.IsZero() {
		t := time.NewTimer(time.Until(deadline))
		defer t.Stop()
		end = t.C
	}
	for f.left > 0 {
		select {
		case r := <-f.ch:
			if f.got[r.i] { // decided on as failed already
				if late != nil {
					late(r.i, r.v, r.err)
				}
				continue
			}
			f.got[r.i], f.left = true, f.left-1
			if decide(r.i, r.v, r.err) {
				return
			}
		case <-end:
			if f.giveUp(context.DeadlineExceeded, decide) {
				return
			}
		case <-ctx.Done():
			if f.giveUp(ctx.Err(), decide) {
				return
			}
		}
	}
}

// giveUp decides on every call not decided on as failed with cause.
func (f *fan[T]) giveUp(cause error, decide func(i int, v T, err error) bool) bool {
	var zero T
	for i := range f.got {
		if !f.got[i] {
			f.got[i], f.left = true, f.left-1
			if decide(i, zero, fmt.Errorf("locker: no answer: %w", cause)) {
				return true
			}
		}
	}
	return false
}

// finish records the decision, detaches the calls still running from the
// caller's ctx and hands the results not read to late.
func (f *fan[T]) finish(late func(i int, v T, err error)) {
	f.mu.Lock()
	f.decided = true
	f.mu.Unlock()
	for _, stop := range f.stops {
		stop() // the calls still running no longer depend on the caller's ctx
	}
	for {
		select {
		case r := <-f.ch: // arrived before the decision, not read
			if late != nil {
				late(r.i, r.v, r.err)
			}
		default:
			return
		}
	}
}
