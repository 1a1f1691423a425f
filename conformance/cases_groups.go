package conformance

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/scriptlock/scriptlock/locker"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Leases made of parts (MultiLease, QuorumLease) keep the promises of a
// single Lease: a lost one holds nothing for long, a refused Unlock changes
// nothing, Close leaves no goroutine, a nil one is safe.

func init() {
	// Before the chaos cases, whose killed connections a driver's pool may
	// still hold (see insertBefore).
	multiCases = insertBefore(multiCases, "Multi/Chaos",
		testCase{
			name:      "Multi/LostReleasesParts",
			rule:      "An auto-refreshed MultiLease whose one part is taken away is lost, and its other names are no longer held (not refreshed, released) within a TTL, without Unlock.",
			check:     checkMultiLostReleasesParts,
			exclusive: "bounds how soon the other names are free (within a TTL of 1 s)",
		},
		testCase{
			name:      "Multi/UnlockRefusedKeepsContext",
			rule:      "A MultiLease Unlock that the server refuses for every part (NOPERM) returns the error and leaves the lease held: Valid, its Context not cancelled, every name held; a later Unlock releases it and cancels the Context.",
			check:     func(t *testing.T, e *env) { checkUnlockRefused(t, e, false) },
			exclusive: "gives the refused releases 200 ms to arrive",
		},
		testCase{
			name:  "Multi/NoGoroutinesAfterClose",
			rule:  "Closing the Client while MultiLeases are held (auto-refreshed or not, Lost and Context in use) leaves no goroutine of the core running.",
			check: func(t *testing.T, e *env) { checkGroupsNoLeak(t, e, false) },
			quiet: "counts every new goroutine of the process",
		},
	)
	quorumCases = insertBefore(quorumCases, "Quorum/Chaos",
		testCase{
			name:      "Quorum/LostReleasesParts",
			needs:     "starts, stops or freezes two redis-server processes of its own beside the deployment",
			rule:      "An auto-refreshed QuorumLease that loses two parts of three is lost, and the third deployment no longer holds the name (not refreshed, released) within a TTL, without Unlock.",
			check:     checkQuorumLostReleasesParts,
			exclusive: "bounds how soon the part is free (within a TTL of 1 s)",
		},
		testCase{
			name:      "Quorum/UnlockRefusedKeepsContext",
			needs:     "starts, stops or freezes two redis-server processes of its own beside the deployment",
			rule:      "A QuorumLease Unlock that the servers refuse (NOPERM), or one given a nil context, returns an error and leaves the lease held: Valid, its Context not cancelled, a majority held; a later Unlock releases it and cancels the Context.",
			check:     func(t *testing.T, e *env) { checkUnlockRefused(t, e, true) },
			exclusive: "gives the refused releases 200 ms to arrive",
		},
		testCase{
			name:  "Quorum/NoGoroutinesAfterClose",
			needs: "starts, stops or freezes two redis-server processes of its own beside the deployment",
			rule:  "Closing the Clients while QuorumLeases are held (auto-refreshed or not, Lost and Context in use) leaves no goroutine of the core running.",
			check: func(t *testing.T, e *env) { checkGroupsNoLeak(t, e, true) },
			quiet: "counts every new goroutine of the process",
		},
	)
	badInputCases = append(badInputCases, testCase{
		name:  "BadInput/NilLeases",
		rule:  "Every method of a nil *Lease, *MultiLease and *QuorumLease returns without panicking: Unlock nil, Valid false, Lost closed, Context cancelled, the others an error matching ErrExpired or a zero value.",
		check: checkNilLeases,
	})
}

