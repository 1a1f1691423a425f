package conformance

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/scriptlock/scriptlock/locker"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// semaphoreCases check the counting semaphore.
var semaphoreCases = []testCase{
	{
		name:  "Semaphore/PermitLimit",
		rule:  "10 goroutines on two clients taking 1 or 2 of 3 permits for 1.5 s (plain and FIFO): at no instant do the granted leases hold more than 3 permits (checked in-process and by the permit checker over every grant's validity window), every fence is unique, and each goroutine is granted.",
		check: checkSemPermitLimit,
	},
	{
		name:  "Semaphore/FIFONoStarvation",
		rule:  "With FIFO, a request for all 4 permits queued while 4 goroutines keep taking 1 permit each is granted within 5 s, and the small requests continue after it.",
		check: checkSemNoStarvation,
	},
	{
		name:  "Semaphore/FIFOOrder",
		rule:  "With FIFO, five Acquires that start one after another (each once Inspect shows the one before queued) while every permit is held are granted in the order they started, one by one as the permits are released.",
		check: checkSemFIFOOrder,
	},
	{
		name:      "Semaphore/PushWake",
		rule:      "An Acquire waiting for permits held by a lease with a 30 s TTL gets them within 2 s of that lease's Unlock (a push wake-up, not the retry at the holder's expiry), plain and FIFO.",
		check:     checkSemPushWake,
		exclusive: "bounds how soon a waiter is woken (2 s), after sleeping 300 ms for it to subscribe",
	},
	{
		name:  "Semaphore/CrashedHolder",
		rule:  "Permits taken by a holder that never releases them come back after its TTL: a waiting Acquire is granted after the TTL, not before.",
		check: checkSemCrashedHolder,
	},
	{
		name:      "Semaphore/SetPermits",
		rule:      "SetPermits lowers the limit for every client without revoking holds above it (no new grant until they are released), raising it wakes a waiting Acquire, and SetPermits(0) restores each client's own limit; asking more than the stored limit fails with ErrInvalidOption.",
		check:     checkSemSetPermits,
		exclusive: "bounds how soon a waiter is woken (2 s), after sleeping 300 ms for it to queue",
	},
	{
		name:      "Semaphore/Outcome",
		rule:      "A TryAcquire whose reply is lost (the grant ran) returns an error and its clean-up frees the permits it may have taken; a TryAcquire whose call arrives after its caller gave up and its clean-up is refused by Redis and takes nothing; a delayed call answered within the context grants a lease valid from the call's start, and one still running when the context ends returns promptly and leaves every permit free soon after.",
		check:     checkSemOutcome,
		exclusive: "bounds how soon a call returns after its context ended (300 ms)",
	},
	{
		name:  "Semaphore/BadInput",
		rule:  "Every bad semaphore input (permits outside [1, MaxPermits], bad name or TTL, 0 or more than Permits permits asked, SetPermits outside [0, MaxPermits], nil context) returns its typed error without panicking, and nothing is left in Redis.",
		check: checkSemBadInput,
	},
	{
		name:  "Semaphore/TwoRoundTrips",
		rule:  "An uncontended TryAcquire plus Unlock costs exactly two script calls once the scripts are loaded.",
		check: checkSemTwoRoundTrips,
	},
	{
		name:      "Semaphore/Chaos",
		needs:     "kills every client connection and empties the script cache of every node (CLIENT KILL, SCRIPT FLUSH)",
		rule:      "8 goroutines taking 1 or 2 of 3 permits in a loop while every client connection is killed every 200 ms and the script cache flushed every 300 ms: cycles succeed, and the permit checker finds no instant with more than 3 permits held.",
		check:     checkSemChaos,
		exclusive: "CLIENT KILL and SCRIPT FLUSH on every node",
	},
}

// sem returns a Semaphore on c, failing the case on error.
func (e *env) sem(c *locker.Client, name string, permits int, ttl time.Duration, opts *locker.SemaphoreOptions) *locker.Semaphore {
	e.t.Helper()
	s, err := c.NewSemaphore(name, permits, ttl, opts)
	require.NoError(e.t, err, "call: NewSemaphore(%q, %d, %v, %+v)", name, permits, ttl, opts)
	return s
}

// permitGrant is one semaphore lease as the permit checker sees it: valid
// from its Acquire's return to the start of its Unlock (or its validity
// deadline, if earlier).
type permitGrant struct {
	n          int
	fence      int64
	start, end time.Time
}

