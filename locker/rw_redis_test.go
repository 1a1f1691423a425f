package locker_test

// The rw_*.lua scripts on a real redis-server: hash layout, key expiry,
// purging, fences, abandoned calls, re-sent calls, owners and wake-up
// messages. The behavioural rules for every driver are in the conformance
// suite.

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/scriptlock/scriptlock/locker"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func mapKeys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// holdFields returns the hold, intent and abandoned-call fields of the
// read-write hash (not 'f', the 'o' index or the 'c:' read counts).
func (e *redisEnv) holdFields(key string) map[string]string {
	e.t.Helper()
	m := e.hash(key)
	for k := range m {
		if len(k) < 2 || k[1] != ':' || k[0] == 'c' {
			delete(m, k)
		}
	}
	return m
}

func TestRWRedisLayout(t *testing.T) {
	e := newRedisEnv(t)
	c := e.client(nil)
	key := c.Key("doc") + ":rw"
	rw := newRW(t, c, "doc", 10*time.Second, nil)

	before := e.micros()
	a, err := rw.TryRLock(e.ctx)
	require.NoError(t, err)
	b, err := rw.TryRLock(e.ctx)
	require.NoError(t, err)
	after := e.micros()
	h := e.hash(key)
	f := e.num(h["f"])
	assert.True(t, f >= before && f <= after, "no write grant yet: 'f' is the server clock in µs at the first read (%d not in [%d, %d])", f, before, after)
	assert.Equal(t, f, a.Fence(), "a read lease's fence is 'f'")
	assert.Equal(t, f, b.Fence())
	fields := e.holdFields(key)
	require.Len(t, fields, 2)
	now := e.micros() / 1000
	for _, l := range []*locker.Lease{a, b} {
		v, ok := fields["r:"+l.Token()]
		require.True(t, ok, "a field per reader, named by its call id: %v", fields)
		exp, order, n, owner := e.splitField(v)
		assert.Equal(t, l.Token(), owner)
		assert.Zero(t, n, "not extended yet")
		assert.True(t, order >= before && order <= after, "the grant's order is the server clock in µs")
		assert.True(t, exp-now > 9000 && exp-now <= 10000, "absolute expiry in server time: %d ms left", exp-now)
	}
	assert.InDelta(t, 10*time.Second, e.pttl(key), float64(time.Second))

	// The key lives as long as its latest live field.
	require.NoError(t, a.Extend(e.ctx, 30*time.Second))
	_, _, n, _ := e.splitField(e.hash(key)["r:"+a.Token()])
	assert.Equal(t, int64(1), n, "the last extend number")
	assert.InDelta(t, 30*time.Second, e.pttl(key), float64(time.Second))
	require.NoError(t, a.Unlock(e.ctx))
	assert.InDelta(t, 10*time.Second, e.pttl(key), float64(time.Second), "a's Unlock leaves b's expiry")
	ttl, err := b.TTL(e.ctx)
	require.NoError(t, err)
	assert.InDelta(t, 10*time.Second, ttl, float64(time.Second), "TTL is the hold's own")

	// A waiting writer's intent is a field of its own; it is dropped on grant.
	got := make(chan *locker.Lease, 1)
	go func() {
		w, err := rw.Lock(e.ctx)
		assert.NoError(t, err)
		got <- w
	}()
	require.Eventually(t, func() bool {
		for k, v := range e.hash(key) {
			if strings.HasPrefix(k, "i:") {
				exp, _, _, owner := e.splitField(v)
				return owner == "" && exp > 0
			}
		}
		return false
	}, 5*time.Second, time.Millisecond, "the waiting writer's intent")
	_, err = rw.TryRLock(e.ctx)
	assert.ErrorIs(t, err, locker.ErrNotObtained, "a new reader while a writer waits")
	require.NoError(t, b.Unlock(e.ctx))
	w := <-got
	require.NotNil(t, w)
	assert.Equal(t, []string{"w:" + w.Token()}, mapKeys(e.holdFields(key)), "only the writer's hold")
	assert.Equal(t, strconv.FormatInt(w.Fence(), 10), e.hash(key)["f"], "'f' is the last write fence")
	assert.Greater(t, w.Fence(), f, "a write grant's fence is above the last one")
	assert.ElementsMatch(t, []string{key, key + "r"}, e.keys(), "the hash and its read expiries (kept while the hash lives): no fence counter")

	require.NoError(t, w.Unlock(e.ctx))
	assert.Empty(t, e.keys(), "the hash is deleted with its last hold")
}

