package locker_test

// The mutex and claim scripts on a real redis-server: the hash layout
// (one field per hold, named by the granting call's id), fences from the
// server clock, abandoned calls, the order rule of a single-hold owner's
// release, extend numbers, and claim markers. The behavioural rules for
// every driver, including every unknown outcome end to end, are in the
// conformance suite; these tests pin down what the scripts store and reply.

import (
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/scriptlock/scriptlock/locker"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// mutexKeys are the keys of the mutex name (as acquire.lua takes them) and
// its wake channel.
func (e *redisEnv) mutexKeys(c *locker.Client, name string) (keys []string, wake string) {
	k := c.Key(name)
	return []string{k, k + ":q", k + ":qx", k + ":x"}, k + ":wake"
}

// acquire runs acquire.lua for owner as call id; it returns {status, n}.
func (e *redisEnv) acquire(c *locker.Client, name, owner, id string, ttlMS int64, qttl int64, waiter string) []int64 {
	e.t.Helper()
	keys, wake := e.mutexKeys(c, name)
	return e.acquireInts(e.eval("acquire", keys, owner, id, ttlMS, qttl, waiter, wake))
}

// acquireInts returns acquire.lua's reply as {status, value}: the fast
// path's bare fence (above 0) is {1, fence}.
func (e *redisEnv) acquireInts(r any) []int64 {
	e.t.Helper()
	if f, ok := r.(int64); ok {
		require.Positive(e.t, f, "a bare acquire reply is a fence")
		return []int64{1, f}
	}
	return e.ints(r)
}

// holds returns the hold fields ("h:<call id>") of the mutex hash key.
func (e *redisEnv) holds(key string) []string {
	e.t.Helper()
	var out []string
	for f := range e.hash(key) {
		if strings.HasPrefix(f, "h:") {
			out = append(out, f)
		}
	}
	sort.Strings(out)
	return out
}

func TestRedisMutexLayout(t *testing.T) {
	e := newRedisEnv(t)
	c := e.client(nil)
	k := c.Key("doc")

	before := e.micros()
	l, err := newMutex(t, c, "doc", 10*time.Second, nil).TryLock(e.ctx)
	require.NoError(t, err)
	after := e.micros()
	f := strconv.FormatInt(l.Fence(), 10)
	assert.Equal(t, map[string]string{"owner": l.Token(), "fence": f, "h:" + l.Token(): f}, e.hash(k),
		"owner, fence and one hold named by the call id, its value the grant's order")
	assert.True(t, l.Fence() >= before && l.Fence() <= after, "a new grant's fence is the server clock in µs: %d not in [%d, %d]", l.Fence(), before, after)
	assert.InDelta(t, 10*time.Second, e.pttl(k), float64(time.Second))
	assert.Equal(t, []string{k}, e.keys(), "one key: no fence counter, no queue")

	require.NoError(t, l.Extend(e.ctx, 30*time.Second))
	require.NoError(t, l.Extend(e.ctx, 30*time.Second))
	assert.Equal(t, f+":2", e.hash(k)["h:"+l.Token()], "the hold keeps its order and the last extend number")
	assert.InDelta(t, 30*time.Second, e.pttl(k), float64(time.Second))
	require.NoError(t, l.Unlock(e.ctx))
	assert.Empty(t, e.keys(), "nothing left after the last Unlock")

	// Reentrant holds: one field each, one fence, the key until the last.
	re := newMutex(t, c, "doc", 10*time.Second, &locker.MutexOptions{Owner: "job", Reentrant: true})
	h1, err := re.TryLock(e.ctx)
	require.NoError(t, err)
	h2, err := re.Lock(e.ctx)
	require.NoError(t, err)
	assert.Equal(t, h1.Fence(), h2.Fence())
	assert.Greater(t, h1.Fence(), l.Fence(), "the next grant's fence is larger")
	fields := e.hash(k)
	assert.Len(t, fields, 4, "owner, fence and two holds: %v", fields)
	assert.Equal(t, "job", fields["owner"])
	require.Len(t, e.holds(k), 2)
	require.NoError(t, h1.Unlock(e.ctx))
	assert.Len(t, e.hash(k), 3, "one hold left")
	require.NoError(t, h2.Unlock(e.ctx))
	assert.Empty(t, e.keys())
}

func TestRedisAbandon(t *testing.T) {
	e := newRedisEnv(t)
	c := e.client(nil)
	keys, wake := e.mutexKeys(c, "a")
	k, x := keys[0], keys[3]
	abandon := func(owner, id string, ms int64) int64 {
		t.Helper()
		r := e.eval("abandon", []string{k, x}, owner, id, ms, wake, "")
		n, ok := r.(int64)
		require.True(t, ok, "abandon reply %#v", r)
		return n
	}
	w := e.subscribe(wake)

	// A call that granted nothing: nothing dropped, the call id listed in
	// server time, the list kept as long as the refusal.
	var n int64
	assert.Zero(t, w.published(func() { n = abandon("o1", "never-ran", 30_000) }), "nothing freed")
	assert.Zero(t, n)
	score, ok := e.zscore(x, "never-ran")
	require.True(t, ok, "never-ran listed")
	assert.InDelta(t, float64(e.micros()/1000+30_000), score, 2000, "listed until 30 s from now, in server ms")
	assert.InDelta(t, 30*time.Second, e.pttl(x), float64(2*time.Second))
	assert.Equal(t, []int64{0, 0}, e.acquire(c, "a", "o1", "never-ran", 10_000, 1000, "waiter-1"), "refused when it arrives")
	assert.Equal(t, []string{x}, e.keys(), "no hold, no queue entry")

	// The same owner's other holds stay: only the call's own is dropped.
	m := newMutex(t, c, "a", 10*time.Second, &locker.MutexOptions{Owner: "svc"})
	l1, err := m.TryLock(e.ctx)
	require.NoError(t, err)
	hold1 := e.holds(k)
	require.Len(t, hold1, 1)
	assert.Equal(t, []int64{1, l1.Fence()}, e.acquire(c, "a", "svc", "second", 60_000, 0, ""), "a later call of the same owner ran")
	assert.Zero(t, w.published(func() { n = abandon("svc", "second", 30_000) }))
	assert.Equal(t, int64(1), n, "its hold was dropped")
	assert.Equal(t, hold1, e.holds(k), "the earlier hold of the same owner stays")
	_, err = l1.TTL(e.ctx)
	require.NoError(t, err, "and its lease is usable")

	// Another owner's call drops nothing.
	assert.Zero(t, abandon("intruder", hold1[0][2:], 30_000))
	assert.Equal(t, hold1, e.holds(k))

	// Dropping the last hold frees the lock and wakes waiters.
	assert.Equal(t, 1, w.published(func() { n = abandon("svc", hold1[0][2:], 30_000) }))
	assert.Equal(t, int64(1), n)
	assert.Equal(t, []string{x}, e.keys())
	assert.ErrorIs(t, l1.Unlock(e.ctx), locker.ErrExpired)

	// Ids are refused only for their window: expired ones are trimmed, and
	// a short window never shortens the list's life.
	assert.Zero(t, abandon("o1", "brief", 1))
	time.Sleep(5 * time.Millisecond)
	assert.Zero(t, abandon("o1", "other", 30_000))
	_, listed := e.zscore(x, "brief")
	assert.False(t, listed, "an expired id is trimmed")
	assert.Greater(t, e.pttl(x), 20*time.Second)
	st := e.acquire(c, "a", "o1", "brief", 10_000, 0, "")
	assert.Equal(t, int64(1), st[0], "a call arriving after its window is served")
}

// TestRedisAbandonQueue checks that abandoning a FIFO call removes the
// queue entry it may have made.
func TestRedisAbandonQueue(t *testing.T) {
	e := newRedisEnv(t)
	c := e.client(nil)
	keys, wake := e.mutexKeys(c, "q")
	holder, err := newMutex(t, c, "q", 10*time.Second, nil).TryLock(e.ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(0), e.acquire(c, "q", "o", "call-1", 10_000, 1000, "w-1")[0], "refused and queued")
	assert.Equal(t, int64(0), e.acquire(c, "q", "p", "call-2", 10_000, 1000, "w-2")[0], "refused and queued")
	q := e.zrange(keys[1])
	assert.Equal(t, []string{"w-1", "w-2"}, q)

	assert.Zero(t, e.eval("abandon", []string{keys[0], keys[3], keys[1], keys[2]}, "o", "call-1", 30_000, wake, "w-1"))
	q = e.zrange(keys[1])
	assert.Equal(t, []string{"w-2"}, q, "the abandoned call's queue entry is gone")
	assert.NotContains(t, e.hash(keys[2]), "w-1")
	require.NoError(t, holder.Unlock(e.ctx))
	assert.Equal(t, int64(1), e.acquire(c, "q", "p", "call-3", 10_000, 1000, "w-2")[0], "the next waiter is first")
}

// TestRedisReleaseOrder checks release.lua's ARGV[3]: a single-hold owner's
// release drops its earlier holds too, never a later one; a reentrant
// owner's drops only its own.
func TestRedisReleaseOrder(t *testing.T) {
	e := newRedisEnv(t)
	c := e.client(nil)
	keys, wake := e.mutexKeys(c, "r")
	k := keys[0]
	for _, id := range []string{"A", "B", "C"} {
		require.Equal(t, int64(1), e.acquire(c, "r", "svc", id, 10_000, 0, "")[0])
	}
	release := func(id, single string) any { return e.eval("release", []string{k}, "svc", id, single, wake) }
	assert.Equal(t, int64(1), release("B", "0"), "reentrant: only B")
	assert.ElementsMatch(t, []string{"owner", "fence", "h:A", "h:C"}, mapKeys(e.hash(k)))
	require.Equal(t, int64(1), e.acquire(c, "r", "svc", "D", 10_000, 0, "")[0])
	assert.Equal(t, int64(1), release("C", "1"), "single: C and the holds granted before it")
	assert.ElementsMatch(t, []string{"owner", "fence", "h:D"}, mapKeys(e.hash(k)), "D, granted after C, stays")
	assert.Equal(t, int64(0), release("A", "1"), "a late release of a dropped hold")
	assert.Contains(t, e.hash(k), "h:D", "changes nothing")
	assert.Equal(t, int64(-1), e.eval("release", []string{k}, "other", "D", "1", wake), "another owner's release")
	assert.Equal(t, int64(1), release("D", "1"))
	assert.Empty(t, e.keys())
}

// TestRedisExtendNumbers checks extend.lua's ARGV[4]: an extend older than
// one already applied to the hold is refused (2) and changes nothing; the
// same number again (a re-sent call) is applied.
func TestRedisExtendNumbers(t *testing.T) {
	e := newRedisEnv(t)
	c := e.client(nil)
	k := c.Key("x")
	l, err := newMutex(t, c, "x", 10*time.Second, nil).TryLock(e.ctx)
	require.NoError(t, err)
	hold := "h:" + l.Token()
	extend := func(ttl, n int64) any { return e.eval("extend", []string{k}, l.Token(), l.Token(), ttl, n) }
	order := e.hash(k)[hold]

	assert.Equal(t, int64(1), extend(60_000, 5))
	assert.Equal(t, order+":5", e.hash(k)[hold])
	assert.Equal(t, int64(2), extend(1_000, 3), "an older extend arriving late is refused")
	assert.Greater(t, e.pttl(k), 50*time.Second, "and does not shorten the lock")
	assert.Equal(t, order+":5", e.hash(k)[hold])
	assert.Equal(t, int64(1), extend(60_000, 5), "the same extend re-sent")
	assert.Equal(t, int64(1), extend(2_000, 6), "a newer one may shorten it")
	assert.LessOrEqual(t, e.pttl(k), 2*time.Second)
	assert.Equal(t, int64(0), e.eval("extend", []string{k}, l.Token(), "gone", 1000, 7), "another hold of the owner")
	assert.Equal(t, int64(-1), e.eval("extend", []string{k}, "other", "other", 1000, 1), "another owner")

	// With several holds of one owner, no hold's extend shortens the lock.
	re := newMutex(t, c, "y", 60*time.Second, &locker.MutexOptions{Owner: "job", Reentrant: true})
	h1, err := re.TryLock(e.ctx)
	require.NoError(t, err)
	_, err = re.TryLock(e.ctx)
	require.NoError(t, err)
	require.NoError(t, h1.Extend(e.ctx, time.Second))
	assert.Greater(t, e.pttl(c.Key("y")), 50*time.Second)
}

// TestRedisClaimScripts checks claim.lua and unclaim.lua: the marker's
// token, a re-sent claim, and a clean-up that refuses the abandoned call
// but lets any other token claim.
func TestRedisClaimScripts(t *testing.T) {
	e := newRedisEnv(t)
	c := e.client(nil)
	k := c.Key("m") + ":claim"
	claim := func(tok string) any { return e.eval("claim", []string{k}, tok, 60_000) }
	unclaim := func(tok string) any { return e.eval("unclaim", []string{k}, tok, 30_000) }

	assert.Equal(t, int64(1), claim("a"))
	assert.Equal(t, "t:a", e.get(k))
	assert.InDelta(t, time.Minute, e.pttl(k), float64(2*time.Second))
	assert.Equal(t, int64(1), claim("a"), "a re-sent claim of the holder")
	assert.Equal(t, int64(0), claim("b"))
	assert.Equal(t, int64(0), unclaim("b"), "the clean-up of a call that lost leaves the winner")
	assert.Equal(t, "t:a", e.get(k))

	assert.Equal(t, int64(1), unclaim("a"), "the clean-up of the winning call drops its claim")
	assert.Equal(t, "x: a", e.get(k))
	assert.InDelta(t, 30*time.Second, e.pttl(k), float64(2*time.Second))
	assert.Equal(t, int64(0), claim("a"), "the abandoned call arriving late is refused")
	assert.Equal(t, int64(1), claim("c"), "any other token claims")
	assert.Equal(t, "t:c", e.get(k))
	assert.Equal(t, int64(0), claim("a"))

	k2 := c.Key("n") + ":claim"
	assert.Equal(t, int64(1), e.eval("unclaim", []string{k2}, "z", 30_000), "a call that never arrived")
	assert.Equal(t, "x: z", e.get(k2))
	assert.Equal(t, int64(0), e.eval("claim", []string{k2}, "z", 60_000))

	// Through the API: ClaimAs reports true again for the holding token.
	first, err := c.ClaimAs(e.ctx, "p", "tok", time.Minute)
	require.NoError(t, err)
	assert.True(t, first)
	first, err = c.ClaimAs(e.ctx, "p", "tok", time.Minute)
	require.NoError(t, err)
	assert.True(t, first, "the same token again")
	first, err = c.Claim(e.ctx, "p", time.Minute)
	require.NoError(t, err)
	assert.False(t, first)
}

// TestRedisUnclaimTwoAbandonedCalls: two Claim calls of one key whose
// outcome was unknown (say the same Client's Claim, retried with a new token
// after a timeout, timing out again) are both cleaned up; the first call
// then reaches Redis late (a client sends a queued command after its caller
// gave up). It must be refused, as the protocol promises for every
// abandoned call for 30 s. unclaim.lua keeps only the last abandoned
// token ('x:<token>'), so the first call is served: the key is claimed by
// a token nobody holds, and every later Claim reports false until the TTL
// ends (the message is never processed).
func TestRedisUnclaimTwoAbandonedCalls(t *testing.T) {
	e := newRedisEnv(t)
	c := e.client(nil)
	k := c.Key("m") + ":claim"
	assert.Equal(t, int64(1), e.eval("unclaim", []string{k}, "first", 30_000))
	assert.Equal(t, int64(1), e.eval("unclaim", []string{k}, "second", 30_000))
	late := e.eval("claim", []string{k}, "first", 60_000)
	assert.Equal(t, int64(0), late, "the first abandoned call arriving late")
	assert.Equal(t, int64(0), e.eval("claim", []string{k}, "second", 60_000), "the second abandoned call arriving late")
	first, err := c.Claim(e.ctx, "m", time.Minute)
	require.NoError(t, err)
	assert.True(t, first, "a new Claim wins the key")
}

// TestRedisWaitMark pins down the 'w' field: an uncontended grant and
// release publish nothing; a refused call marks the lock, and its release
// publishes one wake-up; a grant to a caller that waited keeps the mark
// for the waiters still behind it; the mark never counts as a hold.
func TestRedisWaitMark(t *testing.T) {
	e := newRedisEnv(t)
	c := e.client(nil)
	keys, wake := e.mutexKeys(c, "wm")
	w := e.subscribe(wake)
	release := func(owner, hold string) int64 {
		return e.eval("release", keys[:1], owner, hold, "0", wake).(int64)
	}

	assert.Equal(t, 0, w.published(func() {
		require.Equal(t, int64(1), e.acquire(c, "wm", "a", "a", 10_000, 0, "")[0])
		assert.NotContains(t, e.hash(keys[0]), "w", "an uncontended grant has no mark")
		require.Equal(t, int64(1), release("a", "a"))
	}), "an uncontended cycle publishes nothing")

	require.Equal(t, int64(1), e.acquire(c, "wm", "a", "a", 10_000, 0, "")[0])
	require.Equal(t, int64(0), e.acquire(c, "wm", "b", "b", 10_000, 0, "")[0], "b is refused")
	assert.Equal(t, "1", e.hash(keys[0])["w"], "a refused call marks the lock")
	// Extend still sees a single hold: it may shorten the TTL.
	require.Equal(t, int64(1), e.eval("extend", keys[:1], "a", "a", 3_000, 1).(int64))
	assert.LessOrEqual(t, e.pttl(keys[0]), 3*time.Second, "a single hold's extend sets the TTL, mark or not")
	assert.Equal(t, 1, w.published(func() { require.Equal(t, int64(1), release("a", "a")) }),
		"the release of a waited-for lock publishes one wake-up")
	assert.Empty(t, e.hash(keys[0]), "and frees it")

	// b, having waited, is granted through the fast path: the mark stays.
	r := e.acquireInts(e.eval("acquire", keys, "b", "b2", 10_000, 0, "", wake, "1"))
	require.Equal(t, int64(1), r[0])
	assert.Equal(t, "1", e.hash(keys[0])["w"], "a grant to a caller that waited keeps the lock marked")
	// abandon of the only hold frees the lock although the mark is there.
	assert.Equal(t, int64(1), e.eval("abandon", []string{keys[0], keys[3]}, "b", "b2", 30_000, wake, ""), "the abandoned call's hold is dropped")
	assert.Empty(t, e.hash(keys[0]), "the mark is not a hold: the lock is freed")
}

// TestRedisHandover pins down the direct FIFO hand-over: a FIFO lease's
// release gives the lock to the queue's first live waiter in the same
// script (owner, hold named by the waiter id, fresh fence, the waiter's
// TTL) and wakes only that waiter, on its own channel, with the fence as
// the payload; the waiter's next attempt finds the grant ({2, fence}); a
// waiter that gives up before learning of it has its hold dropped by
// dequeue.lua, which hands the lock on; crashed waiters are skipped.
func TestRedisHandover(t *testing.T) {
	e := newRedisEnv(t)
	c := e.client(nil)
	keys, wake := e.mutexKeys(c, "ho")
	common, toB := e.subscribe(wake), e.subscribe(wake+":w-b")
	require.Equal(t, int64(1), e.acquire(c, "ho", "a", "a", 10_000, 0, "")[0])
	require.Equal(t, int64(0), e.acquire(c, "ho", "", "b1", 8_000, 1_000, "w-b")[0], "b is queued")
	require.Equal(t, int64(0), e.acquire(c, "ho", "svc", "c1", 8_000, 1_000, "w-c")[0], "c is queued")
	assert.Regexp(t, `^\d+:8000:$`, e.hash(keys[2])["w-b"], "the queue entry: expiry, ttl, owner ('' for the waiter id)")

	before := e.micros()
	n := toB.published(func() {
		assert.Zero(t, common.published(func() {
			require.Equal(t, int64(1), e.eval("release", keys[:3], "a", "a", "", wake))
		}), "no wake-up for everyone")
	})
	assert.Equal(t, 1, n, "the head is woken on its own channel")
	h := e.hash(keys[0])
	assert.Equal(t, "w-b", h["owner"], "handed to b, whose owner is its waiter id")
	assert.Contains(t, h, "h:w-b", "one hold named by the waiter id")
	assert.Equal(t, "1", h["w"], "c still waits")
	assert.GreaterOrEqual(t, e.num(h["fence"]), before, "a fresh fence from the server clock")
	assert.Greater(t, e.pttl(keys[0]), 7*time.Second, "the lock lives b's TTL, as any grant (b may take it from the wake-up alone)")
	assert.Equal(t, []string{h["fence"] + ":w-b"}, toB.payloads, "b's wake-up carries the grant's fence and b's waiter id")
	assert.Empty(t, common.payloads, "no wake-up for everyone")
	q := e.zrange(keys[1])
	assert.Equal(t, []string{"w-c"}, q, "b left the queue")

	r := e.acquireInts(e.eval("acquire", keys, "", "b2", 8_000, 1_000, "w-b", wake, "1"))
	assert.Equal(t, []int64{2, e.num(h["fence"])}, r, "b's next attempt finds the hand-over")
	assert.Greater(t, e.pttl(keys[0]), 7*time.Second, "and the lock still lives b's TTL")

	// b releases: the lock goes to c, with c's owner.
	require.Equal(t, int64(1), e.eval("release", keys[:3], "w-b", "w-b", "", wake))
	assert.Equal(t, "svc", e.hash(keys[0])["owner"])
	// c gives up before learning: dequeue drops its hold and frees the lock.
	assert.Equal(t, int64(1), e.eval("dequeue", []string{keys[1], keys[2], keys[0]}, "w-c", wake))
	assert.Empty(t, e.hash(keys[0]), "c's handed-over hold is dropped: the lock is free")

	// A crashed head (its entry expired) is skipped.
	require.Equal(t, int64(1), e.acquire(c, "ho", "a", "a2", 10_000, 0, "")[0])
	require.Equal(t, int64(0), e.acquire(c, "ho", "", "d1", 8_000, 1_000, "w-d")[0])
	require.Equal(t, int64(0), e.acquire(c, "ho", "", "f1", 8_000, 1_000, "w-f")[0])
	e.do("HSET", keys[2], "w-d", "1:8000:") // expired long ago
	require.Equal(t, int64(1), e.eval("release", keys[:3], "a", "a2", "", wake))
	assert.Equal(t, "w-f", e.hash(keys[0])["owner"], "the crashed head is skipped")
	assert.NotContains(t, e.hash(keys[2]), "w-d", "and dropped")
}

// TestRedisStarvingHandOver pins down the starving waiters kept in the
// lock's 'w' mark: a refused call with ARGV[7] 2 is kept in the order the
// waiters starved (a refresh keeps its place), a waiter that does not
// starve yet is told the lock starves (reply 3), the release of the last
// hold hands the lock to the first one (its owner, whatever its bytes; its
// hold named by its waiter id) without freeing it, and the next release
// to the next one; the last one's release frees the lock.
func TestRedisStarvingHandOver(t *testing.T) {
	e := newRedisEnv(t)
	c := e.client(nil)
	keys, wake := e.mutexKeys(c, "sv")
	acq := func(owner, id, waiter, mode string) []int64 {
		return e.acquireInts(e.eval("acquire", keys, owner, id, 10_000, 1000, waiter, wake, mode))
	}
	const odd = "o:1:\x00{x}"
	require.Equal(t, int64(1), acq("", "h", "", "")[0])
	require.Equal(t, int64(0), acq(odd, "c1", "w1", "2")[0])
	require.Equal(t, int64(0), acq("", "c2", "w2", "2")[0])
	require.Equal(t, int64(0), acq(odd, "c3", "w1", "2")[0], "a refresh keeps w1 first")
	assert.Equal(t, int64(3), acq("", "c4", "", "1")[0], "a waiter that does not starve yet is told the lock starves")
	require.Equal(t, int64(1), e.eval("release", keys[:1], "h", "h", "", wake))
	h := e.hash(keys[0])
	assert.Equal(t, odd, h["owner"], "handed to the first starving waiter")
	assert.Contains(t, h, "h:w1")
	assert.Equal(t, int64(2), acq(odd, "c5", "w1", "2")[0], "w1 learns of its hand-over")
	require.Equal(t, int64(1), e.eval("release", keys[:1], odd, "w1", "", wake))
	assert.Equal(t, "w2", e.hash(keys[0])["owner"], "then to the next")
	require.Equal(t, int64(1), e.eval("release", keys[:1], "w2", "w2", "", wake))
	assert.Empty(t, e.hash(keys[0]), "the last starving waiter's release frees the lock")
}
