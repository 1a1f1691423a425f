package conformance

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/scriptlock/scriptlock/locker"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The unknown outcome of a retried call: the core retries a call answered
// with a passing state (LOADING, TRYAGAIN, CLUSTERDOWN, MOVED) for about
// two seconds. When an earlier try ran but its reply was lost, the call's
// outcome stays unknown whatever the later tries were answered: each rule
// loses the first try's reply, then answers every retry with a passing
// state until the core gives up, and checks that the caller took its
// unknown-outcome path.
func init() {
	outcomeCases = append(outcomeCases,
		testCase{
			name:  "Outcome/UnknownThenPassing/Extend",
			rule:  "An Extend to a shorter TTL (2 s) of a 30 s Mutex, read or Semaphore lease whose first try ran with its reply lost, then every retry answered with a passing state, returns an error and leaves ValidUntil no later than the call's start plus 2 s: once the key expired and another client holds the lock, the lease does not report Valid.",
			check: checkUnknownThenPassingExtend,
		},
		testCase{
			name:  "Outcome/UnknownThenPassing/Unlock",
			rule:  "An Unlock of a Mutex, read or Semaphore lease whose first try ran (releasing the lock) with its reply lost, then every retry answered with a passing state, returns an error and ends the lease at once (Valid false, Context cancelled), while another client gets the lock.",
			check: checkUnknownThenPassingUnlock,
		},
		testCase{
			name:  "Outcome/UnknownThenPassing/Claim",
			rule:  "A Claim whose first try set the marker with its reply lost, then every retry answered with a passing state, returns an error and its clean-up frees the key: a retried Claim of the same Client returns true soon after.",
			check: checkUnknownThenPassingClaim,
		},
		testCase{
			name:  "Outcome/UnknownThenPassing/SetPermits",
			rule:  "A SetPermits(1) on a Semaphore of 3 whose first try stored the limit with its reply lost, then every retry answered with a passing state, returns an error and its clean-up undoes the limit: soon after, another client's Inspect shows no stored limit.",
			check: checkUnknownThenPassingSetPermits,
		},
		testCase{
			name:  "Outcome/AnsweredThenTruth",
			rule:  "An Unlock whose first try was answered with a passing state (it did not run) and whose retry finds the key gone returns ErrExpired, or finds another owner returns ErrHeldByOther: only a try with an unknown outcome may have released the lock.",
			check: checkAnsweredThenTruth,
		},
	)
}

// passingCodes are the passing states a retry is answered with.
var passingCodes = []string{"LOADING", "TRYAGAIN", "CLUSTERDOWN", "MOVED"}

// leaseKind is a kind of lease the rules take: how to take it, the key
// its scripts are routed by, and how another client probes it.
type leaseKind struct {
	name    string
	key     func(c *locker.Client, name string) string
	extend  string // script names
	release string
	acquire func(ctx context.Context, c *locker.Client, name string, ttl time.Duration) (*locker.Lease, error)
}

var unknownKinds = []leaseKind{
	{"Mutex", func(c *locker.Client, n string) string { return c.Key(n) }, "extend", "release",
		func(ctx context.Context, c *locker.Client, n string, ttl time.Duration) (*locker.Lease, error) {
			return acquireOn(ctx, c, mMutex, n, ttl)
		}},
	{"RWMutex read", func(c *locker.Client, n string) string { return c.Key(n) + ":rw" }, "rw_extend", "rw_release",
		func(ctx context.Context, c *locker.Client, n string, ttl time.Duration) (*locker.Lease, error) {
			return acquireOn(ctx, c, mRead, n, ttl)
		}},
	{"Semaphore", func(c *locker.Client, n string) string { return c.Key(n) + ":sem" }, "sem_extend", "sem_release",
		func(ctx context.Context, c *locker.Client, n string, ttl time.Duration) (*locker.Lease, error) {
			s, err := c.NewSemaphore(n, 1, ttl, nil)
			if err != nil {
				return nil, err
			}
			return s.TryAcquire(ctx, 1)
		}},
}

// probeKind is another client's exclusive try at name: a Mutex TryLock,
// an RWMutex TryLock, or a Semaphore (of 1) TryAcquire.
func probeKind(ctx context.Context, c *locker.Client, k leaseKind, name string) (*locker.Lease, error) {
	if k.name == "RWMutex read" {
		return acquireOn(ctx, c, mWrite, name, outcomeTTL)
	}
	return k.acquire(ctx, c, name, outcomeTTL)
}

