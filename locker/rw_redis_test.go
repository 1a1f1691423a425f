package locker_test

// The rw_*.lua scripts against the redis-server TestMain starts: hash
// layout, key expiry, purging, re-sent calls and wake-up messages. The
// behavioural rules for every driver are in the conformance suite.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/scriptlock/scriptlock/drivers/goredis"
	"github.com/scriptlock/scriptlock/locker"
)

// resender is a Scripter that, while dup is set, sends every EvalSha twice
// and returns the second reply: a client's network retry of a script that
// had already run.
type resender struct {
	locker.Scripter
	dup atomic.Bool
}

func (r *resender) EvalSha(ctx context.Context, sha string, keys, args []string) (any, error) {
	if r.dup.Load() {
		if _, err := r.Scripter.EvalSha(ctx, sha, keys, args); err != nil {
			return nil, err
		}
	}
	return r.Scripter.EvalSha(ctx, sha, keys, args)
}

// rwRedis returns a Client on the test server with a fresh prefix, the
// resender under it, and a go-redis client for inspection.
func rwRedis(t *testing.T) (*locker.Client, *resender, *redis.Client) {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = rdb.Close() })
	var b [4]byte
	_, _ = rand.Read(b[:])
	rs := &resender{Scripter: plainScripter{goredis.New(rdb)}}
	c, err := locker.New(rs, &locker.Options{Prefix: "rwtest:" + hex.EncodeToString(b[:]) + ":"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c, rs, rdb
}

// plainScripter hides the driver's Subscriber, so waits poll and the tests
// need no pub/sub connection of their own beyond the one they open.
type plainScripter struct{ s locker.Scripter }

func (p plainScripter) EvalSha(ctx context.Context, sha string, keys, args []string) (any, error) {
	return p.s.EvalSha(ctx, sha, keys, args)
}
func (p plainScripter) Eval(ctx context.Context, src string, keys, args []string) (any, error) {
	return p.s.Eval(ctx, src, keys, args)
}
func (p plainScripter) ScriptLoad(ctx context.Context, src string) (string, error) {
	return p.s.ScriptLoad(ctx, src)
}

// rwHash returns the lock's hash fields by prefix letter, values parsed as
// "<expiry>:<owner>" (expiry in Unix ms of the server).
func rwHash(t *testing.T, rdb *redis.Client, key string) (map[string][2]string, string) {
	t.Helper()
	m, err := rdb.HGetAll(context.Background(), key).Result()
	require.NoError(t, err)
	out := map[string][2]string{}
	fence := ""
	for k, v := range m {
		if k == "f" {
			fence = v
			continue
		}
		exp, owner, ok := strings.Cut(v, ":")
		require.True(t, ok, "field %q = %q", k, v)
		out[k] = [2]string{exp, owner}
	}
	return out, fence
}

func TestRWRedisLayout(t *testing.T) {
	c, _, rdb := rwRedis(t)
	ctx := testCtx(t)
	key := c.Key("doc") + ":rw"
	rw := newRW(t, c, "doc", 10*time.Second, nil)

	a, err := rw.TryRLock(ctx)
	require.NoError(t, err)
	b, err := rw.TryRLock(ctx)
	require.NoError(t, err)
	fields, fence := rwHash(t, rdb, key)
	assert.Equal(t, "0", fence, "no write grant yet: the counter's value, 0 when absent")
	require.Len(t, fields, 2)
	serverNow, err := rdb.Time(ctx).Result()
	require.NoError(t, err)
	for _, l := range []*locker.Lease{a, b} {
		f, ok := fields["r:"+l.Token()]
		require.True(t, ok, "a field per reader: %v", fields)
		assert.Equal(t, l.Token(), f[1])
		exp, err := strconv.ParseInt(f[0], 10, 64)
		require.NoError(t, err)
		left := exp - serverNow.UnixMilli()
		assert.True(t, left > 9000 && left <= 10000, "absolute expiry in server time: %d ms left", left)
	}
	pttl := func() time.Duration {
		d, err := rdb.PTTL(ctx, key).Result()
		require.NoError(t, err)
		return d
	}
	assert.InDelta(t, 10*time.Second, pttl(), float64(time.Second))

	// The key lives as long as its latest live field.
	require.NoError(t, a.Extend(ctx, 30*time.Second))
	assert.InDelta(t, 30*time.Second, pttl(), float64(time.Second))
	require.NoError(t, a.Unlock(ctx))
	assert.InDelta(t, 10*time.Second, pttl(), float64(time.Second), "a's Unlock leaves b's expiry")
	ttl, err := b.TTL(ctx)
	require.NoError(t, err)
	assert.InDelta(t, 10*time.Second, ttl, float64(time.Second), "TTL is the hold's own")

	// A waiting writer's intent is a field of its own; it is dropped on grant.
	got := make(chan *locker.Lease, 1)
	go func() {
		w, err := rw.Lock(ctx)
		assert.NoError(t, err)
		got <- w
	}()
	require.Eventually(t, func() bool {
		fields, _ := rwHash(t, rdb, key)
		for k := range fields {
			if strings.HasPrefix(k, "i:") {
				return true
			}
		}
		return false
	}, 5*time.Second, time.Millisecond, "the waiting writer's intent")
	_, err = rw.TryRLock(ctx)
	assert.ErrorIs(t, err, locker.ErrNotObtained, "a new reader while a writer waits")
	require.NoError(t, b.Unlock(ctx))
	w := <-got
	require.NotNil(t, w)
	fields, fence = rwHash(t, rdb, key)
	assert.Equal(t, map[string][2]string{"w:" + w.Token(): {fields["w:"+w.Token()][0], w.Token()}}, fields, "only the writer's hold")
	assert.Equal(t, strconv.FormatInt(w.Fence(), 10), fence)
	counter, err := rdb.Get(ctx, c.Key("doc")+":fence").Int64()
	require.NoError(t, err)
	assert.Equal(t, w.Fence(), counter, "write grants take the shared counter")

	require.NoError(t, w.Unlock(ctx))
	n, err := rdb.Exists(ctx, key).Result()
	require.NoError(t, err)
	assert.Zero(t, n, "the hash is deleted with its last hold")
}

func TestRWRedisPurge(t *testing.T) {
	c, _, rdb := rwRedis(t)
	ctx := testCtx(t)
	key := c.Key("p") + ":rw"
	short, err := newRW(t, c, "p", 30*time.Millisecond, nil).TryRLock(ctx)
	require.NoError(t, err)
	long, err := newRW(t, c, "p", 10*time.Second, nil).TryRLock(ctx)
	require.NoError(t, err)
	time.Sleep(60 * time.Millisecond)
	fields, _ := rwHash(t, rdb, key)
	assert.Len(t, fields, 2, "the expired field stays until a script reads the hash")
	_, err = long.TTL(ctx)
	require.NoError(t, err)
	fields, _ = rwHash(t, rdb, key)
	assert.Equal(t, []string{"r:" + long.Token()}, mapKeys(fields), "any script purges expired fields")
	assert.ErrorIs(t, short.Unlock(ctx), locker.ErrExpired)
	require.NoError(t, long.Unlock(ctx))
}

func mapKeys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestRWRedisResent(t *testing.T) {
	c, rs, rdb := rwRedis(t)
	ctx := testCtx(t)
	key := c.Key("re") + ":rw"
	fenceKey := c.Key("re") + ":fence"
	rw := newRW(t, c, "re", 10*time.Second, nil)
	rs.dup.Store(true)

	w, err := rw.TryLock(ctx)
	require.NoError(t, err, "a re-sent write acquire succeeds")
	counter, err := rdb.Get(ctx, fenceKey).Int64()
	require.NoError(t, err)
	assert.Equal(t, w.Fence(), counter, "a re-sent write acquire takes one fence")

	r, err := rw.Downgrade(ctx, w)
	require.NoError(t, err, "a re-sent downgrade succeeds")
	assert.Equal(t, w.Fence(), r.Fence())
	r2, err := rw.RLock(ctx)
	require.NoError(t, err, "a re-sent read acquire succeeds")
	fields, _ := rwHash(t, rdb, key)
	assert.ElementsMatch(t, []string{"r:" + r.Token(), "r:" + r2.Token()}, mapKeys(fields), "one hold per re-sent acquire")

	rs.dup.Store(false)
	require.NoError(t, r.Unlock(ctx))
	rs.dup.Store(true)
	assert.ErrorIs(t, r2.Unlock(ctx), locker.ErrExpired, "a re-sent release of the last hold reports ErrExpired; the hold is gone either way")
	n, err := rdb.Exists(ctx, key).Result()
	require.NoError(t, err)
	assert.Zero(t, n)

	// Reentrant holds of one owner are counted even when re-sent.
	rs.dup.Store(true)
	re := newRW(t, c, "re", 10*time.Second, &locker.RWMutexOptions{Owner: "job", Reentrant: true})
	h1, err := re.Lock(ctx)
	require.NoError(t, err)
	h2, err := re.Lock(ctx)
	require.NoError(t, err)
	assert.Equal(t, h1.Fence(), h2.Fence())
	assert.Greater(t, h1.Fence(), w.Fence(), "the next write grant takes the next fence")
	counter2, err := rdb.Get(ctx, fenceKey).Int64()
	require.NoError(t, err)
	assert.Equal(t, h1.Fence(), counter2, "a re-sent reentrant acquire takes no extra fence")
	rs.dup.Store(false)
	require.NoError(t, h1.Unlock(ctx))
	_, err = newRW(t, c, "re", time.Second, nil).TryRLock(ctx)
	assert.ErrorIs(t, err, locker.ErrNotObtained, "one of two write holds left")
	require.NoError(t, h2.Unlock(ctx))
}

func TestRWRedisSharedFence(t *testing.T) {
	c, _, _ := rwRedis(t)
	ctx := testCtx(t)
	m := newMutex(t, c, "shared", 10*time.Second, nil)
	rw := newRW(t, c, "shared", 10*time.Second, nil)
	var last int64
	for i := range 3 {
		ml, err := m.TryLock(ctx)
		require.NoError(t, err)
		w, err := rw.TryLock(ctx)
		require.NoError(t, err, "a Mutex and an RWMutex of one name are different locks")
		assert.Greater(t, ml.Fence(), last, "grant %d", i)
		assert.Greater(t, w.Fence(), ml.Fence(), "grant %d", i)
		last = w.Fence()
		require.NoError(t, ml.Unlock(ctx))
		require.NoError(t, w.Unlock(ctx))
	}
	r, err := rw.TryRLock(ctx)
	require.NoError(t, err)
	assert.Equal(t, last, r.Fence(), "a read after the hash was deleted reports the counter")
	require.NoError(t, r.Unlock(ctx))
}

func TestRWRedisWake(t *testing.T) {
	c, _, rdb := rwRedis(t)
	ctx := testCtx(t)
	channel := c.Key("wk") + ":wake"
	ps := rdb.SSubscribe(ctx, channel)
	defer ps.Close()
	_, err := ps.Receive(ctx) // the subscription confirmation
	require.NoError(t, err)
	msgs := ps.Channel()
	// published returns how many wake-ups op sent: the messages before a
	// marker the test publishes after it.
	published := func(op func()) int {
		t.Helper()
		op()
		require.NoError(t, rdb.SPublish(ctx, channel, "mark").Err())
		n := 0
		for {
			select {
			case m := <-msgs:
				if m.Payload == "mark" {
					return n
				}
				assert.Empty(t, m.Payload)
				n++
			case <-ctx.Done():
				t.Fatal("no marker")
			}
		}
	}
	rw := newRW(t, c, "wk", 10*time.Second, nil)
	var r1, r2, w, d *locker.Lease
	assert.Zero(t, published(func() { r1, err = rw.TryRLock(ctx); require.NoError(t, err) }), "first reader")
	assert.Zero(t, published(func() { r2, err = rw.TryRLock(ctx); require.NoError(t, err) }), "second reader")
	assert.Zero(t, published(func() { _, err = rw.TryLock(ctx); require.ErrorIs(t, err, locker.ErrNotObtained) }), "refused writer")
	assert.Zero(t, published(func() { require.NoError(t, r1.Unlock(ctx)) }), "a reader leaves, one stays")
	assert.Equal(t, 1, published(func() {
		wctx, cancel := context.WithTimeout(ctx, 30*time.Millisecond)
		defer cancel()
		_, err = rw.Lock(wctx)
		require.ErrorIs(t, err, locker.ErrNotObtained)
	}), "a writer gives up: its intent, the last, is dropped")
	assert.Equal(t, 1, published(func() { require.NoError(t, r2.Unlock(ctx)) }), "the last reader leaves")
	assert.Zero(t, published(func() { w, err = rw.TryLock(ctx); require.NoError(t, err) }), "writer in")
	assert.Equal(t, 1, published(func() { d, err = rw.Downgrade(ctx, w); require.NoError(t, err) }), "downgrade")
	assert.Equal(t, 1, published(func() { require.NoError(t, d.Unlock(ctx)) }), "the downgraded reader leaves")
	assert.Zero(t, published(func() { w, err = rw.TryLock(ctx); require.NoError(t, err) }), "writer in")
	assert.Equal(t, 1, published(func() { require.NoError(t, w.Unlock(ctx)) }), "writer leaves")

	// A writer whose hold expired while the key lives on (its owner also
	// reads) is purged by the next script, which wakes waiting readers.
	wShort := newRW(t, c, "wk", 20*time.Millisecond, &locker.RWMutexOptions{Owner: "x"})
	rLong := newRW(t, c, "wk", 10*time.Second, &locker.RWMutexOptions{Owner: "x"})
	assert.Zero(t, published(func() { _, err = wShort.TryLock(ctx); require.NoError(t, err) }), "short writer in")
	assert.Zero(t, published(func() { d, err = rLong.TryRLock(ctx); require.NoError(t, err) }), "the writer's owner reads too")
	time.Sleep(40 * time.Millisecond)
	assert.Equal(t, 1, published(func() { r1, err = rw.TryRLock(ctx); require.NoError(t, err) }), "purging the expired writer")
	require.NoError(t, r1.Unlock(ctx))
	assert.Equal(t, 1, published(func() { require.NoError(t, d.Unlock(ctx)) }), "the last reader leaves")
}
