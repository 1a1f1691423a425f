package locker_test

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/scriptlock/scriptlock/locker"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func newSem(t testing.TB, c *locker.Client, name string, permits int, ttl time.Duration, opts *locker.SemaphoreOptions) *locker.Semaphore {
	t.Helper()
	s, err := c.NewSemaphore(name, permits, ttl, opts)
	require.NoError(t, err)
	return s
}

// TestSemaphoreRedisPermits checks counting, fences, expiry, SetPermits
// and that nothing is left once every hold is gone.
func TestSemaphoreRedisPermits(t *testing.T) {
	e := newRedisEnv(t)
	c := e.client(nil)
	s := newSem(t, c, "s", 3, 10*time.Second, nil)
	a, err := s.TryAcquire(e.ctx, 2)
	require.NoError(t, err)
	_, err = s.TryAcquire(e.ctx, 2)
	require.ErrorIs(t, err, locker.ErrNotObtained, "2 + 2 > 3")
	b, err := s.TryAcquire(e.ctx, 1)
	require.NoError(t, err)
	assert.Greater(t, b.Fence(), a.Fence(), "fences increase per name")
	_, err = s.TryAcquire(e.ctx, 1)
	require.ErrorIs(t, err, locker.ErrNotObtained, "all 3 held")
	require.NoError(t, a.Unlock(e.ctx))
	c2, err := s.TryAcquire(e.ctx, 2)
	require.NoError(t, err, "a's 2 permits are back")
	ttl, err := c2.TTL(e.ctx)
	require.NoError(t, err)
	assert.InDelta(t, 10*time.Second, ttl, float64(time.Second))
	require.NoError(t, c2.Extend(e.ctx, 20*time.Second))
	ttl, err = c2.TTL(e.ctx)
	require.NoError(t, err)
	assert.InDelta(t, 20*time.Second, ttl, float64(time.Second))

	_, err = s.TryAcquire(e.ctx, 4)
	require.ErrorIs(t, err, locker.ErrInvalidOption, "more than the permits")
	_, err = s.TryAcquire(e.ctx, 0)
	require.ErrorIs(t, err, locker.ErrInvalidOption)

	// SetPermits lowers the limit for everyone; holds above it are kept.
	require.NoError(t, s.SetPermits(e.ctx, 1))
	_, err = s.TryAcquire(e.ctx, 1)
	require.ErrorIs(t, err, locker.ErrNotObtained, "3 held, limit 1")
	require.NoError(t, b.Unlock(e.ctx))
	require.NoError(t, c2.Unlock(e.ctx))
	one, err := s.TryAcquire(e.ctx, 1)
	require.NoError(t, err)
	_, err = s.TryAcquire(e.ctx, 1)
	require.ErrorIs(t, err, locker.ErrNotObtained, "limit 1")
	_, err = s.TryAcquire(e.ctx, 2)
	require.ErrorIs(t, err, locker.ErrInvalidOption, "2 asked, limit 1 now")
	require.NoError(t, s.SetPermits(e.ctx, 0))
	two, err := s.TryAcquire(e.ctx, 2)
	require.NoError(t, err, "each client's own limit again")
	require.NoError(t, one.Unlock(e.ctx))
	require.NoError(t, two.Unlock(e.ctx))
	// SetPermits(0) left its undo record for the abandoned-call window.
	for _, k := range e.keys() {
		assert.True(t, e.pttl(k) > 0 && e.pttl(k) <= 30*time.Second, "once every hold is gone, %s expires within 30 s: PTTL %v", k, e.pttl(k))
	}

	// A holder that never releases gives its permits back after its TTL.
	short := newSem(t, c, "s", 3, 100*time.Millisecond, nil)
	_, err = short.TryAcquire(e.ctx, 3)
	require.NoError(t, err)
	_, err = s.TryAcquire(e.ctx, 1)
	require.ErrorIs(t, err, locker.ErrNotObtained)
	time.Sleep(150 * time.Millisecond)
	x, err := s.TryAcquire(e.ctx, 3)
	require.NoError(t, err, "the crashed holder's permits are back")
	require.NoError(t, x.Unlock(e.ctx))
	for _, k := range e.keys() {
		assert.True(t, e.pttl(k) > 0 && e.pttl(k) <= 30*time.Second, "%s expires within 30 s: PTTL %v", k, e.pttl(k))
	}
}