func checkMultiLostReleasesParts(t *testing.T, e *env) {
	c := e.client(nil)
	const ttl = time.Second
	m := e.multi(c, []string{"keep", "lose"}, ttl, &locker.MultiLockOptions{AutoRefresh: true})
	l, err := m.TryLock(e.ctx)
	e.setupDone(t, err, "call: TryLock")
	k := c.Key("lose")
	_, err = e.d.admin.Do(e.ctx, k, "DEL", k)
	require.NoError(t, err, "call: admin DEL of one part")
	arrive(t, e, l.Lost(), 5*time.Second, "call: Lost() closed after one part was taken away")
	lostAt := time.Now()
	other := e.client(nil)
	if !e.freeSoon(t, func() bool { return e.mutexFree(other, "keep") }, ttl+time.Second, ttl+5*time.Second,
		"call: plain TryLock of the other name after the MultiLease was lost: want free within a TTL, without Unlock") {
		return
	}
	t.Logf("the other name was free %v after Lost closed", time.Since(lostAt).Round(time.Millisecond))
	time.Sleep(2 * ttl) // a refresh would take it again
	assert.True(t, e.mutexFree(other, "keep"), "call: plain TryLock of the other name two TTLs later: it must not be refreshed")
	assert.False(t, l.Valid(), "call: Valid() of the lost lease")
	if err := l.Unlock(e.ctx); err != nil { // the lost part reports its loss, as Lease.Unlock does
		assert.True(t, errors.Is(err, locker.ErrExpired) || errors.Is(err, locker.ErrHeldByOther), "call: Unlock of the lost lease: got %v, want nil, ErrExpired or ErrHeldByOther", err)
	}
}

func checkQuorumLostReleasesParts(t *testing.T, e *env) {
	qs := newQuorumSet(t, e, nil)
	const ttl = time.Second
	q := qs.quorum("q", ttl, &locker.QuorumOptions{AutoRefresh: true})
	// The rule starts from a lease on all three deployments. A part whose
	// call took longer than PartTimeout (a tenth of the TTL: 100 ms) was
	// given up and cleaned up, not joined, which a loaded machine can
	// cause: then the grant is released and taken again, up to 5 times.
	var l *locker.QuorumLease
	for try := 1; ; try++ {
		// Refused while the last try's given-up part is cleaned up; on a
		// loaded machine a call may also find no answer within PartTimeout.
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			var err error
			if l, err = q.TryLock(e.ctx); err == nil {
				break
			}
			if time.Now().After(deadline) {
				e.tooLate(t, fmt.Sprintf("call: TryLock (AutoRefresh), try %d: no grant in 10 s (set-up on a free name): %v", try, err))
			}
		}
		deadline := time.Now().Add(2 * time.Second)
		for len(l.Parts()) < 3 && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		if len(l.Parts()) == 3 {
			break
		}
		if try >= 5 {
			e.tooLate(t, fmt.Sprintf("call: Parts() of 5 grants in a row: want 3 within 2 s in one of them, got %d (each part's call must answer within PartTimeout, 100 ms)", len(l.Parts())))
		}
		t.Logf("try %d: Parts() %d after 2 s (a part's call outlived PartTimeout): released and taken again", try, len(l.Parts()))
		if err := l.Unlock(e.ctx); err != nil {
			// It expires within its 1 s TTL; the next TryLock waits for that.
			t.Logf("try %d: Unlock of the grant with a missing part: %v", try, err)
		}
	}
	key := qs.clients[0].Key("q")
	for i := 1; i < 3; i++ {
		_, err := qs.servers[i].Do(e.ctx, "DEL", key)
		require.NoError(t, err, "call: DEL of the part on deployment %d", i)
	}
	arrive(t, e, l.Lost(), 5*time.Second, "call: Lost() closed after two parts were taken away")
	if !e.freeSoon(t, func() bool { return !qs.held(0, "q") }, ttl+time.Second, ttl+5*time.Second,
		"call: plain TryLock on deployment 0 after the quorum lease was lost: want free within a TTL, without Unlock") {
		return
	}
	time.Sleep(2 * ttl)
	assert.False(t, qs.held(0, "q"), "call: plain TryLock on deployment 0 two TTLs later: the part must not be refreshed")
	assert.ErrorIs(t, l.Err(), locker.ErrExpired, "call: Err() of the lost quorum lease")
	e.done(t, l.Unlock(e.ctx), "call: Unlock of the lost lease")
}

// refuser refuses every script call with NOPERM while armed, as a server
// refuses a user without the permission: nothing runs.
type refuser struct {
	locker.Scripter
	on atomic.Bool
}

var errNoPerm = locker.NewServerError("NOPERM this user has no permissions to run the 'evalsha' command", nil)

