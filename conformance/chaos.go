package conformance

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/scriptlock/scriptlock/locker"
)

// workload is a chaos run: goroutines taking mutexes in a loop while a
// fault is injected, every grant recorded in a history.
type workload struct {
	e       *env
	c       *locker.Client
	names   []string
	ttl     time.Duration
	opts    *locker.MutexOptions
	hold    time.Duration
	rw      bool // read-write locks: every fourth worker writes, the others read
	h       history
	epoch   atomic.Int32
	ok, bad atomic.Int64 // operations (lock + unlock) that succeeded, failed
	late    atomic.Int64 // Locks not granted within their 2×TTL context
	errMu   sync.Mutex
	errs    []error // a sample of failures
}

func newWorkload(e *env, ttl time.Duration, opts *locker.MutexOptions) *workload {
	return &workload{e: e, c: e.client(nil), names: []string{"chaos-a", "chaos-b"}, ttl: ttl, opts: opts, hold: time.Millisecond}
}

// run runs goroutines workers for d while fault runs in its own goroutine
// with a context that ends with the run; it blocks until all have ended.
func (w *workload) run(workers int, d time.Duration, fault func(ctx context.Context)) {
	w.e.t.Helper()
	ctx, cancel := context.WithTimeout(w.e.ctx, d)
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		fault(ctx)
	}()
	for i := range workers {
		name := w.names[i%len(w.names)]
		lock, kind := w.e.mutex(w.c, name, w.ttl, w.opts).Lock, "mutex"
		var rest time.Duration
		if w.rw {
			rw := w.e.rw(w.c, name, w.ttl, nil)
			lock, kind = rw.RLock, "read"
			if i%4 == 0 {
				// Writers rest between turns: with writer preference,
				// writers back to back would shut readers out.
				lock, kind, rest = rw.Lock, "write", 5*time.Millisecond
			}
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				w.once(ctx, lock, kind)
				time.Sleep(rest)
			}
		}()
	}
	wg.Wait()
}

// once takes a lock with lock, holds it briefly and releases it, recording
// the outcome as a grant of kind.
func (w *workload) once(ctx context.Context, lock func(context.Context) (*locker.Lease, error), kind string) {
	lctx, cancel := context.WithTimeout(ctx, 2*w.ttl)
	defer cancel()
	l, err := lock(lctx)
	if err != nil {
		switch {
		case ctx.Err() != nil || errors.Is(err, locker.ErrNotObtained):
		case errors.Is(err, context.DeadlineExceeded):
			w.late.Add(1) // not obtained within 2×TTL: timing, not a failure
		default:
			w.fail(err)
		}
		return
	}
	g := w.h.add(l, kind, int(w.epoch.Load()))
	time.Sleep(w.hold)
	// Unlock with the case's context: the run's may end meanwhile. A lease
	// that lapsed before it (the process ran a TTL late) finds the lock
	// gone or taken: the history checker judges the exclusion.
	if err := w.h.unlock(w.e.ctx, g); err != nil && !errors.Is(err, locker.ErrExpired) && !errors.Is(err, locker.ErrHeldByOther) {
		w.fail(err)
		return
	}
	w.ok.Add(1)
}

func (w *workload) fail(err error) {
	w.bad.Add(1)
	w.errMu.Lock()
	if len(w.errs) < 3 {
		w.errs = append(w.errs, err)
	}
	w.errMu.Unlock()
}

// every runs f every period until ctx ends.
func every(ctx context.Context, period time.Duration, f func()) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			f()
		}
	}
}

// summary logs the run's counts and checks its history (safety), then
// that some cycle succeeded and every Lock was granted within twice the
// TTL (timing, see within).
func (w *workload) summary(t *testing.T) historyReport {
	t.Helper()
	t.Logf("chaos run: %d lock+unlock cycles succeeded, %d failed (sample: %v), %d Locks not granted within 2×TTL", w.ok.Load(), w.bad.Load(), w.errs, w.late.Load())
	r := w.h.check(t)
	if w.e.timely(t, w.ok.Load() > 0, "chaos run: no cycle succeeded at all") {
		w.e.timely(t, w.late.Load() == 0, fmt.Sprintf("chaos run: %d Locks not granted within 2×TTL (%v)", w.late.Load(), 2*w.ttl))
	}
	return r
}