// permitsHook is a Scripter that applies fault to the sem_permits calls
// whose limit argument is limit, and passes every other call through.
type permitsHook struct {
	locker.Scripter
	limit string
	fault func(ctx context.Context, sha string, keys, args []string) (any, error)
}

func (p *permitsHook) EvalSha(ctx context.Context, sha string, keys, args []string) (any, error) {
	if locker.ScriptName(sha) == "sem_permits" && len(args) > 0 && args[0] == p.limit {
		return p.fault(ctx, sha, keys, args)
	}
	return p.Scripter.EvalSha(ctx, sha, keys, args)
}

// limitIs reports whether s grants exactly want permits at once (taking
// them one by one, and releasing them again).
func limitIs(t *testing.T, ctx context.Context, s *locker.Semaphore, want int) bool {
	t.Helper()
	var got []*locker.Lease
	defer func() {
		for _, l := range got {
			require.NoError(t, l.Unlock(ctx))
		}
	}()
	for range s.Permits() {
		l, err := s.TryAcquire(ctx, 1)
		if err != nil {
			require.ErrorIs(t, err, locker.ErrNotObtained)
			break
		}
		got = append(got, l)
	}
	return len(got) == want
}

// TestSemaphoreRedisSetPermitsUnknown checks the three fates of a
// SetPermits call whose outcome its caller cannot know: delivered after
// its clean-up (refused, -1), run with its reply lost (undone by the
// clean-up), and neither overriding a later SetPermits of the same Client;
// no key is left without expiry once no limit is stored.
func TestSemaphoreRedisSetPermitsUnknown(t *testing.T) {
	e := newRedisEnv(t)
	type held struct {
		sha        string
		keys, args []string
	}
	var late []held
	hook := &permitsHook{}
	c := e.client(func(s locker.Scripter) locker.Scripter { hook.Scripter = s; return hook })
	s := newSem(t, c, "p", 5, 30*time.Second, nil)
	probe := newSem(t, e.client(nil), "p", 5, 30*time.Second, nil)
	key := e.prefix + "{p}:sem"

	// Late: held back while its caller gives up; delivered after a later
	// SetPermits(2), it is refused.
	hook.limit = "5"
	hook.fault = func(ctx context.Context, sha string, keys, args []string) (any, error) {
		late = append(late, held{sha, keys, args})
		return nil, context.DeadlineExceeded
	}
	require.Error(t, s.SetPermits(e.ctx, 5))
	require.NotEmpty(t, late)
	for _, h := range late {
		assert.Equal(t, late[0].args, h.args, "every try of one SetPermits carries its call id")
	}
	require.NoError(t, s.SetPermits(e.ctx, 2), "waits for the clean-up, then stores 2")
	r, err := e.rdb.EvalSha(e.ctx, late[0].sha, late[0].keys, late[0].args)
	require.NoError(t, err)
	assert.Equal(t, int64(-1), r, "the late call is refused: it was abandoned")
	assert.True(t, limitIs(t, e.ctx, probe, 2), "the limit stays 2")

	// Lost: it ran (the limit was 7 for a while) and its reply was lost
	// on every try; its clean-up undoes it.
	hook.limit = "7"
	hook.fault = func(ctx context.Context, sha string, keys, args []string) (any, error) {
		if _, err := hook.Scripter.EvalSha(ctx, sha, keys, args); err != nil {
			return nil, err
		}
		return nil, io.ErrUnexpectedEOF
	}
	require.Error(t, s.SetPermits(e.ctx, 7))
	require.Eventually(t, func() bool { return e.hash(key)["n"] == "2" }, 5*time.Second, time.Millisecond,
		"the clean-up restores the limit 2: got %q", e.hash(key)["n"])
	assert.True(t, limitIs(t, e.ctx, probe, 2), "the limit is 2 again")

	// Late after a clear: the clean-up refuses it, and the keys expire.
	require.NoError(t, s.SetPermits(e.ctx, 0))
	hook.limit = "3"
	late = nil
	hook.fault = func(ctx context.Context, sha string, keys, args []string) (any, error) {
		late = append(late, held{sha, keys, args})
		return nil, context.DeadlineExceeded
	}
	require.Error(t, s.SetPermits(e.ctx, 3))
	require.NoError(t, s.SetPermits(e.ctx, 0), "waits for the clean-up")
	r, err = e.rdb.EvalSha(e.ctx, late[0].sha, late[0].keys, late[0].args)
	require.NoError(t, err)
	assert.Equal(t, int64(-1), r, "the late call is refused")
	assert.True(t, limitIs(t, e.ctx, probe, 5), "each client's own limit (5)")
	_, stored := e.hash(key)["n"]
	assert.False(t, stored, "no limit stored")

	// Lost on a semaphore with no limit and nothing held: undone, so the
	// keys expire.
	hook.limit = "4"
	hook.fault = func(ctx context.Context, sha string, keys, args []string) (any, error) {
		if _, err := hook.Scripter.EvalSha(ctx, sha, keys, args); err != nil {
			return nil, err
		}
		return nil, io.ErrUnexpectedEOF
	}
	require.Error(t, s.SetPermits(e.ctx, 4))
	require.NoError(t, c.Close(), "Close waits for the clean-up")
	_, stored = e.hash(key)["n"]
	assert.False(t, stored, "the lost SetPermits(4) is undone")
	for _, k := range e.keys() {
		assert.True(t, e.pttl(k) > 0 && e.pttl(k) <= 30*time.Second, "%s expires within 30 s: PTTL %v", k, e.pttl(k))
	}
}