// TestRWRedisAbandoned checks what rw_cancel.lua leaves after an acquire
// whose outcome is unknown: an 'x:' field refusing the call for 30 s, which
// keeps the key alive that long and nothing else.
func TestRWRedisAbandoned(t *testing.T) {
	e := newRedisEnv(t)
	d := &dropper{}
	c := e.client(func(s locker.Scripter) locker.Scripter { d.Scripter = s; return d })
	key := c.Key("ab") + ":rw"
	rw := newRW(t, c, "ab", 10*time.Second, nil)
	d.arm("rw_rlock")
	_, err := rw.TryRLock(e.ctx)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	d.arm("")
	call := d.dropped()
	require.Equal(t, "rw_rlock", call.name)
	require.NoError(t, c.Close(), "wait for the clean-up")

	h := e.hash(key)
	require.Contains(t, h, "x:"+call.args[1], "the abandoned call's hold field is refused: %v", h)
	exp, _, _, owner := e.splitField(h["x:"+call.args[1]])
	assert.Empty(t, owner)
	assert.InDelta(t, float64(e.micros()/1000+30_000), float64(exp), 2000)
	assert.InDelta(t, 30*time.Second, e.pttl(key), float64(2*time.Second), "the key lives while the call is refused")
	assert.Equal(t, []int64{0, 0}, e.ints(e.eval(call.name, call.keys, anys(call.args)...)), "the call arriving late is refused")
	assert.NotContains(t, e.hash(key), call.args[1], "and holds nothing")

	// The refusal does not hold back anyone else.
	c2 := e.client(nil)
	w, err := newRW(t, c2, "ab", 10*time.Second, nil).TryLock(e.ctx)
	require.NoError(t, err)
	require.NoError(t, w.Unlock(e.ctx))
}

func TestRWRedisPurge(t *testing.T) {
	e := newRedisEnv(t)
	c := e.client(nil)
	key := c.Key("p") + ":rw"
	short, err := newRW(t, c, "p", 30*time.Millisecond, nil).TryRLock(e.ctx)
	require.NoError(t, err)
	long, err := newRW(t, c, "p", 10*time.Second, nil).TryRLock(e.ctx)
	require.NoError(t, err)
	time.Sleep(60 * time.Millisecond)
	assert.Len(t, e.holdFields(key), 2, "the expired field stays until a script reads the hash")
	_, err = long.TTL(e.ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"r:" + long.Token()}, mapKeys(e.holdFields(key)), "any script purges expired fields")
	assert.ErrorIs(t, short.Unlock(e.ctx), locker.ErrExpired)
	require.NoError(t, long.Unlock(e.ctx))
}

func TestRWRedisResent(t *testing.T) {
	e := newRedisEnv(t)
	rs := &resender{}
	c := e.client(func(s locker.Scripter) locker.Scripter { rs.Scripter = s; return rs })
	key := c.Key("re") + ":rw"
	rw := newRW(t, c, "re", 10*time.Second, nil)
	rs.dup.Store(true)

	w, err := rw.TryLock(e.ctx)
	require.NoError(t, err, "a re-sent write acquire succeeds")
	assert.Equal(t, strconv.FormatInt(w.Fence(), 10), e.hash(key)["f"], "a re-sent write acquire takes one fence")
	assert.Len(t, e.holdFields(key), 1)

	r, err := rw.Downgrade(e.ctx, w)
	require.NoError(t, err, "a re-sent downgrade succeeds")
	assert.Equal(t, w.Fence(), r.Fence())
	r2, err := rw.RLock(e.ctx)
	require.NoError(t, err, "a re-sent read acquire succeeds")
	assert.Equal(t, w.Fence(), r2.Fence())
	assert.Len(t, e.holdFields(key), 2, "one hold per re-sent acquire")

	rs.dup.Store(false)
	require.NoError(t, r.Unlock(e.ctx))
	rs.dup.Store(true)
	assert.ErrorIs(t, r2.Unlock(e.ctx), locker.ErrExpired, "a re-sent release of the last hold reports ErrExpired; the hold is gone either way")
	assert.Empty(t, e.keys())

	// Reentrant holds of one owner are counted even when re-sent.
	re := newRW(t, c, "re", 10*time.Second, &locker.RWMutexOptions{Owner: "job", Reentrant: true})
	h1, err := re.Lock(e.ctx)
	require.NoError(t, err)
	h2, err := re.Lock(e.ctx)
	require.NoError(t, err)
	assert.Equal(t, h1.Fence(), h2.Fence())
	assert.Greater(t, h1.Fence(), w.Fence(), "the next write grant takes a larger fence")
	assert.Len(t, e.holdFields(key), 2)
	rs.dup.Store(false)
	require.NoError(t, h1.Unlock(e.ctx))
	_, err = newRW(t, c, "re", time.Second, nil).TryRLock(e.ctx)
	assert.ErrorIs(t, err, locker.ErrNotObtained, "one of two write holds left")
	require.NoError(t, h2.Unlock(e.ctx))
}