func (r *refuser) EvalSha(ctx context.Context, sha string, keys, args []string) (any, error) {
	if r.on.Load() {
		return nil, errNoPerm
	}
	return r.Scripter.EvalSha(ctx, sha, keys, args)
}

func (r *refuser) Eval(ctx context.Context, src string, keys, args []string) (any, error) {
	if r.on.Load() {
		return nil, errNoPerm
	}
	return r.Scripter.Eval(ctx, src, keys, args)
}

// groupLease is what MultiLease and QuorumLease share.
type groupLease interface {
	Unlock(ctx context.Context) error
	Valid() bool
	Context() context.Context
	Lost() <-chan struct{}
}

func checkUnlockRefused(t *testing.T, e *env, quorum bool) {
	var (
		refs   []*refuser
		l      groupLease
		isHeld func() bool
	)
	if quorum {
		qs := newQuorumSet(t, e, nil)
		var clients []*locker.Client
		for _, s := range qs.scripters {
			r := &refuser{Scripter: s}
			refs = append(refs, r)
			clients = append(clients, e.clientOn(r, nil))
		}
		q, err := locker.NewQuorum(clients, "q", 10*time.Second, nil)
		require.NoError(t, err, "call: NewQuorum")
		ql, err := q.TryLock(e.ctx)
		e.setupDone(t, err, "call: quorum TryLock")
		if !e.eventually(t, func() bool { return len(ql.Parts()) == 3 }, 5*time.Second, "call: Parts() of the quorum lease: all three") {
			t.SkipNow()
		}
		l = ql
		isHeld = func() bool { // a majority: a part still on its way when Unlock decided is ended
			n := 0
			for i := range 3 {
				if qs.held(i, "q") {
					n++
				}
			}
			return n >= 2
		}
	} else {
		r := &refuser{Scripter: e.s}
		refs = append(refs, r)
		c := e.clientOn(r, nil)
		ml, err := e.multi(c, []string{"alpha", "bravo"}, 10*time.Second, nil).TryLock(e.ctx)
		require.NoError(t, err, "call: MultiLock TryLock")
		l = ml
		other := e.client(nil)
		isHeld = func() bool { return !e.mutexFree(other, "alpha") && !e.mutexFree(other, "bravo") }
	}
	ctx := l.Context()
	for _, r := range refs {
		r.on.Store(true)
	}
	err := l.Unlock(e.ctx)
	time.Sleep(200 * time.Millisecond) // Unlock returns at the first refusals: let the rest be refused too
	for _, r := range refs {
		r.on.Store(false)
	}
	require.Error(t, err, "call: Unlock refused by the server (NOPERM)")
	assert.True(t, l.Valid(), "call: Valid() after a refused Unlock")
	assert.NoError(t, ctx.Err(), "call: Context() after a refused Unlock: want not cancelled")
	assert.True(t, isHeld(), "call: every name (a majority of parts) still held after a refused Unlock")
	assert.ErrorIs(t, l.Unlock(nilCtx), locker.ErrNilContext, "call: Unlock(nil)")
	assert.NoError(t, ctx.Err(), "call: Context() after Unlock(nil): want not cancelled")
	require.NoError(t, l.Unlock(e.ctx), "call: Unlock once the server accepts it")
	assert.Error(t, ctx.Err(), "call: Context() after a successful Unlock: want cancelled")
}

