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
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func init() {
	stallCases = append(stallCases, testCase{
		name:      "Stall/DebugSleep",
		needs:     "stalls the node (DEBUG SLEEP)",
		rule:      "While DEBUG SLEEP 0.4 stalls the locks' node every 500 ms and every call has a 100 ms deadline, 8 goroutines taking mutexes and a read-write lock see no overlap and no fence inversion, every call returns, and once the TTL has passed a fresh client's TryLock succeeds.",
		check:     checkStallDebugSleep,
		exclusive: "DEBUG SLEEP stalls the node for every client",
	}, testCase{
		name:      "Stall/Deadline",
		needs:     "stalls the node (DEBUG SLEEP)",
		rule:      "While DEBUG SLEEP stalls the lock's node, a TryLock and a Lock with a 50 ms deadline, on a client whose connections sat idle for 200 ms (long enough for a pool to check them before use), return an error matching context.DeadlineExceeded within 300 ms of their deadline; once the node wakes, the name is free soon after.",
		check:     checkStallDeadline,
		exclusive: "DEBUG SLEEP stalls the node for every client",
	})
}

func checkStallDeadline(t *testing.T, e *env) {
	e.needsDebug()
	const name, deadline, bound = "stall-deadline", 50 * time.Millisecond, 300 * time.Millisecond
	c := e.client(nil)
	m := e.mutex(c, name, 10*time.Second, nil)
	l, err := m.TryLock(e.ctx) // opens the client's connections
	e.setupDone(t, err, "call: TryLock before the stall")
	require.NoError(t, l.Unlock(e.ctx), "call: Unlock before the stall")
	time.Sleep(200 * time.Millisecond)
	node, err := e.d.admin.Node(e.ctx, c.Key(name))
	require.NoError(t, err, "call: admin node of %q", c.Key(name))
	stalled := time.Now()
	began := e.stall(node)
	for _, call := range []struct {
		what string
		f    func(context.Context) (*locker.Lease, error)
	}{{"TryLock", m.TryLock}, {"Lock", m.Lock}} {
		ctx, cancel := context.WithTimeout(e.ctx, deadline)
		start := time.Now()
		l, err := call.f(ctx)
		took := time.Since(start)
		cancel()
		if err == nil {
			_ = l.Unlock(e.ctx)
			// A grant proves the node awake: on a machine running late,
			// the call may have run before the sleep began or after it.
			what := fmt.Sprintf("call: %s while the node stalls", call.what)
			if e.duringStall(t, 3, what, stalled, start, start.Add(took), began) {
				t.Errorf("%s: granted, want context.DeadlineExceeded", what)
			}
			continue
		}
		assert.ErrorIs(t, err, context.DeadlineExceeded, "call: %s with a %v deadline while the node stalls", call.what, deadline)
		if !e.within(t, fmt.Sprintf("call: %s with a %v deadline while the node stalls, returning", call.what, deadline), took, deadline+bound) {
			return
		}
	}
	e.freeSoon(t, func() bool { return e.mutexFree(e.client(nil), name) }, 5*time.Second, 15*time.Second,
		fmt.Sprintf("call: %q free once the node woke (the abandoned calls cleaned up)", name))
}

const (
	stallTTL      = time.Second
	stallCall     = 100 * time.Millisecond // every call's deadline
	stallRun      = 2500 * time.Millisecond
	stallEvery    = 500 * time.Millisecond
	stallSleep    = "0.4"           // DEBUG SLEEP's seconds
	stallStuckMax = 5 * time.Second // how long the run's end may wait for a call
)

// stallWorker is one goroutine of the stall run: what it locks, how, and
// the call it is in (for the stuck-call report).
type stallWorker struct {
	name string
	kind string // "mutex", "read" or "write"
	lock func(ctx context.Context) (*locker.Lease, error)
	try  func(ctx context.Context) (*locker.Lease, error)
	in   atomic.Pointer[string]
}