// checkPermits sweeps the grants' validity windows and returns the most
// permits held at one instant; it also asserts that every fence is unique.
func checkPermits(t *testing.T, grants []permitGrant, limit int) int {
	t.Helper()
	type edge struct {
		at time.Time
		d  int
	}
	var edges []edge
	fences := map[int64]bool{}
	for _, g := range grants {
		if fences[g.fence] {
			t.Errorf("permit checker: fence %d granted twice", g.fence)
		}
		fences[g.fence] = true
		if g.end.After(g.start) {
			edges = append(edges, edge{g.start, g.n}, edge{g.end, -g.n})
		}
	}
	// Ends before starts at one instant: a window is half-open.
	sort.Slice(edges, func(i, j int) bool {
		if edges[i].at.Equal(edges[j].at) {
			return edges[i].d < edges[j].d
		}
		return edges[i].at.Before(edges[j].at)
	})
	held, most := 0, 0
	for _, e := range edges {
		held += e.d
		most = max(most, held)
	}
	t.Logf("permit checker: %d grants checked, most permits held at once = %d (limit %d)", len(grants), most, limit)
	if most > limit {
		t.Errorf("permit checker: %d permits held at once, limit %d", most, limit)
	}
	return most
}

func checkSemPermitLimit(t *testing.T, e *env) {
	for _, fifo := range []bool{false, true} {
		what := fmt.Sprintf("FIFO %v", fifo)
		name := fmt.Sprintf("permits-%v", fifo)
		const permits, workers = 3, 10
		sems := []*locker.Semaphore{
			e.sem(e.client(nil), name, permits, 10*time.Second, &locker.SemaphoreOptions{FIFO: fifo}),
			e.sem(e.client(nil), name, permits, 10*time.Second, &locker.SemaphoreOptions{FIFO: fifo}),
		}
		var (
			mu     sync.Mutex
			grants []permitGrant
			inside atomic.Int64
			wg     sync.WaitGroup
			counts [workers]int
		)
		stop := time.Now().Add(1500 * time.Millisecond)
		for w := range workers {
			wg.Go(func() {
				rng := rand.New(rand.NewPCG(uint64(w), 7))
				s := sems[w%2]
				for time.Now().Before(stop) {
					n := 1 + rng.IntN(2)
					l, err := s.Acquire(e.ctx, n)
					if !assert.NoError(t, err, "%s: call: Acquire(%d)", what, n) {
						return
					}
					start := time.Now()
					if now := inside.Add(int64(n)); now > permits {
						t.Errorf("%s: %d permits held in-process at once, limit %d", what, now, permits)
					}
					time.Sleep(time.Duration(1+rng.IntN(3)) * time.Millisecond)
					inside.Add(-int64(n))
					end := time.Now()
					if vu := l.ValidUntil(); vu.Before(end) {
						end = vu
					}
					assert.NoError(t, l.Unlock(e.ctx), "%s: call: Unlock", what)
					mu.Lock()
					grants = append(grants, permitGrant{n: n, fence: l.Fence(), start: start, end: end})
					counts[w]++
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		checkPermits(t, grants, permits)
		for w, n := range counts {
			assert.Positive(t, n, "%s: goroutine %d was never granted", what, w)
		}
	}
}

func checkSemNoStarvation(t *testing.T, e *env) {
	const permits = 4
	s := e.sem(e.client(nil), "starve", permits, 10*time.Second, &locker.SemaphoreOptions{FIFO: true})
	var small atomic.Int64
	var wg sync.WaitGroup
	defer wg.Wait()
	ctx, stop := context.WithCancel(e.ctx)
	defer stop() // before wg.Wait: the small requests end
	for range permits {
		wg.Go(func() {
			for ctx.Err() == nil {
				l, err := s.Acquire(ctx, 1)
				if err != nil {
					return
				}
				small.Add(1)
				time.Sleep(5 * time.Millisecond)
				_ = l.Unlock(e.ctx)
			}
		})
	}
	e.until(t, func() bool { return small.Load() >= 20 }, 10*time.Second, "call: the small requests run")
	bctx, cancel := context.WithTimeout(e.ctx, 5*time.Second)
	defer cancel()
	start := time.Now()
	big, err := s.Acquire(bctx, permits)
	if errors.Is(err, context.DeadlineExceeded) {
		e.tooLate(t, fmt.Sprintf("call: Acquire(%d) while %d goroutines keep taking 1: not granted within 5s (FIFO: never overtaken): %v", permits, permits, err))
	}
	require.NoError(t, err, "call: Acquire(%d) while %d goroutines keep taking 1: want it granted within 5s (FIFO: never overtaken)", permits, permits)
	t.Logf("Acquire(%d) granted after %v", permits, time.Since(start))
	require.NoError(t, big.Unlock(e.ctx))
	after := small.Load()
	e.eventually(t, func() bool { return small.Load() > after+4 }, 5*time.Second, "call: the small requests continue after the large one")
}

func checkSemFIFOOrder(t *testing.T, e *env) {
	c0 := e.client(nil)
	s := e.sem(c0, "order", 1, 30*time.Second, &locker.SemaphoreOptions{FIFO: true})
	first, err := s.TryAcquire(e.ctx, 1)
	require.NoError(t, err, "call: TryAcquire")
	const waiters = 5
	order := make(chan int, waiters)
	leases := make(chan *locker.Lease, waiters)
	for i := range waiters {
		c := e.client(nil)
		w := e.sem(c, "order", 1, 30*time.Second, &locker.SemaphoreOptions{FIFO: true})
		go func() {
			l, err := w.Acquire(e.ctx, 1)
			if assert.NoError(t, err, "call: Acquire of waiter %d", i) {
				order <- i
				leases <- l
			}
		}()
		// Queued before the next one starts (the order they started in is
		// the order they queued in).
		e.until(t, func() bool {
			st, err := c0.Inspect(e.ctx, "order")
			return err == nil && st.Semaphore.Waiting == i+1
		}, 10*time.Second, fmt.Sprintf("call: Inspect: waiter %d queued", i))
	}
	require.NoError(t, first.Unlock(e.ctx))
	var got []int
	for range waiters {
		select {
		case i := <-order:
			got = append(got, i)
			require.NoError(t, (<-leases).Unlock(e.ctx))
		case <-time.After(10 * time.Second):
			t.Fatalf("only %v granted within 10s", got)
		}
	}
	assert.Equal(t, []int{0, 1, 2, 3, 4}, got, "grant order")
}

func checkSemPushWake(t *testing.T, e *env) {
	for _, fifo := range []bool{false, true} {
		what := fmt.Sprintf("FIFO %v", fifo)
		name := fmt.Sprintf("push-%v", fifo)
		holder := e.sem(e.client(nil), name, 2, 30*time.Second, &locker.SemaphoreOptions{FIFO: fifo})
		h, err := holder.TryAcquire(e.ctx, 2)
		require.NoError(t, err, "%s: call: TryAcquire(2)", what)
		waiter := e.sem(e.client(nil), name, 2, 30*time.Second, &locker.SemaphoreOptions{FIFO: fifo})
		got := make(chan lockResult, 1)
		go func() {
			l, err := waiter.Acquire(e.ctx, 1)
			got <- lockResult{l, err}
		}()
		time.Sleep(300 * time.Millisecond) // the waiter is refused and subscribed
		released := time.Now()
		require.NoError(t, h.Unlock(e.ctx), "%s: call: Unlock", what)
		r := arrive(t, e, got, 5*time.Second, what+": Acquire(1) granted after the Unlock (the holder's TTL is 30s): no push wake-up")
		took := time.Since(released)
		require.NoError(t, r.err, "%s: call: Acquire(1)", what)
		require.NoError(t, r.l.Unlock(e.ctx))
		if !e.within(t, what+": Acquire returned after the Unlock", took, 2*time.Second) {
			return
		}
	}
}

func checkSemCrashedHolder(t *testing.T, e *env) {
	const ttl = 400 * time.Millisecond
	crashed := e.sem(e.client(nil), "crash", 2, ttl, nil)
	start := time.Now()
	_, err := crashed.TryAcquire(e.ctx, 2) // never released
	require.NoError(t, err, "call: TryAcquire(2)")
	s := e.sem(e.client(nil), "crash", 2, 10*time.Second, nil)
	l, err := s.Acquire(e.ctx, 2)
	require.NoError(t, err, "call: Acquire(2) after the crashed holder's TTL")
	assert.GreaterOrEqual(t, time.Since(start), ttl-50*time.Millisecond, "call: Acquire(2) granted before the crashed holder's TTL passed")
	took := time.Since(start)
	require.NoError(t, l.Unlock(e.ctx))
	e.within(t, "call: Acquire(2) granted after the crashed holder's TTL", took, ttl+3*time.Second)
}

func checkSemSetPermits(t *testing.T, e *env) {
	c := e.client(nil)
	s := e.sem(c, "limit", 3, 30*time.Second, nil)
	other := e.sem(e.client(nil), "limit", 3, 30*time.Second, nil)
	a, err := s.TryAcquire(e.ctx, 2)
	require.NoError(t, err, "call: TryAcquire(2)")
	require.NoError(t, s.SetPermits(e.ctx, 1), "call: SetPermits(1)")
	_, err = other.TryAcquire(e.ctx, 1)
	require.ErrorIs(t, err, locker.ErrNotObtained, "call: another client's TryAcquire(1) with 2 held and the limit lowered to 1")
	assert.True(t, a.Valid(), "the hold above the lowered limit is kept")
	_, err = other.TryAcquire(e.ctx, 2)
	require.ErrorIs(t, err, locker.ErrInvalidOption, "call: TryAcquire(2) with the stored limit 1")
	require.NoError(t, a.Unlock(e.ctx))
	one, err := other.TryAcquire(e.ctx, 1)
	require.NoError(t, err, "call: TryAcquire(1) under the limit 1")
	got := make(chan lockResult, 1)
	go func() {
		l, err := other.Acquire(e.ctx, 1)
		got <- lockResult{l, err}
	}()
	time.Sleep(300 * time.Millisecond)
	select {
	case r := <-got:
		t.Fatalf("call: Acquire(1) granted (%v) while the limit 1 is held", r.err)
	default:
	}
	raised := time.Now()
	require.NoError(t, s.SetPermits(e.ctx, 2), "call: SetPermits(2)")
	r := arrive(t, e, got, 5*time.Second, "call: Acquire(1) granted after SetPermits(2)")
	took := time.Since(raised)
	require.NoError(t, r.err, "call: Acquire(1) after the limit was raised")
	require.NoError(t, r.l.Unlock(e.ctx))
	if !e.within(t, "call: Acquire(1) woken by raising the limit", took, 2*time.Second) {
		return
	}
	require.NoError(t, s.SetPermits(e.ctx, 0), "call: SetPermits(0)")
	two, err := other.TryAcquire(e.ctx, 2)
	require.NoError(t, err, "call: TryAcquire(2) with each client's own limit (3) again")
	require.NoError(t, one.Unlock(e.ctx))
	require.NoError(t, two.Unlock(e.ctx))
}

func checkSemOutcome(t *testing.T, e *env) {
	const permits = 2
	f := e.faults()
	c := e.clientOn(f, nil)
	s := e.sem(c, "outcome", permits, 30*time.Second, nil)
	key := c.Key("outcome") + ":sem"
	check := e.sem(e.client(nil), "outcome", permits, 30*time.Second, nil)
	allFree := func(string) bool {
		l, err := check.TryAcquire(e.ctx, permits)
		if err != nil {
			return false
		}
		require.NoError(t, l.Unlock(e.ctx))
		return true
	}
	acquireFates(t, e, f, key, "sem_acquire",
		func(ctx context.Context) error { _, err := s.TryAcquire(ctx, permits); return err }, allFree)

	// Delayed, answered within the context: a lease, valid from the call's
	// start.
	a := f.delayBy("sem_acquire", 1, slowButAnswered).onKey(key)
	start := time.Now()
	l, err := s.TryAcquire(e.ctx, permits)
	a.disarm()
	require.NoError(t, err, "delayed: call: TryAcquire answered within its context")
	notAfter(t, l.ValidUntil(), start.Add(30*time.Second), "delayed: call: ValidUntil() (counted from the call's start)")
	require.NoError(t, l.Unlock(e.ctx))
	assert.True(t, allFree("delayed"), "delayed: every permit is free after Unlock")
}

func checkSemChaos(t *testing.T, e *env) {
	const permits = 3
	s := e.sem(e.client(nil), "chaos", permits, time.Second, nil)
	ctx, cancel := context.WithTimeout(e.ctx, chaosRun)
	defer cancel()
	var (
		mu      sync.Mutex
		grants  []permitGrant
		ok, bad atomic.Int64
		wg      sync.WaitGroup
	)
	wg.Go(func() {
		every(ctx, 200*time.Millisecond, func() { _ = e.d.admin.ClientKill(e.ctx, "normal") })
	})
	wg.Go(func() {
		every(ctx, 300*time.Millisecond, func() { _ = e.d.admin.ScriptFlush(e.ctx) })
	})
	for w := range 8 {
		wg.Go(func() {
			n := 1 + w%2
			for ctx.Err() == nil {
				lctx, lcancel := context.WithTimeout(ctx, 2*time.Second)
				l, err := s.Acquire(lctx, n)
				lcancel()
				if err != nil {
					if ctx.Err() == nil && !errors.Is(err, locker.ErrNotObtained) {
						bad.Add(1)
					}
					continue
				}
				start := time.Now()
				time.Sleep(time.Millisecond)
				end, vu := time.Now(), l.ValidUntil()
				err = l.Unlock(e.ctx)
				if err != nil && !errors.Is(err, locker.ErrExpired) && l.Valid() {
					end = vu // not released: held until its deadline
				}
				if vu.Before(end) {
					end = vu
				}
				mu.Lock()
				grants = append(grants, permitGrant{n: n, fence: l.Fence(), start: start, end: end})
				mu.Unlock()
				ok.Add(1)
			}
		})
	}
	wg.Wait()
	t.Logf("chaos run: %d acquire+unlock cycles succeeded, %d acquires failed", ok.Load(), bad.Load())
	checkPermits(t, grants, permits)
	e.timely(t, ok.Load() > 0, "call: chaos run: no cycle succeeded at all")
}

func checkSemBadInput(t *testing.T, e *env) {
	c := e.client(nil)
	for _, p := range []int{0, -1, locker.MaxPermits + 1} {
		_, err := c.NewSemaphore("bad", p, time.Second, nil)
		assert.ErrorIs(t, err, locker.ErrInvalidOption, "call: NewSemaphore with permits %d", p)
	}
	_, err := c.NewSemaphore("", 1, time.Second, nil)
	assert.ErrorIs(t, err, locker.ErrInvalidName, "call: NewSemaphore with an empty name")
	_, err = c.NewSemaphore("bad", 1, 0, nil)
	assert.ErrorIs(t, err, locker.ErrInvalidTTL, "call: NewSemaphore with TTL 0")
	s := e.sem(c, "bad", 2, time.Second, nil)
	for _, n := range []int{0, -1, 3} {
		_, err := s.TryAcquire(e.ctx, n)
		assert.ErrorIs(t, err, locker.ErrInvalidOption, "call: TryAcquire(%d) of 2 permits", n)
		_, err = s.Acquire(e.ctx, n)
		assert.ErrorIs(t, err, locker.ErrInvalidOption, "call: Acquire(%d) of 2 permits", n)
	}
	for _, p := range []int{-1, locker.MaxPermits + 1} {
		assert.ErrorIs(t, s.SetPermits(e.ctx, p), locker.ErrInvalidOption, "call: SetPermits(%d)", p)
	}
	_, err = s.TryAcquire(nilCtx, 1)
	assert.ErrorIs(t, err, locker.ErrNilContext, "call: TryAcquire(nil, 1)")
	_, err = s.Acquire(nilCtx, 1)
	assert.ErrorIs(t, err, locker.ErrNilContext, "call: Acquire(nil, 1)")
	assert.ErrorIs(t, s.SetPermits(nilCtx, 1), locker.ErrNilContext, "call: SetPermits(nil, 1)")
	assert.Empty(t, e.lockKeysLeft(), "nothing is left in Redis after the bad inputs")
}

func checkSemTwoRoundTrips(t *testing.T, e *env) {
	cs := &countingScripter{Scripter: e.s}
	c := e.clientOn(cs, nil)
	s := e.sem(c, "round-trips", 3, 10*time.Second, nil)
	l, err := s.TryAcquire(e.ctx, 1)
	for try := 0; err != nil && try < 3; try++ {
		// A connection killed by an earlier case may fail one call:
		// drivers do not retry.
		time.Sleep(50 * time.Millisecond)
		l, err = s.TryAcquire(e.ctx, 1)
	}
	require.NoError(t, err, "call: warm-up TryAcquire")
	require.NoError(t, l.Unlock(e.ctx), "call: warm-up Unlock")
	cs.reset()
	l, err = s.TryAcquire(e.ctx, 2)
	require.NoError(t, err, "call: TryAcquire")
	require.NoError(t, l.Unlock(e.ctx), "call: Unlock")
	evalsha, eval, load := cs.counts()
	assert.Equal(t, [3]int64{2, 0, 0}, [3]int64{evalsha, eval, load}, "call: TryAcquire+Unlock: [EvalSha, Eval, ScriptLoad] calls through the Scripter")
}
