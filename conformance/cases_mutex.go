package conformance

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/scriptlock/scriptlock/locker"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// mutexCases check the mutex, through locker.New on the driver.
var mutexCases = []testCase{
	{
		name:  "Mutex/OneWinner",
		rule:  "Among 50 goroutines calling TryLock on one free lock at once, exactly one wins and the others get ErrNotObtained.",
		check: checkOneWinner,
	},
	{
		name:  "Mutex/Exclusion",
		rule:  "A non-atomic counter incremented under Lock by 20 goroutines x 50 rounds ends at exactly 1000, and no two goroutines are ever inside at once.",
		check: checkExclusion,
	},
	{
		name:  "Mutex/TTLExpiry",
		rule:  "A lease that is not unlocked frees the lock when its TTL runs out.",
		check: checkTTLExpiry,
	},
	{
		name:  "Mutex/FencesIncrease",
		rule:  "Fences strictly increase across 100 grants, including grants taken after the previous lease expired.",
		check: checkFencesIncrease,
	},
	{
		name:  "Mutex/StaleLease",
		rule:  "Unlock, Extend and TTL of an expired lease report ErrExpired, and of a superseded lease ErrHeldByOther, without touching the new holder.",
		check: checkStaleLease,
	},
	{
		name:  "Mutex/Extend",
		rule:  "Extend keeps the lock held past its first TTL and moves the lease's validity deadline.",
		check: checkExtend,
	},
	{
		name:  "Mutex/IdempotentAcquire",
		rule:  "Acquiring again with the same Owner (a hand-over) succeeds with the same fence; the later lease's Unlock frees the lock, earlier holds included, and the earlier lease's Unlock never drops the later hold.",
		check: checkIdempotentAcquire,
	},
	{
		name:  "Mutex/Reentrant",
		rule:  "A reentrant owner's holds are counted: the lock frees only when the last hold is unlocked, and unlocking one lease twice drops one hold.",
		check: checkReentrant,
	},
	{
		name:  "Mutex/LockWaits",
		rule:  "Lock blocks while another owner holds the lock and returns a lease with a larger fence once the holder unlocks.",
		check: checkLockWaits,
	},
	{
		name:  "Mutex/LockDeadline",
		rule:  "Lock on a held lock returns ErrNotObtained joined with ctx.Err() when its context deadline passes, and holds nothing: once its clean-up in the background ran (a waiter that starved meanwhile leaves the lock's starving waiters), no key of the lock is left after the holder's Unlock.",
		check: checkLockDeadline,
	},
	{
		name:  "Mutex/OddNames",
		rule:  "Names with braces, percent signs, spaces, unicode and 1 KiB length work end to end (one slot on a Cluster).",
		check: checkOddNames,
	},
	{
		name:      "Mutex/TwoRoundTrips",
		needs:     "reads the node's INFO commandstats",
		rule:      "An uncontended TryLock plus Unlock costs exactly two script calls once the scripts are loaded.",
		check:     checkTwoRoundTrips,
		exclusive: "reads the node's INFO commandstats, which counts every client's calls",
	},
}

func checkOneWinner(t *testing.T, e *env) {
	m := e.mutex(e.client(nil), "one-winner", 10*time.Second, nil)
	const n = 50
	var (
		wg      sync.WaitGroup
		start   = make(chan struct{})
		wins    atomic.Int32
		refused atomic.Int32
		other   = make(chan error, n)
	)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			_, err := m.TryLock(e.ctx)
			switch {
			case err == nil:
				wins.Add(1)
			case errors.Is(err, locker.ErrNotObtained):
				refused.Add(1)
			default:
				other <- err
			}
		}()
	}
	close(start)
	wg.Wait()
	close(other)
	for err := range other {
		require.NoError(t, err, "call: TryLock: got an error that is not ErrNotObtained")
	}
	assert.Equal(t, int32(1), wins.Load(), "call: 50 x TryLock: winners")
	assert.Equal(t, int32(n-1), refused.Load(), "call: 50 x TryLock: ErrNotObtained count")
}