func checkGroupsNoLeak(t *testing.T, e *env, quorum bool) {
	var qs *quorumSet
	if quorum {
		qs = newQuorumSet(t, e, nil)
	}
	round := 0
	take := func() []*locker.Client {
		round++ // the first round's leases are still held: other names
		if quorum {
			var clients []*locker.Client
			for _, s := range qs.scripters { // new Clients, the same drivers
				clients = append(clients, e.clientOn(s, nil))
			}
			for i, refresh := range []bool{true, false} {
				q, err := locker.NewQuorum(clients, fmt.Sprint("leak", round, i), 30*time.Second, &locker.QuorumOptions{AutoRefresh: refresh})
				require.NoError(t, err, "call: NewQuorum")
				l, err := q.TryLock(e.ctx)
				e.setupDone(t, err, "call: quorum TryLock")
				_, _ = l.Lost(), l.Context()
			}
			return clients
		}
		c := e.client(nil)
		for i, refresh := range []bool{true, false} {
			l, err := e.multi(c, []string{fmt.Sprint("leak-a", round, i), fmt.Sprint("leak-b", round, i)}, 30*time.Second, &locker.MultiLockOptions{AutoRefresh: refresh}).TryLock(e.ctx)
			require.NoError(t, err, "call: MultiLock TryLock")
			_, _ = l.Lost(), l.Context()
		}
		return []*locker.Client{c}
	}
	// Once, so that the driver's client has started its own goroutines.
	for _, c := range take() {
		require.NoError(t, c.Close(), "call: Close with leases held")
	}
	e.warmUp(e.s)
	e.awaitCoreIdle()
	before := goroutineIDs()
	for _, c := range take() {
		require.NoError(t, c.Close(), "call: Close with leases held")
	}
	assertNoNewCoreGoroutines(t, before)
}

func checkNilLeases(t *testing.T, e *env) {
	ctx := e.ctx
	closed := func(ch <-chan struct{}) bool {
		select {
		case <-ch:
			return true
		default:
			return false
		}
	}
	var l *locker.Lease
	assert.NoError(t, l.Unlock(ctx), "call: (*Lease)(nil).Unlock")
	assert.False(t, l.Valid(), "call: (*Lease)(nil).Valid")
	assert.ErrorIs(t, l.Extend(ctx, time.Second), locker.ErrExpired, "call: (*Lease)(nil).Extend")
	assert.True(t, closed(l.Lost()), "call: (*Lease)(nil).Lost")
	assert.Error(t, l.Context().Err(), "call: (*Lease)(nil).Context")

	var m *locker.MultiLease
	assert.NoError(t, m.Unlock(ctx), "call: (*MultiLease)(nil).Unlock")
	assert.False(t, m.Valid(), "call: (*MultiLease)(nil).Valid")
	assert.ErrorIs(t, m.Extend(ctx, time.Second), locker.ErrExpired, "call: (*MultiLease)(nil).Extend")
	_, err := m.TTL(ctx)
	assert.ErrorIs(t, err, locker.ErrExpired, "call: (*MultiLease)(nil).TTL")
	assert.ErrorIs(t, m.Err(), locker.ErrExpired, "call: (*MultiLease)(nil).Err")
	assert.True(t, closed(m.Lost()), "call: (*MultiLease)(nil).Lost")
	assert.Error(t, m.Context().Err(), "call: (*MultiLease)(nil).Context")
	assert.Zero(t, m.Fence(), "call: (*MultiLease)(nil).Fence")
	assert.Zero(t, m.ValidUntil(), "call: (*MultiLease)(nil).ValidUntil")
	assert.Empty(t, m.Parts(), "call: (*MultiLease)(nil).Parts")

	var q *locker.QuorumLease
	assert.NoError(t, q.Unlock(ctx), "call: (*QuorumLease)(nil).Unlock")
	assert.False(t, q.Valid(), "call: (*QuorumLease)(nil).Valid")
	assert.ErrorIs(t, q.Extend(ctx, time.Second), locker.ErrExpired, "call: (*QuorumLease)(nil).Extend")
	_, err = q.TTL(ctx)
	assert.ErrorIs(t, err, locker.ErrExpired, "call: (*QuorumLease)(nil).TTL")
	assert.ErrorIs(t, q.Err(), locker.ErrExpired, "call: (*QuorumLease)(nil).Err")
	assert.True(t, closed(q.Lost()), "call: (*QuorumLease)(nil).Lost")
	assert.Error(t, q.Context().Err(), "call: (*QuorumLease)(nil).Context")
	assert.Zero(t, q.Fence(), "call: (*QuorumLease)(nil).Fence")
	assert.Zero(t, q.ValidUntil(), "call: (*QuorumLease)(nil).ValidUntil")
	assert.Empty(t, q.Parts(), "call: (*QuorumLease)(nil).Parts")
	assert.Empty(t, q.Fences(), "call: (*QuorumLease)(nil).Fences")
	assert.Empty(t, e.keysLeft(), "call: keys after calls on nil leases")
}