// TestSemaphoreRedisFIFO checks that a large request is not overtaken:
// while it waits at the head, a later request for one free permit is
// refused, and the release of the held permit grants the large one.
func TestSemaphoreRedisFIFO(t *testing.T) {
	e := newRedisEnv(t)
	c := e.client(nil)
	s := newSem(t, c, "f", 2, 10*time.Second, &locker.SemaphoreOptions{FIFO: true})
	held, err := s.TryAcquire(e.ctx, 1)
	require.NoError(t, err)
	got := make(chan *locker.Lease, 1)
	go func() {
		l, err := s.Acquire(e.ctx, 2)
		assert.NoError(t, err)
		got <- l
	}()
	require.Eventually(t, func() bool {
		l, err := s.TryAcquire(e.ctx, 1)
		if err == nil {
			require.NoError(t, l.Unlock(e.ctx)) // not queued yet
		}
		return err != nil
	}, 5*time.Second, 5*time.Millisecond, "a later TryAcquire(1) is refused while the request for 2 is queued")
	_, err = s.TryAcquire(e.ctx, 1)
	require.ErrorIs(t, err, locker.ErrNotObtained)
	start := time.Now()
	require.NoError(t, held.Unlock(e.ctx))
	big := <-got
	require.NotNil(t, big)
	assert.Less(t, time.Since(start), 2*time.Second, "woken by the release, not by polling")
	require.NoError(t, big.Unlock(e.ctx))
	// A waiter that gives up leaves the queue.
	h2, err := s.TryAcquire(e.ctx, 2)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(e.ctx, 100*time.Millisecond)
	_, err = s.Acquire(ctx, 1)
	cancel()
	require.ErrorIs(t, err, locker.ErrNotObtained)
	require.NoError(t, h2.Unlock(e.ctx))
	require.NoError(t, c.Close(), "wait for the dequeue")
	// The Acquire's context may have ended during a call, whose id is then
	// refused for 30 s (an 'x:' field): no hold and no queue entry is left.
	for k := range e.hash(c.Key("f") + ":sem") {
		assert.False(t, strings.HasPrefix(k, "h:") || strings.HasPrefix(k, "q:"), "field %q left: nothing may be queued or held", k)
	}
	q := e.strs(e.do("ZRANGE", c.Key("f")+":semz", "-inf", "(0", "BYSCORE"))
	assert.Empty(t, q, "nobody queued")
}