// eachKindAndCode runs fn for every lease kind and passing code, in
// parallel subtests named code/kind (each on its own lock name).
func eachKindAndCode(t *testing.T, kinds []leaseKind, fn func(t *testing.T, k leaseKind, code, name string)) {
	for _, code := range passingCodes {
		t.Run(code, func(t *testing.T) {
			for _, k := range kinds {
				t.Run(k.name, func(t *testing.T) {
					t.Parallel()
					fn(t, k, code, "utp-"+code+"-"+k.name)
				})
			}
		})
	}
}

// armUnknownThenPassing loses the reply of the next call of script on key
// (it runs) and answers every later one with code (they do not run).
func armUnknownThenPassing(f *faultScripter, script, key, code string) (lost, answered *faultArm) {
	return f.lose(script, 1, keyed(key)), f.answer(script, code, -1, keyed(key))
}

// requireUnknownThenPassing requires that both arms met their calls and
// that the call's error carries the last answer (a ServerError of code).
func requireUnknownThenPassing(t *testing.T, err error, lost, answered *faultArm, code, what string) {
	t.Helper()
	lost.disarm()
	answered.disarm()
	require.Error(t, err, "%s: call: got nil, want an error (the outcome is unknown)", what)
	require.Equal(t, 1, lost.applied(), "%s: the first try ran on Redis and its reply was lost", what)
	if answered.applied() == 0 && answered.made() == 1 {
		// The core's retry budget ended before it could retry: the first
		// try took that long on a machine running late (timing). The
		// outcome is unknown all the same: the rule's checks go on.
		answered.f.e.timely(t, false, fmt.Sprintf("%s: the core made no retry after the lost first try (%v)", what, err))
		return
	}
	require.GreaterOrEqual(t, answered.applied(), 1, "%s: the retries were answered %s", what, code)
	var se *locker.ServerError
	assert.True(t, errors.As(err, &se) && se.Code == code, "%s: call: got %v, want it to carry the last answer (%s)", what, err, code)
}