// TestRWRedisFences checks fences across a Mutex and an RWMutex of one
// name and across the hash's deletion: they rest on the server clock.
func TestRWRedisFences(t *testing.T) {
	e := newRedisEnv(t)
	c := e.client(nil)
	m := newMutex(t, c, "shared", 10*time.Second, nil)
	rw := newRW(t, c, "shared", 10*time.Second, nil)
	var last int64
	for i := range 3 {
		ml, err := m.TryLock(e.ctx)
		require.NoError(t, err)
		w, err := rw.TryLock(e.ctx)
		require.NoError(t, err, "a Mutex and an RWMutex of one name are different locks")
		assert.Greater(t, ml.Fence(), last, "grant %d", i)
		assert.Greater(t, w.Fence(), ml.Fence(), "grant %d", i)
		last = w.Fence()
		require.NoError(t, ml.Unlock(e.ctx))
		require.NoError(t, w.Unlock(e.ctx))
	}
	assert.Empty(t, e.keys(), "the hash is gone, 'f' with it")
	r, err := rw.TryRLock(e.ctx)
	require.NoError(t, err)
	assert.Greater(t, r.Fence(), last, "a read after the hash was deleted reports the server clock, above every earlier grant")
	assert.Equal(t, strconv.FormatInt(r.Fence(), 10), e.hash(c.Key("shared") + ":rw")["f"], "and keeps it as 'f'")
	r2, err := rw.TryRLock(e.ctx)
	require.NoError(t, err)
	assert.Equal(t, r.Fence(), r2.Fence(), "later reads report it too")
	require.NoError(t, r.Unlock(e.ctx))
	require.NoError(t, r2.Unlock(e.ctx))
}

// TestRWRedisOwners checks holds per owner: a caller-chosen Owner's holds
// are per call, its Unlock drops its earlier holds of the same kind; a
// reentrant owner's are counted; the writer's owner may read, nobody
// upgrades, and an owner already reading may add holds while a writer
// waits.
func TestRWRedisOwners(t *testing.T) {
	e := newRedisEnv(t)
	c := e.client(nil)
	key := c.Key("o") + ":rw"

	fixed := newRW(t, c, "o", 10*time.Second, &locker.RWMutexOptions{Owner: "svc"})
	a, err := fixed.TryRLock(e.ctx)
	require.NoError(t, err)
	b, err := fixed.TryRLock(e.ctx)
	require.NoError(t, err)
	assert.Equal(t, "svc", a.Token())
	assert.Len(t, e.holdFields(key), 2, "a hold per call")
	require.NoError(t, b.Unlock(e.ctx))
	assert.Empty(t, e.keys(), "the later hold's Unlock drops the earlier one too")
	assert.ErrorIs(t, a.Unlock(e.ctx), locker.ErrExpired)

	b, err = fixed.TryRLock(e.ctx)
	require.NoError(t, err)
	a2, err := newRW(t, c, "o", 10*time.Second, &locker.RWMutexOptions{Owner: "svc"}).TryRLock(e.ctx)
	require.NoError(t, err)
	require.NoError(t, b.Unlock(e.ctx))
	_, err = a2.TTL(e.ctx)
	require.NoError(t, err, "an Unlock never drops a hold granted after its own")
	require.NoError(t, a2.Unlock(e.ctx))

	re := newRW(t, c, "o", 10*time.Second, &locker.RWMutexOptions{Owner: "job", Reentrant: true})
	var holds []*locker.Lease
	for range 3 {
		l, err := re.RLock(e.ctx)
		require.NoError(t, err)
		holds = append(holds, l)
	}
	assert.Len(t, e.holdFields(key), 3)
	for i, l := range holds {
		require.NoError(t, l.Unlock(e.ctx))
		assert.Len(t, e.holdFields(key), 2-i)
	}

	// The owner of the write lock may take read holds and more write holds.
	w1, err := re.Lock(e.ctx)
	require.NoError(t, err)
	w2, err := re.TryLock(e.ctx)
	require.NoError(t, err)
	assert.Equal(t, w1.Fence(), w2.Fence(), "a reentrant write hold shares the grant's fence")
	r, err := re.TryRLock(e.ctx)
	require.NoError(t, err)
	assert.Equal(t, w1.Fence(), r.Fence())
	_, err = newRW(t, c, "o", time.Second, nil).TryRLock(e.ctx)
	assert.ErrorIs(t, err, locker.ErrNotObtained, "another owner cannot read while job writes")
	require.NoError(t, w1.Unlock(e.ctx))
	require.NoError(t, w2.Unlock(e.ctx))
	_, err = re.TryLock(e.ctx)
	assert.ErrorIs(t, err, locker.ErrNotObtained, "no upgrade while the owner reads")

	// A writer waits: a new reader is refused, the owner already inside is not.
	wc := e.client(nil)
	got := make(chan error, 1)
	wctx, cancel := context.WithCancel(e.ctx)
	defer cancel()
	go func() {
		w, err := newRW(t, wc, "o", 10*time.Second, nil).Lock(wctx)
		if err == nil {
			err = w.Unlock(e.ctx)
		}
		got <- err
	}()
	require.Eventually(t, func() bool {
		for k := range e.hash(key) {
			if strings.HasPrefix(k, "i:") {
				return true
			}
		}
		return false
	}, 5*time.Second, time.Millisecond, "the writer's intent")
	_, err = newRW(t, c, "o", 10*time.Second, nil).TryRLock(e.ctx)
	assert.ErrorIs(t, err, locker.ErrNotObtained, "a new reader while a writer waits")
	r2, err := re.TryRLock(e.ctx)
	require.NoError(t, err, "a reader already inside may add holds while a writer waits")
	require.NoError(t, r2.Unlock(e.ctx))
	require.NoError(t, r.Unlock(e.ctx))
	require.NoError(t, <-got, "the writer gets the lock once the reader left")
}