// call runs f with a fresh stallCall deadline, recording it as w's
// current call while it runs.
func (w *stallWorker) call(ctx context.Context, what string, f func(ctx context.Context) error) error {
	cctx, cancel := context.WithTimeout(ctx, stallCall)
	defer cancel()
	desc := fmt.Sprintf("%s on %s %q, started %s", what, w.kind, w.name, time.Now().Format("15:04:05.000"))
	w.in.Store(&desc)
	defer w.in.Store(nil)
	return f(cctx)
}

// stallTally counts the outcomes of the run's calls.
type stallTally struct {
	mu       sync.Mutex
	counts   map[string]int // "<call>: <outcome>"
	unexpect []error        // a sample of errors other than ctx deadlines and ErrNotObtained
	valid    []string       // a sample of failed Unlocks after which the lease still claimed validity
	nvalid   int
}

// stillValid records a failed Unlock after which the lease still claimed
// validity.
func (s *stallTally) stillValid(desc string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nvalid++
	if len(s.valid) < 3 {
		s.valid = append(s.valid, desc)
	}
}

func (s *stallTally) add(call string, err error) {
	outcome := "ok"
	switch {
	case err == nil:
	case errors.Is(err, locker.ErrNotObtained):
		outcome = "not obtained"
	case errors.Is(err, context.DeadlineExceeded):
		outcome = "deadline"
	case errors.Is(err, locker.ErrExpired), errors.Is(err, locker.ErrHeldByOther):
		outcome = "lease gone"
	default:
		outcome = "other error"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.counts[call+": "+outcome]++
	if outcome == "other error" && len(s.unexpect) < 3 {
		s.unexpect = append(s.unexpect, fmt.Errorf("%s: %w", call, err))
	}
}

func checkStallDebugSleep(t *testing.T, e *env) {
	e.needsDebug()
	c := e.client(nil)
	// Two mutexes and a read-write lock, all in one slot (on one node).
	names := sameSlotNames("stall-a", "stall-b-", "stall-rw-")
	var workers []*stallWorker
	for i, name := range []string{names[0], names[0], names[0], names[1], names[1]} {
		m := e.mutex(c, name, stallTTL, nil)
		w := &stallWorker{name: name, kind: "mutex", lock: m.Lock, try: m.TryLock}
		if i%2 == 1 {
			w.lock, w.try = m.TryLock, m.Lock // alternate which call comes first
		}
		workers = append(workers, w)
	}
	rw := e.rw(c, names[2], stallTTL, nil)
	workers = append(workers,
		&stallWorker{name: names[2], kind: "read", lock: rw.RLock, try: rw.TryRLock},
		&stallWorker{name: names[2], kind: "read", lock: rw.TryRLock, try: rw.RLock},
		&stallWorker{name: names[2], kind: "write", lock: rw.Lock, try: rw.TryLock},
	)
	node := c.Key(names[0]) // DEBUG SLEEP goes to this key's node

	var (
		h     history
		tally = stallTally{counts: map[string]int{}}
		wg    sync.WaitGroup
		slept atomic.Int32
	)
	ctx, cancel := context.WithTimeout(e.ctx, stallRun)
	defer cancel()
	wg.Go(func() {
		every(ctx, stallEvery, func() {
			_, err := e.d.admin.Do(e.ctx, node, "DEBUG", "SLEEP", stallSleep)
			if assert.NoError(t, err, "call: admin DEBUG SLEEP %s on %s's node", stallSleep, node) {
				slept.Add(1)
			}
		})
	})
	for i, w := range workers {
		wg.Go(func() { stallLoop(ctx, e, w, i, &h, &tally) })
	}

	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(stallRun + stallStuckMax):
		stuck := false
		for _, w := range workers {
			if d := w.in.Load(); d != nil {
				stuck = true
				t.Errorf("call: %s: still running %v after the run ended, want every call to return by its deadline", *d, stallStuckMax)
			}
		}
		if stuck {
			t.FailNow()
		}
		// No call outlived its deadline: the workers were between calls
		// on a machine running late.
		select {
		case <-done:
			e.timely(t, false, fmt.Sprintf("call: stall run: the workers ended more than %v after the run, none of them in a call", stallStuckMax))
		case <-time.After(stallStuckMax):
			t.Fatalf("call: stall run: the workers, none of them in a call, had not ended %v after the run", 2*stallStuckMax)
		}
	}

	t.Logf("stall run: %d DEBUG SLEEPs; outcomes: %v; unexpected errors (sample): %v", slept.Load(), tally.counts, tally.unexpect)
	require.NotZero(t, slept.Load(), "call: admin DEBUG SLEEP: the server was never stalled")
	r := h.check(t)
	if r.overlaps > 0 && tally.nvalid > 0 {
		t.Errorf("call: %d Unlocks failed and left their lease claiming validity (a cause of the overlaps above); first: %v", tally.nvalid, tally.valid)
	}

	// Once every lease has expired the locks must be free for anyone.
	time.Sleep(stallTTL + 200*time.Millisecond)
	fresh := e.client(nil)
	for _, name := range names[:2] {
		l, err := e.mutex(fresh, name, 10*time.Second, nil).TryLock(e.ctx) // long: about being free, not expiry
		require.NoError(t, err, "call: TryLock %q by a fresh client after the TTL: got error, want a lease", name)
		require.NoError(t, l.Unlock(e.ctx), "call: Unlock %q", name)
	}
	l, err := e.rw(fresh, names[2], 10*time.Second, nil).TryLock(e.ctx)
	require.NoError(t, err, "call: RWMutex TryLock %q by a fresh client after the TTL: got error, want a lease", names[2])
	require.NoError(t, l.Unlock(e.ctx), "call: Unlock %q", names[2])
	e.timely(t, len(h.grants) > 0, "call: stall run: no lock was granted at all")
}