// TestSemaphoreRedisAutoRefresh checks that an auto-refreshed semaphore
// lease outlives its TTL, and that its refreshes keep the permit taken.
func TestSemaphoreRedisAutoRefresh(t *testing.T) {
	e := newRedisEnv(t)
	c := e.client(nil)
	s := newSem(t, c, "r", 1, 200*time.Millisecond, &locker.SemaphoreOptions{AutoRefresh: true})
	l, err := s.TryAcquire(e.ctx, 1)
	require.NoError(t, err)
	time.Sleep(700 * time.Millisecond)
	assert.True(t, l.Valid(), "refreshed past its TTL")
	assert.NoError(t, l.Err())
	_, err = s.TryAcquire(e.ctx, 1)
	require.ErrorIs(t, err, locker.ErrNotObtained, "the permit is still taken")
	require.NoError(t, l.Unlock(e.ctx))
	assert.Empty(t, e.keys())
}

// TestSemaphoreRedisWakes pins down the waiters' bookkeeping in the
// scripts: a release wakes the oldest waiter that fits on its own channel
// and promises it the permits ('k'), one wake-up per freed permit; a woken
// waiter that tries and is refused (a barger took the permit) gives the
// promise back and hands the wake-up on when permits are free; a waiter
// that leaves hands it on too; 'c' counts the waiters.
func TestSemaphoreRedisWakes(t *testing.T) {
	e := newRedisEnv(t)
	keys := []string{e.prefix + "{w}:sem", e.prefix + "{w}:semz"}
	wake := e.prefix + "{w}:wake"
	acq := func(id string, n int, waiter string) []int64 {
		args := []any{id, "10000", strconv.Itoa(n), "3", wake}
		if waiter != "" {
			args = append(args, waiter, "5000") // never starves
		}
		return e.ints(e.eval("sem_acquire", keys, args...))
	}
	for i := range 3 {
		require.Equal(t, int64(1), acq(fmt.Sprint("h", i), 1, "")[0])
	}
	ws := []string{"a", "b", "c"}
	chans := map[string]*wakeCounter{}
	for _, w := range ws {
		require.Equal(t, int64(0), acq("try-"+w, 1, w)[0], "%s is refused and listed", w)
		chans[w] = e.subscribe(wake + ":" + w)
	}
	assert.Equal(t, "3", e.hash(keys[0])["c"], "three waiters")
	assert.NotContains(t, e.hash(keys[0]), "k", "nothing promised")

	// One release of one permit wakes a (the oldest), and only a.
	n := chans["a"].published(func() {
		e.eval("sem_release", keys, "h0", "h:h0", "", wake)
	})
	assert.Equal(t, 1, n, "a woken once")
	for _, w := range ws[1:] {
		assert.Zero(t, chans[w].published(func() {}), "%s not woken", w)
	}
	assert.Equal(t, "1", e.hash(keys[0])["k"], "one permit promised to a")

	// A barger takes the permit; a's try is refused: the promise is given
	// back, and with no permit free nobody is woken.
	require.Equal(t, int64(1), acq("barger", 1, "")[0], "barging is allowed")
	for _, w := range ws {
		assert.Zero(t, chans[w].published(func() {
			if w == "a" {
				require.Equal(t, int64(0), acq("try2-a", 1, "a")[0])
			}
		}), "nobody woken by a's refused try")
	}
	assert.NotContains(t, e.hash(keys[0]), "k", "a's promise given back")

	// The next release wakes a again; a leaves instead of trying (its
	// context ended): the wake-up passes to b.
	assert.Equal(t, 1, chans["a"].published(func() {
		e.eval("sem_release", keys, "h1", "h:h1", "", wake)
	}))
	assert.Equal(t, 1, chans["b"].published(func() {
		e.eval("sem_cancel", keys, "", "", "0", "a", wake)
	}), "a's leaving hands its wake-up to b")
	assert.Zero(t, chans["c"].published(func() {}))
	h := e.hash(keys[0])
	assert.Equal(t, "1", h["k"], "one permit promised, to b")
	assert.Equal(t, "2", h["c"], "b and c wait")

	// b is granted; c's try is refused (no permit free) and c leaves.
	require.Equal(t, int64(1), acq("try2-b", 1, "b")[0])
	require.Equal(t, int64(0), acq("try2-c", 1, "c")[0])
	e.eval("sem_cancel", keys, "", "", "0", "c", wake)
	h = e.hash(keys[0])
	assert.NotContains(t, h, "k")
	assert.NotContains(t, h, "c", "nobody waits")
}