func TestRWRedisWake(t *testing.T) {
	e := newRedisEnv(t)
	c := e.client(nil)
	w := e.subscribe(c.Key("wk") + ":wake")
	published := w.published
	var err error
	rw := newRW(t, c, "wk", 10*time.Second, nil)
	var r1, r2, wl, d *locker.Lease
	assert.Zero(t, published(func() { r1, err = rw.TryRLock(e.ctx); require.NoError(t, err) }), "first reader")
	assert.Zero(t, published(func() { r2, err = rw.TryRLock(e.ctx); require.NoError(t, err) }), "second reader")
	assert.Zero(t, published(func() { _, err = rw.TryLock(e.ctx); require.ErrorIs(t, err, locker.ErrNotObtained) }), "refused writer")
	assert.Zero(t, published(func() { require.NoError(t, r1.Unlock(e.ctx)) }), "a reader leaves, one stays")
	assert.Equal(t, 1, published(func() {
		wc := e.client(nil)
		wctx, cancel := context.WithTimeout(e.ctx, 30*time.Millisecond)
		defer cancel()
		_, err = newRW(t, wc, "wk", 10*time.Second, nil).Lock(wctx)
		require.ErrorIs(t, err, locker.ErrNotObtained)
		require.NoError(t, wc.Close(), "waits for the intent's clean-up")
	}), "a writer gives up: its intent, the last, is dropped")
	assert.Equal(t, 1, published(func() { require.NoError(t, r2.Unlock(e.ctx)) }), "the last reader leaves")
	assert.Zero(t, published(func() { wl, err = rw.TryLock(e.ctx); require.NoError(t, err) }), "writer in")
	assert.Equal(t, 1, published(func() { d, err = rw.Downgrade(e.ctx, wl); require.NoError(t, err) }), "downgrade")
	assert.Equal(t, 1, published(func() { require.NoError(t, d.Unlock(e.ctx)) }), "the downgraded reader leaves")
	assert.Zero(t, published(func() { wl, err = rw.TryLock(e.ctx); require.NoError(t, err) }), "writer in")
	assert.Equal(t, 1, published(func() { require.NoError(t, wl.Unlock(e.ctx)) }), "writer leaves")

	// A writer whose hold expired while the key lives on (its owner also
	// reads) is purged by the next script, which wakes waiting readers.
	wShort := newRW(t, c, "wk", 20*time.Millisecond, &locker.RWMutexOptions{Owner: "x"})
	rLong := newRW(t, c, "wk", 10*time.Second, &locker.RWMutexOptions{Owner: "x"})
	assert.Zero(t, published(func() { _, err = wShort.TryLock(e.ctx); require.NoError(t, err) }), "short writer in")
	assert.Zero(t, published(func() { d, err = rLong.TryRLock(e.ctx); require.NoError(t, err) }), "the writer's owner reads too")
	time.Sleep(40 * time.Millisecond)
	assert.Equal(t, 1, published(func() { r1, err = rw.TryRLock(e.ctx); require.NoError(t, err) }), "purging the expired writer")
	require.NoError(t, r1.Unlock(e.ctx))
	assert.Equal(t, 1, published(func() { require.NoError(t, d.Unlock(e.ctx)) }), "the last reader leaves")
}