// awaitTaken polls another client's exclusive try at name until it is
// granted, for up to within; it returns the lease (recorded in h).
func awaitTaken(t *testing.T, e *env, c *locker.Client, k leaseKind, name string, within time.Duration, what string) *locker.Lease {
	t.Helper()
	start := time.Now()
	for {
		l, err := probeKind(e.ctx, c, k, name)
		if err == nil {
			return l
		}
		require.ErrorIs(t, err, locker.ErrNotObtained, "%s: call: another client's try at %q", what, name)
		if time.Since(start) > within {
			e.tooLate(t, fmt.Sprintf("%s: call: another client's try at %q: still refused %v later (last: %v)", what, name, within, err))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func checkUnknownThenPassingExtend(t *testing.T, e *env) {
	o := newOutcome(t, e)
	eachKindAndCode(t, unknownKinds, func(t *testing.T, k leaseKind, code, name string) {
		what := "Extend(" + shortExtend.String() + ") of a " + k.name + " lease, first try lost, then " + code
		l, err := k.acquire(e.ctx, o.c, name, outcomeTTL)
		require.NoError(t, err, "%s: call: acquire (setup)", what)
		o.h.add(l, "mutex", 0)
		lost, ans := armUnknownThenPassing(o.f, k.extend, k.key(o.c, name), code)
		start := time.Now()
		err = l.Extend(e.ctx, shortExtend)
		requireUnknownThenPassing(t, err, lost, ans, code, what)
		sent := o.f.firstEntered(k.extend, k.key(o.c, name), start) // the first try: the earliest it can run on Redis
		notAfter(t, l.ValidUntil(), sent.Add(shortExtend), what+": call: ValidUntil() (the first try may have set the short TTL)")

		other := awaitTaken(t, e, o.other, k, name, shortExtend+freeWithin, what+" (the key expires after the short TTL)")
		g := o.h.add(other, "mutex", 0)
		assert.False(t, l.Valid(), "%s: call: Valid() while another client holds the lock: got true, want false", what)
		require.NoError(t, o.unlock(e.ctx, g), "%s: call: Unlock of the other client's lease", what)
		_ = l.Unlock(e.ctx)
	})
}

func checkUnknownThenPassingUnlock(t *testing.T, e *env) {
	o := newOutcome(t, e)
	eachKindAndCode(t, unknownKinds, func(t *testing.T, k leaseKind, code, name string) {
		what := "Unlock of a " + k.name + " lease, first try lost, then " + code
		l, err := k.acquire(e.ctx, o.c, name, outcomeTTL)
		require.NoError(t, err, "%s: call: acquire (setup)", what)
		o.h.add(l, "mutex", 0)
		lost, ans := armUnknownThenPassing(o.f, k.release, k.key(o.c, name), code)
		err = l.Unlock(e.ctx)
		requireUnknownThenPassing(t, err, lost, ans, code, what)
		assert.False(t, l.Valid(), "%s: call: Valid(): got true, want false: a lease whose release may have run is ended", what)
		assert.Error(t, l.Context().Err(), "%s: call: Context().Err(): got nil, want the lease's Context cancelled", what)

		other := awaitTaken(t, e, o.other, k, name, freeWithin, what)
		g := o.h.add(other, "mutex", 0)
		assert.False(t, l.Valid(), "%s: call: Valid() while another client holds the lock", what)
		require.NoError(t, o.unlock(e.ctx, g), "%s: call: Unlock of the other client's lease", what)
	})
}

func checkUnknownThenPassingClaim(t *testing.T, e *env) {
	o := newOutcome(t, e)
	for _, code := range passingCodes {
		t.Run(code, func(t *testing.T) {
			t.Parallel()
			key := "utp-claim-" + code
			what := "Claim, first try lost, then " + code
			lost, ans := armUnknownThenPassing(o.f, "claim", o.c.Key(key)+":claim", code)
			_, err := o.c.Claim(e.ctx, key, outcomeTTL)
			requireUnknownThenPassing(t, err, lost, ans, code, what)
			start := time.Now()
			for {
				ok, err := o.c.Claim(e.ctx, key, outcomeTTL)
				require.NoError(t, err, "%s: call: the retried Claim", what)
				if ok {
					break
				}
				if time.Since(start) > freeWithin {
					e.tooLate(t, fmt.Sprintf("%s: call: the retried Claim still returns false %v later; want true once the clean-up dropped the marker", what, freeWithin))
				}
				time.Sleep(20 * time.Millisecond)
			}
			ok, err := o.other.Claim(e.ctx, key, outcomeTTL)
			require.NoError(t, err, "%s: call: another client's Claim", what)
			assert.False(t, ok, "%s: call: another client's Claim after the retried one won: got true, want false", what)
		})
	}
}

func checkUnknownThenPassingSetPermits(t *testing.T, e *env) {
	o := newOutcome(t, e)
	for _, code := range passingCodes {
		t.Run(code, func(t *testing.T) {
			t.Parallel()
			name := "utp-permits-" + code
			what := "SetPermits(1) on a Semaphore of 3, first try lost, then " + code
			s, err := o.c.NewSemaphore(name, 3, outcomeTTL, nil)
			require.NoError(t, err, "%s: call: NewSemaphore", what)
			l, err := s.TryAcquire(e.ctx, 1)
			require.NoError(t, err, "%s: call: TryAcquire (setup)", what)
			lost, ans := armUnknownThenPassing(o.f, "sem_permits", o.c.Key(name)+":sem", code)
			err = s.SetPermits(e.ctx, 1)
			requireUnknownThenPassing(t, err, lost, ans, code, what)
			start := time.Now()
			for {
				st, err := o.other.Inspect(e.ctx, name)
				require.NoError(t, err, "%s: call: another client's Inspect", what)
				if !st.Semaphore.LimitSet {
					break
				}
				if time.Since(start) > freeWithin {
					e.tooLate(t, fmt.Sprintf("%s: call: another client's Inspect still shows the limit %d stored %v later; want the clean-up to undo the call", what, st.Semaphore.Limit, freeWithin))
				}
				time.Sleep(20 * time.Millisecond)
			}
			require.NoError(t, l.Unlock(e.ctx), "%s: call: Unlock of the semaphore lease", what)
		})
	}
}

func checkAnsweredThenTruth(t *testing.T, e *env) {
	o := newOutcome(t, e)
	for _, code := range passingCodes {
		for _, taken := range []bool{true, false} {
			want, tag := locker.ErrExpired, "the key gone"
			if taken {
				want, tag = locker.ErrHeldByOther, "another owner"
			}
			t.Run(code+"/"+tag, func(t *testing.T) {
				t.Parallel()
				name := "att-" + code + "-" + tag
				what := "Unlock, first try answered " + code + ", then " + tag
				l, err := acquireOn(e.ctx, o.c, mMutex, name, outcomeTTL)
				require.NoError(t, err, "%s: call: TryLock (setup)", what)
				key := o.c.Key(name)
				_, err = e.d.admin.Do(e.ctx, key, "DEL", key)
				require.NoError(t, err, "%s: call: admin DEL %s (the key is lost, as after a failover)", what, key)
				if taken {
					other, err := acquireOn(e.ctx, o.other, mMutex, name, outcomeTTL)
					require.NoError(t, err, "%s: call: another client's TryLock", what)
					defer func() { _ = other.Unlock(e.ctx) }()
				}
				a := o.f.answer("release", code, 1, keyed(key))
				err = l.Unlock(e.ctx)
				a.requireOnce(t, "%s: the first try was answered %s", what, code)
				assert.ErrorIs(t, err, want, "%s: call: Unlock", what)
			})
		}
	}
}