func checkExclusion(t *testing.T, e *env) {
	m := e.mutex(e.client(nil), "exclusion", 10*time.Second, nil)
	const workers, rounds = 20, 50
	var (
		wg      sync.WaitGroup
		counter atomic.Int64 // loaded and stored separately: a non-atomic increment
		inside  atomic.Int32
		overlap atomic.Int32
		errs    = make(chan error, workers)
	)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range rounds {
				l, err := m.Lock(e.ctx)
				if err != nil {
					errs <- err
					return
				}
				if inside.Add(1) != 1 {
					overlap.Add(1)
				}
				v := counter.Load()
				runtime.Gosched()
				counter.Store(v + 1)
				inside.Add(-1)
				if err := l.Unlock(e.ctx); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	assert.Zero(t, overlap.Load(), "call: times a goroutine entered while another was inside")
	for err := range errs {
		if !e.done(t, err, "call: Lock/Unlock in the loop") {
			return
		}
	}
	assert.Equal(t, int64(workers*rounds), counter.Load(), "call: counter after %d locked increments", workers*rounds)
}

func checkTTLExpiry(t *testing.T, e *env) {
	c := e.client(nil)
	// 1 s: with 100 ms, CI's load once let the lease expire before the
	// second TryLock (run 16, redigo).
	const ttl = time.Second
	m := e.mutex(c, "ttl-expiry", ttl, nil)
	began := time.Now()
	a, err := m.TryLock(e.ctx)
	require.NoError(t, err, "call: first TryLock")
	_, err = m.TryLock(e.ctx)
	if took := time.Since(began); err == nil && took >= ttl {
		// Granted, but the first lease's TTL may have run out first.
		e.tooLate(t, fmt.Sprintf("call: second TryLock granted %v after the first TryLock began: its %v TTL may have run out", took.Round(time.Millisecond), ttl))
	}
	require.ErrorIs(t, err, locker.ErrNotObtained, "call: second TryLock while the first lease lives")
	var b *locker.Lease
	if !waitFor(func() bool {
		b, err = m.TryLock(e.ctx)
		return err == nil
	}, ttl+5*time.Second) {
		e.tooLate(t, fmt.Sprintf("call: TryLock after the first lease's %v TTL: not granted within %v; last error %v", ttl, ttl+5*time.Second, err))
	}
	assert.False(t, time.Now().Before(a.ValidUntil()), "call: TryLock granted before the first lease's validity ended (%v)", a.ValidUntil())
	assert.Greater(t, b.Fence(), a.Fence(), "call: fence of the grant after expiry")
	require.NoError(t, b.Unlock(e.ctx), "call: Unlock of the new lease")
}

func checkFencesIncrease(t *testing.T, e *env) {
	c := e.client(nil)
	short := e.mutex(c, "fences", 20*time.Millisecond, nil)
	var last int64
	for i := range 100 {
		var l *locker.Lease
		var err error
		if i%10 == 9 {
			// Let this grant expire instead of unlocking it; the next
			// grant then follows an expiry.
			l, err = short.Lock(e.ctx)
			require.NoError(t, err, "call: Lock #%d", i)
			time.Sleep(25 * time.Millisecond)
		} else {
			l, err = short.Lock(e.ctx)
			require.NoError(t, err, "call: Lock #%d", i)
			require.NoError(t, ignoreExpired(l.Unlock(e.ctx)), "call: Unlock #%d", i)
		}
		require.Greater(t, l.Fence(), last, "call: Fence() of grant #%d: got %d, want > %d", i, l.Fence(), last)
		last = l.Fence()
	}
}

// ignoreExpired drops ErrExpired: a 20 ms lease may expire before Unlock.
func ignoreExpired(err error) error {
	if errors.Is(err, locker.ErrExpired) {
		return nil
	}
	return err
}

func checkStaleLease(t *testing.T, e *env) {
	c := e.client(nil)
	m := e.mutex(c, "stale", 50*time.Millisecond, nil)

	// Expired, nobody else: ErrExpired.
	a, err := m.TryLock(e.ctx)
	require.NoError(t, err, "call: TryLock a")
	time.Sleep(80 * time.Millisecond)
	_, err = a.TTL(e.ctx)
	assert.ErrorIs(t, err, locker.ErrExpired, "call: a.TTL() after expiry")
	assert.ErrorIs(t, a.Extend(e.ctx, time.Second), locker.ErrExpired, "call: a.Extend() after expiry")
	assert.ErrorIs(t, a.Unlock(e.ctx), locker.ErrExpired, "call: a.Unlock() after expiry")
	assert.NoError(t, a.Unlock(e.ctx), "call: a.Unlock() a second time")

	// Expired and superseded: ErrHeldByOther, new holder untouched.
	a, err = m.TryLock(e.ctx)
	require.NoError(t, err, "call: TryLock a again")
	time.Sleep(80 * time.Millisecond)
	long := e.mutex(c, "stale", 10*time.Second, nil)
	b, err := long.TryLock(e.ctx)
	require.NoError(t, err, "call: TryLock b after a expired")
	_, err = a.TTL(e.ctx)
	assert.ErrorIs(t, err, locker.ErrHeldByOther, "call: a.TTL() while b holds")
	assert.ErrorIs(t, a.Extend(e.ctx, 50*time.Millisecond), locker.ErrHeldByOther, "call: a.Extend() while b holds")
	assert.ErrorIs(t, a.Unlock(e.ctx), locker.ErrHeldByOther, "call: a.Unlock() while b holds")
	ttl, err := b.TTL(e.ctx)
	require.NoError(t, err, "call: b.TTL() after a's stale calls")
	assert.Greater(t, ttl, 5*time.Second, "call: b.TTL() after a's stale Extend(50ms): b's expiry must be untouched")
	_, err = m.TryLock(e.ctx)
	assert.ErrorIs(t, err, locker.ErrNotObtained, "call: TryLock after a's stale Unlock: b must still hold")
	assert.NoError(t, b.Unlock(e.ctx), "call: b.Unlock()")
}

func checkExtend(t *testing.T, e *env) {
	c := e.client(nil)
	// A 1 s lease (200 ms before: a loaded machine could let it lapse
	// before the Extend, as one let a 100 ms lease in Mutex/TTLExpiry).
	m := e.mutex(c, "extend", time.Second, nil)
	granted := time.Now()
	l, err := m.TryLock(e.ctx)
	require.NoError(t, err, "call: TryLock")
	before := l.ValidUntil()
	e.lapsedDone(t, l.Extend(e.ctx, 5*time.Second), granted, time.Second, "call: Extend(5s)")
	assert.True(t, l.ValidUntil().After(before), "call: ValidUntil() after Extend: got %v, want after %v", l.ValidUntil(), before)
	time.Sleep(1200 * time.Millisecond)
	_, err = m.TryLock(e.ctx)
	assert.ErrorIs(t, err, locker.ErrNotObtained, "call: TryLock 1.2s into a 1s lease extended to 5s")
	ttl, err := l.TTL(e.ctx)
	require.NoError(t, err, "call: TTL() after Extend")
	assert.Greater(t, ttl, 2*time.Second, "call: TTL() after Extend(5s) and 1.2s")
	assert.True(t, l.Valid(), "call: Valid() after Extend(5s)")
	require.NoError(t, l.Unlock(e.ctx), "call: Unlock")
}

func checkIdempotentAcquire(t *testing.T, e *env) {
	c := e.client(nil)
	opts := &locker.MutexOptions{Owner: "owner-" + e.prefix}
	m1 := e.mutex(c, "idem", 10*time.Second, opts)
	m2 := e.mutex(c, "idem", 10*time.Second, opts)
	other := e.mutex(c, "idem", 10*time.Second, nil)
	for _, laterFirst := range []bool{false, true} {
		a, err := m1.TryLock(e.ctx)
		require.NoError(t, err, "call: TryLock with Owner")
		b, err := m2.TryLock(e.ctx)
		require.NoError(t, err, "call: TryLock again with the same Owner")
		assert.Equal(t, a.Fence(), b.Fence(), "call: Fence() of the repeated acquire")
		assert.Equal(t, a.Token(), b.Token(), "call: Token() of the repeated acquire")
		_, err = other.TryLock(e.ctx)
		assert.ErrorIs(t, err, locker.ErrNotObtained, "call: TryLock by another owner")
		if laterFirst {
			// The hand-over's Unlock frees the lock, earlier holds included.
			require.NoError(t, b.Unlock(e.ctx), "call: Unlock of the later lease")
			assert.ErrorIs(t, a.Unlock(e.ctx), locker.ErrExpired, "call: Unlock of the earlier lease after the later one freed the lock")
		} else {
			// The earlier lease's Unlock (a release arriving late, say)
			// never drops the later hold.
			require.NoError(t, a.Unlock(e.ctx), "call: Unlock of the earlier lease")
			_, err = other.TryLock(e.ctx)
			assert.ErrorIs(t, err, locker.ErrNotObtained, "call: TryLock by another owner while the later lease holds")
			assert.True(t, b.Valid(), "call: Valid() of the later lease")
			require.NoError(t, b.Unlock(e.ctx), "call: Unlock of the later lease")
		}
		o, err := other.TryLock(e.ctx)
		require.NoError(t, err, "call: TryLock by another owner after the Owner's Unlock (later first: %v)", laterFirst)
		assert.Greater(t, o.Fence(), a.Fence(), "call: Fence() of the next owner")
		require.NoError(t, o.Unlock(e.ctx), "call: Unlock by the other owner")
	}
}

func checkReentrant(t *testing.T, e *env) {
	c := e.client(nil)
	m := e.mutex(c, "reentrant", 10*time.Second, &locker.MutexOptions{Owner: "job-" + e.prefix, Reentrant: true})
	other := e.mutex(c, "reentrant", 10*time.Second, nil)
	var leases []*locker.Lease
	for i := range 3 {
		l, err := m.Lock(e.ctx)
		require.NoError(t, err, "call: reentrant Lock #%d", i)
		leases = append(leases, l)
		assert.Equal(t, leases[0].Fence(), l.Fence(), "call: Fence() of reentrant hold #%d", i)
	}
	for i := range 2 {
		require.NoError(t, leases[i].Unlock(e.ctx), "call: Unlock hold #%d", i)
		require.NoError(t, leases[i].Unlock(e.ctx), "call: Unlock hold #%d again", i)
		_, err := other.TryLock(e.ctx)
		assert.ErrorIs(t, err, locker.ErrNotObtained, "call: other TryLock with %d of 3 holds dropped", i+1)
	}
	_, err := leases[2].TTL(e.ctx)
	require.NoError(t, err, "call: TTL() of the last hold")
	require.NoError(t, leases[2].Unlock(e.ctx), "call: Unlock of the last hold")
	o, err := other.TryLock(e.ctx)
	require.NoError(t, err, "call: other TryLock after the last hold was dropped")
	assert.Greater(t, o.Fence(), leases[0].Fence(), "call: Fence() of the next owner")
	require.NoError(t, o.Unlock(e.ctx), "call: other Unlock")
}

func checkLockWaits(t *testing.T, e *env) {
	c := e.client(nil)
	m := e.mutex(c, "lock-waits", 30*time.Second, nil)
	a, err := m.TryLock(e.ctx)
	require.NoError(t, err, "call: TryLock a")
	type result struct {
		l   *locker.Lease
		err error
	}
	got := make(chan result, 1)
	go func() {
		l, err := m.Lock(e.ctx)
		got <- result{l, err}
	}()
	select {
	case r := <-got:
		t.Fatalf("call: Lock while a holds: returned (%v, %v), want it to block", r.l, r.err)
	case <-time.After(200 * time.Millisecond):
	}
	require.NoError(t, a.Unlock(e.ctx), "call: a.Unlock")
	r := <-got
	require.NoError(t, r.err, "call: Lock after a.Unlock")
	assert.Greater(t, r.l.Fence(), a.Fence(), "call: Fence() of the waiter's lease")
	require.NoError(t, r.l.Unlock(e.ctx), "call: waiter Unlock")
}

func checkLockDeadline(t *testing.T, e *env) {
	c := e.client(nil)
	m := e.mutex(c, "lock-deadline", 30*time.Second, nil)
	a, err := m.TryLock(e.ctx)
	require.NoError(t, err, "call: TryLock a")
	ctx, cancel := context.WithTimeout(e.ctx, 200*time.Millisecond)
	defer cancel()
	l, err := m.Lock(ctx)
	assert.Nil(t, l, "call: Lock past its deadline: lease")
	assert.ErrorIs(t, err, locker.ErrNotObtained, "call: Lock past its deadline")
	assert.ErrorIs(t, err, ctx.Err(), "call: Lock past its deadline: want ctx.Err() joined")
	ttl, err := a.TTL(e.ctx)
	require.NoError(t, err, "call: a.TTL() after the waiter gave up")
	assert.Greater(t, ttl, 20*time.Second, "call: a.TTL(): the waiter must not have touched a's lease")
	require.NoError(t, a.Unlock(e.ctx), "call: a.Unlock")
	// The waiter starved (past MutexOptions.StarvationThreshold) before
	// its deadline: it leaves the lock's starving waiters in the
	// background, and an Unlock before that hands the lock to it; its
	// clean-up then frees the lock.
	// Within 10 s is timing; past the TTL a hold would have leaked.
	if !waitFor(func() bool { return len(e.lockKeysLeft()) == 0 }, 10*time.Second) {
		e.timely(t, false, fmt.Sprintf("call: keys under the prefix 10s after Unlock and the waiter's clean-up: %v", e.lockKeysLeft()))
		assert.True(t, waitFor(func() bool { return len(e.lockKeysLeft()) == 0 }, 30*time.Second),
			"call: keys under the prefix a TTL (30s) after Unlock and the waiter's clean-up: %v", e.lockKeysLeft())
	}
}

func checkOddNames(t *testing.T, e *env) {
	c := e.client(nil)
	long := make([]byte, 1024)
	for i := range long {
		long[i] = "{}ab%"[i%5]
	}
	names := []string{"{", "}", "{}", "}{", "a{b}c", "{tag}rest", "100%", "%7B", "with space", "tab\tnewline\n", "unicode ✓ 锁 🔒", "\x00\xff", string(long)}
	for _, name := range names {
		m := e.mutex(c, name, 10*time.Second, nil)
		l, err := m.TryLock(e.ctx)
		require.NoError(t, err, "call: TryLock(%q)", name)
		_, err = m.TryLock(e.ctx)
		assert.ErrorIs(t, err, locker.ErrNotObtained, "call: second TryLock(%q)", name)
		require.NoError(t, l.Extend(e.ctx, 20*time.Second), "call: Extend for %q", name)
		_, err = l.TTL(e.ctx)
		require.NoError(t, err, "call: TTL for %q", name)
		require.NoError(t, l.Unlock(e.ctx), "call: Unlock(%q)", name)
		first, err := c.Claim(e.ctx, name, time.Second)
		require.NoError(t, err, "call: Claim(%q)", name)
		assert.True(t, first, "call: Claim(%q) on a fresh key", name)
	}
	// Distinct names must be distinct locks.
	a, err := e.mutex(c, "{", 10*time.Second, nil).TryLock(e.ctx)
	require.NoError(t, err, `call: TryLock("{")`)
	b, err := e.mutex(c, "%7B", 10*time.Second, nil).TryLock(e.ctx)
	require.NoError(t, err, `call: TryLock("%%7B") while "{" is held: distinct names must not collide`)
	require.NoError(t, a.Unlock(e.ctx))
	require.NoError(t, b.Unlock(e.ctx))
}

func checkTwoRoundTrips(t *testing.T, e *env) {
	cs := &countingScripter{Scripter: e.s}
	c := e.clientOn(cs, nil)
	m := e.mutex(c, "round-trips", 10*time.Second, nil)
	// Warm up: load the scripts.
	l, err := m.TryLock(e.ctx)
	require.NoError(t, err, "call: warm-up TryLock")
	require.NoError(t, l.Unlock(e.ctx), "call: warm-up Unlock")
	key := c.Key("round-trips")
	before := e.scriptCommandStats(key)
	cs.reset()
	l, err = m.TryLock(e.ctx)
	require.NoError(t, err, "call: TryLock")
	require.NoError(t, l.Unlock(e.ctx), "call: Unlock")
	after := e.scriptCommandStats(key)
	evalsha, eval, load := cs.counts()
	assert.Equal(t, [3]int64{2, 0, 0}, [3]int64{evalsha, eval, load}, "call: TryLock+Unlock: [EvalSha, Eval, ScriptLoad] calls through the Scripter")
	for _, cmd := range []string{"evalsha", "eval", "script|load", "script"} {
		want := int64(0)
		if cmd == "evalsha" {
			want = 2
		}
		assert.Equal(t, want, after[cmd]-before[cmd], "call: TryLock+Unlock: server-side INFO commandstats delta of %s on the lock's node", cmd)
	}
}

// scriptCommandStats returns the call counts of INFO commandstats on the
// node that owns key, by lower-case command name ("evalsha", "script|load").
func (e *env) scriptCommandStats(key string) map[string]int64 {
	e.t.Helper()
	r, err := e.d.admin.Do(e.ctx, key, "INFO", "commandstats")
	require.NoError(e.t, err, "call: admin INFO commandstats")
	info, _ := r.(string)
	stats := map[string]int64{}
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") {
			continue
		}
		calls, _, _ := strings.Cut(strings.TrimPrefix(rest, "calls="), ",")
		n, err := strconv.ParseInt(calls, 10, 64)
		require.NoError(e.t, err, "call: parse INFO commandstats line %q", line)
		stats[strings.TrimPrefix(name, "cmdstat_")] = n
	}
	require.NotEmpty(e.t, stats, "call: INFO commandstats: no cmdstat_ lines in %q", info)
	return stats
}