// TestRWRedisDowngradeHandOver: a caller-chosen Owner that is not
// reentrant took the write lock twice (a hand-over, or a take-over after a
// restart); the later lease's Unlock frees the lock, earlier holds
// included. Its Downgrade counts as the write lease's release too, so it
// must leave only the new read hold: other readers may join, and once the
// read lease is unlocked the lock is free. rw_downgrade.lua drops only the
// downgraded write hold, so the earlier write hold of the same owner stays:
// other readers are refused, and after the read lease's Unlock the lock is
// still write-held until that hold's TTL runs out.
func TestRWRedisDowngradeHandOver(t *testing.T) {
	e := newRedisEnv(t)
	c := e.client(nil)
	rw := newRW(t, c, "h", 10*time.Second, &locker.RWMutexOptions{Owner: "svc"})
	_, err := rw.TryLock(e.ctx)
	require.NoError(t, err)
	w2, err := rw.TryLock(e.ctx)
	require.NoError(t, err, "a hand-over to the same Owner")
	d, err := rw.Downgrade(e.ctx, w2)
	require.NoError(t, err)
	other := newRW(t, c, "h", time.Second, nil)
	r, err := other.TryRLock(e.ctx)
	require.NoError(t, err, "another reader's TryRLock after the hand-over's Downgrade: the earlier write hold must be gone (hash: %v)", mapKeys(e.holdFields(c.Key("h")+":rw")))
	require.NoError(t, r.Unlock(e.ctx))
	require.NoError(t, d.Unlock(e.ctx))
	w, err := other.TryLock(e.ctx)
	require.NoError(t, err, "free once the read lease is unlocked")
	require.NoError(t, w.Unlock(e.ctx))
}

// TestRWRedisManyReaders checks the read expiries index with more readers
// than one purge batch (500): the set scores every read hold, the 'c:'
// counts follow the owners, a writer is refused while they live and granted
// once they have expired (the purge deletes them all, counts included), and
// its Unlock leaves no key.
func TestRWRedisManyReaders(t *testing.T) {
	e := newRedisEnv(t)
	c := e.client(nil)
	key := c.Key("many") + ":rw"
	const n = 600
	// The holds must outlive their 600 grants, which a loaded machine
	// under -race takes past 400 ms to make.
	const ttl = 2 * time.Second
	rw := newRW(t, c, "many", ttl, nil)
	shared := newRW(t, c, "many", ttl, &locker.RWMutexOptions{Owner: "shared", Reentrant: true})
	for range n - 2 {
		_, err := rw.TryRLock(e.ctx)
		require.NoError(t, err)
	}
	for range 2 {
		_, err := shared.TryRLock(e.ctx)
		require.NoError(t, err)
	}
	z := e.do("ZCARD", key+"r")
	assert.EqualValues(t, n+1, z, "every read hold is scored, plus the sentinel")
	h := e.hash(key)
	counts := 0
	for k := range h {
		if strings.HasPrefix(k, "c:") {
			counts++
		}
	}
	assert.Equal(t, n-1, counts, "one 'c:' count per owner")
	assert.Equal(t, "2", h["c:shared"], "the shared owner's count")

	writer := newRW(t, c, "many", 10*time.Second, nil)
	_, err := writer.TryLock(e.ctx)
	require.ErrorIs(t, err, locker.ErrNotObtained, "readers live")
	time.Sleep(ttl + 100*time.Millisecond)
	w, err := writer.TryLock(e.ctx)
	require.NoError(t, err, "every reader has expired")
	h = e.hash(key)
	for k := range h {
		assert.False(t, strings.HasPrefix(k, "r:") || strings.HasPrefix(k, "c:"), "field %q left after the purge", k)
	}
	members := e.zrange(key + "r")
	assert.Equal(t, []string{""}, members, "only the sentinel is left in the read expiries")
	require.NoError(t, w.Unlock(e.ctx))
	assert.Empty(t, e.keys(), "no key after the writer's Unlock")
}