// stallLoop is worker i's loop: lock (with Lock or TryLock, in turn),
// hold 1 ms, extend every other time, unlock; every call with its own
// stallCall deadline. Grants go to h, outcomes to tally.
func stallLoop(ctx context.Context, e *env, w *stallWorker, i int, h *history, tally *stallTally) {
	for n := 0; ctx.Err() == nil; n++ {
		lock, what := w.lock, "Lock"
		if n%2 == 1 {
			lock, what = w.try, "TryLock"
		}
		var l *locker.Lease
		err := w.call(ctx, what, func(ctx context.Context) (err error) { l, err = lock(ctx); return err })
		tally.add(what, err)
		if err != nil {
			if w.kind == "write" || errors.Is(err, locker.ErrNotObtained) {
				time.Sleep(5 * time.Millisecond) // writers rest: readers get turns
			}
			continue
		}
		g := h.add(l, w.kind, 0)
		time.Sleep(time.Millisecond)
		if (n+i)%2 == 0 {
			err := w.call(ctx, "Extend", func(ctx context.Context) error { return l.Extend(ctx, stallTTL) })
			tally.add("Extend", err)
		}
		// The run's ctx may end meanwhile: Unlock gets its deadline from
		// the case's context.
		err = w.call(e.ctx, "Unlock", func(ctx context.Context) error { return h.unlock(ctx, g) })
		tally.add("Unlock", err)
		if err != nil && !errors.Is(err, locker.ErrExpired) && !errors.Is(err, locker.ErrHeldByOther) && l.Valid() {
			// The history keeps such a lease open until its deadline.
			tally.stillValid(fmt.Sprintf("Unlock of %s %q (fence %d) failed with %q: got Valid() true, ValidUntil %s after the call; want the lease ended at once when the Unlock's outcome is unknown (its release may land any moment)",
				w.kind, w.name, g.fence, err, l.ValidUntil().Format("15:04:05.000")))
		}
		if w.kind == "write" {
			time.Sleep(5 * time.Millisecond)
		}
	}
}
