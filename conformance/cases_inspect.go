package conformance

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/scriptlock/scriptlock/locker"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// inspectCases check Client.Inspect and the operator's ForceRelease.
var inspectCases = []testCase{
	{
		name:  "Inspect/Free",
		rule:  "Inspect of a name nobody ever locked reports a free mutex and a free read-write lock (no hold, fence, TTL, owner, queue, reader, writer or intent), and creates no key.",
		check: checkInspectFree,
	},
	{
		name:  "Inspect/HeldMutex",
		rule:  "Inspect of a held mutex reports it held with the lease's fence, a TTL in (0, ttl], the owner's hold count (2 for a reentrant Owner holding twice) and the owner's Fingerprint, which neither equals nor contains the token (no field of the state does), for a caller-chosen Owner and for a random token; after the last Unlock it reports the mutex free.",
		check: checkInspectHeld,
	},
	{
		name:  "Inspect/FIFOQueue",
		rule:  "While FIFO waiters queue behind a holder, Inspect reports the number of queued waiters and the Fingerprint of the first one (the id at the head of the queue), and both follow the queue as waiters take the lock in turn.",
		check: checkInspectQueue,
	},
	{
		name:  "Inspect/RW",
		rule:  "Inspect of a read-write lock reports the live readers (holds and distinct owners) with their longest TTL, a waiting writer's intent while it waits, and, once the writer holds the lock, the writer with the lease's fence, a TTL in (0, ttl] and the owner's Fingerprint, and the last write fence; the mutex of the same name stays free.",
		check: checkInspectRW,
	},
	{
		name:  "Inspect/ReadOnly",
		rule:  "Inspect changes nothing: with a held mutex, queued waiters, readers, an intent and expired fields in place, three Inspect calls leave every key under the prefix with the same type, content and an unextended TTL (expired fields are not purged either).",
		check: checkInspectReadOnly,
	},
	{
		name:  "Inspect/ExpiredNotReported",
		rule:  "Holds, queue entries and intents whose expiry has passed are not reported: an expired mutex lease reads as free, an expired reader is not counted next to a live one, and expired queue entries, write holds, read holds and intents stored in the lock's keys are skipped (the head is the first live waiter).",
		check: checkInspectExpired,
	},
	{
		name:  "Inspect/BadInput",
		rule:  "Inspect and ForceRelease return ErrInvalidName for an empty or oversized name, ErrNilContext for a nil context, ErrInvalidOption for ForceRelease without a time, ErrClosed after Client.Close, and send nothing.",
		check: checkInspectBadInput,
	},
	{
		name:  "Inspect/ForceRelease",
		rule:  "ForceRelease with the time of an Inspect drops the holds seen and wakes the waiters: an auto-refreshed mutex holder reports Lost (ErrExpired, or ErrHeldByOther once the waiter holds it), a read lease's TTL reports ErrExpired, a waiter blocked in Lock behind the auto-refreshed holder acquires with a larger fence, and calling it again with the same time drops nothing granted after that time.",
		check: checkInspectForce,
	},
}

// inspect calls c.Inspect, failing the case on error.
func (e *env) inspect(c *locker.Client, name string) locker.LockState {
	e.t.Helper()
	st, err := c.Inspect(e.ctx, name)
	require.NoError(e.t, err, "call: Inspect(%q)", name)
	e.t.Logf("Inspect(%q) = %+v", name, st)
	return st
}

// assertTTL checks that got is in (0, ttl].
func assertTTL(t *testing.T, got, ttl time.Duration, what string) {
	t.Helper()
	assert.Greater(t, got, time.Duration(0), "call: %s: got %v, want in (0, %v]", what, got, ttl)
	assert.LessOrEqual(t, got, ttl, "call: %s: got %v, want in (0, %v]", what, got, ttl)
}

func checkInspectFree(t *testing.T, e *env) {
	c := e.client(nil)
	st := e.inspect(c, "never-locked")
	assert.Equal(t, "never-locked", st.Name, "call: Inspect().Name")
	assert.True(t, st.Free(), "call: Inspect().Free(): got %+v", st)
	assert.Equal(t, locker.MutexState{}, st.Mutex, "call: Inspect().Mutex of a free name")
	assert.Equal(t, locker.RWState{}, st.RW, "call: Inspect().RW of a free name")
	assert.False(t, st.ServerTime.IsZero(), "call: Inspect().ServerTime")
	assert.Empty(t, e.keysLeft(), "call: keys under the prefix after Inspect of a free name")
}

func checkInspectHeld(t *testing.T, e *env) {
	c := e.client(nil)
	const name, ttl = "held{inv}%42", 30 * time.Second
	const owner = "owner-token-0123456789abcdef"
	opts := &locker.MutexOptions{Owner: owner, Reentrant: true}
	a, err := e.mutex(c, name, ttl, opts).TryLock(e.ctx)
	require.NoError(t, err, "call: TryLock (Owner, Reentrant)")
	b, err := e.mutex(c, name, ttl, opts).TryLock(e.ctx)
	require.NoError(t, err, "call: second TryLock of the reentrant Owner")

	st := e.inspect(c, name)
	assert.True(t, st.Mutex.Held, "call: Inspect().Mutex.Held")
	assert.Equal(t, a.Fence(), st.Mutex.Fence, "call: Inspect().Mutex.Fence, want the lease's Fence()")
	assertTTL(t, st.Mutex.TTL, ttl, "Inspect().Mutex.TTL")
	assert.Equal(t, 2, st.Mutex.Holds, "call: Inspect().Mutex.Holds of a reentrant Owner holding twice")
	assertFingerprint(t, st, owner, st.Mutex.Owner, "Inspect().Mutex.Owner")
	assert.Zero(t, st.Mutex.Queue, "call: Inspect().Mutex.Queue")
	assert.Equal(t, locker.RWState{}, st.RW, "call: Inspect().RW while only the mutex is held")

	require.NoError(t, b.Unlock(e.ctx), "call: Unlock of the second hold")
	st = e.inspect(c, name)
	assert.Equal(t, 1, st.Mutex.Holds, "call: Inspect().Mutex.Holds after one Unlock")
	require.NoError(t, a.Unlock(e.ctx), "call: Unlock of the first hold")
	st = e.inspect(c, name)
	assert.Equal(t, locker.MutexState{}, st.Mutex, "call: Inspect().Mutex after the last Unlock")

	// A random token.
	l, err := e.mutex(c, name, ttl, nil).TryLock(e.ctx)
	require.NoError(t, err, "call: TryLock (random token)")
	st = e.inspect(c, name)
	assert.Equal(t, l.Fence(), st.Mutex.Fence, "call: Inspect().Mutex.Fence, want the lease's Fence()")
	assert.Equal(t, 1, st.Mutex.Holds, "call: Inspect().Mutex.Holds")
	assertFingerprint(t, st, l.Token(), st.Mutex.Owner, "Inspect().Mutex.Owner")
	require.NoError(t, l.Unlock(e.ctx), "call: Unlock")
}

// assertFingerprint checks that fp is token's Fingerprint and that the
// token shows nowhere in st.
func assertFingerprint(t *testing.T, st locker.LockState, token, fp, what string) {
	t.Helper()
	assert.Equal(t, locker.Fingerprint(token), fp, "call: %s, want Fingerprint(token)", what)
	assert.Len(t, fp, locker.FingerprintLen, "call: %s", what)
	assert.NotEqual(t, token, fp, "call: %s equals the token", what)
	assert.NotContains(t, fp, token, "call: %s contains the token", what)
	for _, form := range []string{"%v", "%+v", "%#v"} {
		assert.NotContains(t, fmt.Sprintf(form, st), token, "call: the state printed with %s holds the owner token", form)
	}
}

func checkInspectQueue(t *testing.T, e *env) {
	c := e.client(nil)
	const name, ttl = "queue", 30 * time.Second
	h, err := e.mutex(c, name, ttl, nil).TryLock(e.ctx)
	require.NoError(t, err, "call: holder TryLock")
	fifo := &locker.MutexOptions{FIFO: true}
	var waiters []<-chan lockResult
	for i := range 3 {
		waiters = append(waiters, lockAsync(e.ctx, e.mutex(c, name, ttl, fifo)))
		e.awaitQueue(c, name, int64(i+1))
	}
	q := c.Key(name) + ":q"
	head := func() string {
		r, err := e.d.admin.Do(e.ctx, q, "ZRANGE", q, "0", "0")
		require.NoError(t, err, "call: admin ZRANGE %s 0 0", q)
		a, _ := r.([]any)
		require.Len(t, a, 1, "call: admin ZRANGE %s 0 0", q)
		s, _ := a[0].(string)
		return s
	}

	st := e.inspect(c, name)
	assert.True(t, st.Mutex.Held, "call: Inspect().Mutex.Held")
	assert.Equal(t, 3, st.Mutex.Queue, "call: Inspect().Mutex.Queue with 3 waiters queued")
	first := head()
	assertFingerprint(t, st, first, st.Mutex.QueueHead, "Inspect().Mutex.QueueHead")

	prev := h
	for i, ch := range waiters {
		require.NoError(t, prev.Unlock(e.ctx), "call: Unlock before waiter %d takes the lock", i)
		r := <-ch
		require.NoError(t, r.err, "call: Lock of waiter %d", i)
		st = e.inspect(c, name)
		assert.Equal(t, r.l.Fence(), st.Mutex.Fence, "call: Inspect().Mutex.Fence after waiter %d took the lock", i)
		assert.Equal(t, 2-i, st.Mutex.Queue, "call: Inspect().Mutex.Queue after waiter %d took the lock", i)
		if i < 2 {
			next := head()
			assert.NotEqual(t, first, next, "call: the queue's head after waiter %d took the lock", i)
			assert.Equal(t, locker.Fingerprint(next), st.Mutex.QueueHead, "call: Inspect().Mutex.QueueHead after waiter %d took the lock", i)
			first = next
		} else {
			assert.Empty(t, st.Mutex.QueueHead, "call: Inspect().Mutex.QueueHead with nobody queued")
		}
		prev = r.l
	}
	require.NoError(t, prev.Unlock(e.ctx), "call: Unlock of the last waiter")
}

func checkInspectRW(t *testing.T, e *env) {
	c := e.client(nil)
	const name, ttl = "rw", 30 * time.Second
	rw := e.rw(c, name, ttl, nil)
	r1, err := rw.TryRLock(e.ctx)
	require.NoError(t, err, "call: TryRLock r1")
	r2, err := rw.TryRLock(e.ctx)
	require.NoError(t, err, "call: TryRLock r2")

	st := e.inspect(c, name)
	assert.Equal(t, 2, st.RW.Readers, "call: Inspect().RW.Readers")
	assert.Equal(t, 2, st.RW.ReaderOwners, "call: Inspect().RW.ReaderOwners")
	assertTTL(t, st.RW.ReadTTL, ttl, "Inspect().RW.ReadTTL")
	assert.False(t, st.RW.Writer, "call: Inspect().RW.Writer while only readers hold it")
	assert.Zero(t, st.RW.WaitingWriters, "call: Inspect().RW.WaitingWriters")
	assert.Equal(t, locker.MutexState{}, st.Mutex, "call: Inspect().Mutex of a name whose read-write lock is held")

	type result struct {
		l   *locker.Lease
		err error
	}
	wch := make(chan result, 1)
	go func() {
		l, err := rw.Lock(e.ctx)
		wch <- result{l, err}
	}()
	e.until(t, func() bool {
		st, err := c.Inspect(e.ctx, name)
		return err == nil && st.RW.WaitingWriters == 1
	}, 10*time.Second, "call: Inspect().RW.WaitingWriters while a writer waits in Lock: want 1")
	st = e.inspect(c, name)
	assert.Equal(t, 2, st.RW.Readers, "call: Inspect().RW.Readers while a writer waits")
	assert.False(t, st.RW.Writer, "call: Inspect().RW.Writer while the writer waits")

	require.NoError(t, r1.Unlock(e.ctx), "call: Unlock r1")
	require.NoError(t, r2.Unlock(e.ctx), "call: Unlock r2")
	w := <-wch
	require.NoError(t, w.err, "call: writer's Lock")
	st = e.inspect(c, name)
	assert.True(t, st.RW.Writer, "call: Inspect().RW.Writer")
	assert.Equal(t, 1, st.RW.WriterHolds, "call: Inspect().RW.WriterHolds")
	assert.Equal(t, w.l.Fence(), st.RW.WriterFence, "call: Inspect().RW.WriterFence, want the write lease's Fence()")
	assert.Equal(t, w.l.Fence(), st.RW.LastWriteFence, "call: Inspect().RW.LastWriteFence")
	assertTTL(t, st.RW.WriterTTL, ttl, "Inspect().RW.WriterTTL")
	assertFingerprint(t, st, w.l.Token(), st.RW.WriterOwner, "Inspect().RW.WriterOwner")
	assert.Zero(t, st.RW.Readers, "call: Inspect().RW.Readers while the writer holds it")
	assert.Zero(t, st.RW.WaitingWriters, "call: Inspect().RW.WaitingWriters once the writer holds it")
	require.NoError(t, w.l.Unlock(e.ctx), "call: writer's Unlock")

	st = e.inspect(c, name)
	assert.False(t, st.RW.Writer, "call: Inspect().RW.Writer after Unlock")
	assert.Zero(t, st.RW.WriterFence, "call: Inspect().RW.WriterFence after Unlock")
	assert.True(t, st.Free(), "call: Inspect().Free() after every Unlock")
}

// serverMS returns the server's clock in ms on the node that owns key.
func (e *env) serverMS(key string) int64 {
	e.t.Helper()
	r, err := e.d.admin.Do(e.ctx, key, "TIME")
	require.NoError(e.t, err, "call: admin TIME")
	a, _ := r.([]any)
	require.Len(e.t, a, 2, "call: admin TIME")
	s, _ := a[0].(string)
	us, _ := a[1].(string)
	sec, err1 := strconv.ParseInt(s, 10, 64)
	usec, err2 := strconv.ParseInt(us, 10, 64)
	require.NoError(e.t, err1, "call: admin TIME seconds %q", s)
	require.NoError(e.t, err2, "call: admin TIME µs %q", us)
	return sec*1000 + usec/1000
}

// adminDo runs a command on the node that owns key, failing the case on error.
func (e *env) adminDo(key string, args ...string) any {
	e.t.Helper()
	r, err := e.d.admin.Do(e.ctx, key, args...)
	require.NoError(e.t, err, "call: admin %s", strings.Join(args, " "))
	return r
}

// plantStale writes, next to what real calls stored under name, an
// expired and a live FIFO queue entry (ids "dead" then "alive"), and an
// expired write hold, read hold and intent in the read-write hash; with
// liveIntent also a live intent. The planted keys expire within 20 s.
func (e *env) plantStale(c *locker.Client, name string, liveIntent bool) {
	e.t.Helper()
	k := c.Key(name)
	now := e.serverMS(k)
	live := strconv.FormatInt(now+20_000, 10)
	e.adminDo(k, "ZADD", k+":q", "1", "dead", "2", "alive")
	e.adminDo(k, "HSET", k+":qx", "#", "2", "dead", "1", "alive", live)
	e.adminDo(k, "HSET", k+":rw", "w:ghost", "1:1:0:ghost-owner", "r:ghost", "1:1:0:ghost-owner", "i:ghost", "1:0:0:")
	if liveIntent {
		e.adminDo(k, "HSET", k+":rw", "i:waiting", live+":0:0:")
	}
	for _, s := range []string{":q", ":qx"} {
		e.adminDo(k, "PEXPIRE", k+s, "20000")
	}
	if r, _ := e.adminDo(k, "PTTL", k+":rw").(int64); r < 0 {
		e.adminDo(k, "PEXPIRE", k+":rw", "20000")
	}
	e.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		for _, s := range []string{":q", ":qx", ":rw"} {
			_, _ = e.d.admin.Do(ctx, k, "DEL", k+s)
		}
	})
}

// keyState is what snapshot records of one key.
type keyState struct {
	typ     string
	content string
	pttl    int64
}

// snapshot records the type, content and remaining TTL of every key under
// the case's prefix.
func (e *env) snapshot() map[string]keyState {
	e.t.Helper()
	out := map[string]keyState{}
	for _, k := range e.keysLeft() {
		typ, _ := e.adminDo(k, "TYPE", k).(string)
		var content any
		switch typ {
		case "hash":
			content = e.adminDo(k, "HGETALL", k)
		case "zset":
			content = e.adminDo(k, "ZRANGE", k, "0", "-1", "WITHSCORES")
		case "string":
			content = e.adminDo(k, "GET", k)
		}
		pttl, _ := e.adminDo(k, "PTTL", k).(int64)
		out[k] = keyState{typ: typ, content: canonical(content), pttl: pttl}
	}
	return out
}

// canonical prints a reply with HGETALL pairs in a fixed order.
func canonical(r any) string {
	a, ok := r.([]any)
	if !ok {
		return fmt.Sprint(r)
	}
	var pairs []string
	for i := 0; i+1 < len(a); i += 2 {
		pairs = append(pairs, fmt.Sprintf("%v=%v", a[i], a[i+1]))
	}
	sort.Strings(pairs)
	return strings.Join(pairs, " ")
}

func checkInspectReadOnly(t *testing.T, e *env) {
	c := e.client(nil)
	const name, ttl = "read-only", 30 * time.Second
	opts := &locker.MutexOptions{Owner: "ro-owner", Reentrant: true}
	var leases []*locker.Lease
	for range 2 {
		l, err := e.mutex(c, name, ttl, opts).TryLock(e.ctx)
		require.NoError(t, err, "call: TryLock")
		leases = append(leases, l)
	}
	rl, err := e.rw(c, name, ttl, nil).TryRLock(e.ctx)
	require.NoError(t, err, "call: TryRLock (30s)")
	leases = append(leases, rl)
	short, err := e.rw(c, name, 20*time.Millisecond, nil).TryRLock(e.ctx)
	require.NoError(t, err, "call: TryRLock (20ms, left to expire)")
	e.plantStale(c, name, true)
	time.Sleep(100 * time.Millisecond) // the short reader expires; its field stays until a script purges it

	before := e.snapshot()
	require.NotEmpty(t, before, "call: keys under the prefix before Inspect")
	for i := range 3 {
		st := e.inspect(c, name)
		assert.Equal(t, 1, st.RW.Readers, "call: Inspect #%d: RW.Readers (the 20ms reader expired)", i)
	}
	after := e.snapshot()
	require.Equal(t, len(before), len(after), "call: number of keys before and after Inspect: before %v, after %v", before, after)
	for k, b := range before {
		a, ok := after[k]
		if !assert.True(t, ok, "call: key %q gone after Inspect", k) {
			continue
		}
		assert.Equal(t, b.typ, a.typ, "call: TYPE %q before and after Inspect", k)
		assert.Equal(t, b.content, a.content, "call: content of %q before and after Inspect", k)
		assert.LessOrEqual(t, a.pttl, b.pttl, "call: PTTL %q after Inspect, want not extended", k)
		assert.Greater(t, a.pttl, int64(0), "call: PTTL %q after Inspect", k)
	}
	// The read-write hash still holds the live reader, the expired one and
	// the planted expired read hold: Inspect purged nothing.
	reads := 0
	for _, pair := range strings.Fields(after[c.Key(name)+":rw"].content) {
		if strings.HasPrefix(pair, "r:") {
			reads++
		}
	}
	assert.Equal(t, 3, reads, "call: read hold fields stored after Inspect (1 live, 2 expired): %s", after[c.Key(name)+":rw"].content)

	for _, l := range leases {
		require.NoError(t, l.Unlock(e.ctx), "call: Unlock")
	}
	_ = short.Unlock(e.ctx) // expired: ErrExpired, nothing to release
}

func checkInspectExpired(t *testing.T, e *env) {
	c := e.client(nil)
	const ttl = 30 * time.Second

	// A mutex lease that expired.
	_, err := e.mutex(c, "expired-mutex", 20*time.Millisecond, nil).TryLock(e.ctx)
	require.NoError(t, err, "call: TryLock (20ms, left to expire)")
	time.Sleep(100 * time.Millisecond)
	st := e.inspect(c, "expired-mutex")
	assert.Equal(t, locker.MutexState{}, st.Mutex, "call: Inspect().Mutex after the lease's TTL ran out")

	// An expired reader next to a live one, and expired fields stored by
	// crashed callers.
	const name = "expired-fields"
	live, err := e.rw(c, name, ttl, nil).TryRLock(e.ctx)
	require.NoError(t, err, "call: TryRLock (30s)")
	_, err = e.rw(c, name, 20*time.Millisecond, nil).TryRLock(e.ctx)
	require.NoError(t, err, "call: TryRLock (20ms, left to expire)")
	e.plantStale(c, name, false)
	time.Sleep(100 * time.Millisecond)

	st = e.inspect(c, name)
	assert.Equal(t, 1, st.RW.Readers, "call: Inspect().RW.Readers: one live reader, one expired reader and one expired stored read hold")
	assert.Equal(t, 1, st.RW.ReaderOwners, "call: Inspect().RW.ReaderOwners")
	assert.False(t, st.RW.Writer, "call: Inspect().RW.Writer with only an expired write hold stored")
	assert.Empty(t, st.RW.WriterOwner, "call: Inspect().RW.WriterOwner with only an expired write hold stored")
	assert.Zero(t, st.RW.WaitingWriters, "call: Inspect().RW.WaitingWriters with only an expired intent stored")
	assert.Equal(t, 1, st.Mutex.Queue, "call: Inspect().Mutex.Queue: one expired and one live entry")
	assert.Equal(t, locker.Fingerprint("alive"), st.Mutex.QueueHead, "call: Inspect().Mutex.QueueHead: the first live entry, behind an expired one")
	require.NoError(t, live.Unlock(e.ctx), "call: Unlock of the live reader")
}

func checkInspectBadInput(t *testing.T, e *env) {
	c := e.client(nil)
	cs := &countingScripter{Scripter: e.s}
	counted := e.clientOn(cs, nil)
	var nilCtx context.Context
	now := time.Now()
	long := strings.Repeat("n", locker.MaxNameLen+1)
	for _, tc := range []struct {
		what string
		err  error
		call func(*locker.Client) error
	}{
		{"Inspect(\"\")", locker.ErrInvalidName, func(c *locker.Client) error { _, err := c.Inspect(e.ctx, ""); return err }},
		{"Inspect(MaxNameLen+1 bytes)", locker.ErrInvalidName, func(c *locker.Client) error { _, err := c.Inspect(e.ctx, long); return err }},
		{"Inspect(nil ctx)", locker.ErrNilContext, func(c *locker.Client) error { _, err := c.Inspect(nilCtx, "x"); return err }},
		{"ForceRelease(\"\")", locker.ErrInvalidName, func(c *locker.Client) error { _, err := c.ForceRelease(e.ctx, "", now); return err }},
		{"ForceRelease(nil ctx)", locker.ErrNilContext, func(c *locker.Client) error { _, err := c.ForceRelease(nilCtx, "x", now); return err }},
		{"ForceRelease(zero time)", locker.ErrInvalidOption, func(c *locker.Client) error {
			_, err := c.ForceRelease(e.ctx, "x", time.Time{})
			return err
		}},
	} {
		err := tc.call(counted)
		assert.ErrorIs(t, err, tc.err, "call: %s", tc.what)
	}
	assert.Zero(t, cs.calls(), "call: script calls made for bad input")

	require.NoError(t, c.Close(), "call: Close")
	_, err := c.Inspect(e.ctx, "x")
	assert.ErrorIs(t, err, locker.ErrClosed, "call: Inspect after Close")
	_, err = c.ForceRelease(e.ctx, "x", now)
	assert.ErrorIs(t, err, locker.ErrClosed, "call: ForceRelease after Close")
	assert.Empty(t, e.keysLeft(), "call: keys under the prefix after bad input")
}

func checkInspectForce(t *testing.T, e *env) {
	c := e.client(nil)
	const name, ttl = "force", 30 * time.Second
	held, err := e.mutex(c, name, 3*time.Second, &locker.MutexOptions{AutoRefresh: true}).TryLock(e.ctx)
	require.NoError(t, err, "call: TryLock (AutoRefresh)")
	waiter := lockAsync(e.ctx, e.mutex(c, name, ttl, nil))
	reader, err := e.rw(c, name, ttl, nil).TryRLock(e.ctx)
	require.NoError(t, err, "call: TryRLock")

	st := e.inspect(c, name)
	require.True(t, st.Mutex.Held, "call: Inspect().Mutex.Held before ForceRelease")
	f, err := c.ForceRelease(e.ctx, name, st.ServerTime)
	require.NoError(t, err, "call: ForceRelease(%q, Inspect().ServerTime)", name)
	assert.Equal(t, locker.Forced{MutexHolds: 1, RWHolds: 1}, f, "call: ForceRelease(%q)", name)

	select {
	case <-held.Lost():
		// ErrHeldByOther when the waiter took the lock before the refresh.
		if !errors.Is(held.Err(), locker.ErrExpired) && !errors.Is(held.Err(), locker.ErrHeldByOther) {
			t.Errorf("call: Err() of the force-released lease: got %v, want ErrExpired or ErrHeldByOther", held.Err())
		}
	case <-e.ctx.Done():
		t.Fatalf("call: Lost() of the force-released auto-refreshed lease (TTL 3s) never closed")
	}
	_, err = reader.TTL(e.ctx)
	assert.ErrorIs(t, err, locker.ErrExpired, "call: TTL of the force-released read lease")

	wctx, cancel := context.WithTimeout(e.ctx, 10*time.Second)
	defer cancel()
	var next *locker.Lease
	select {
	case r := <-waiter:
		require.NoError(t, r.err, "call: Lock of the waiter")
		next = r.l
	case <-wctx.Done():
		t.Fatalf("call: the waiter did not acquire within 10s of ForceRelease (the old holder was auto-refreshed)")
	}
	assert.Greater(t, next.Fence(), st.Mutex.Fence, "call: the next holder's Fence, want above the force-released one")

	// A re-sent ForceRelease drops nothing granted after its time.
	f, err = c.ForceRelease(e.ctx, name, st.ServerTime)
	require.NoError(t, err, "call: ForceRelease again with the same time")
	assert.Equal(t, locker.Forced{}, f, "call: ForceRelease again with the same time")
	_, err = next.TTL(e.ctx)
	assert.NoError(t, err, "call: TTL of the lease granted after the ForceRelease's time")
	require.NoError(t, next.Unlock(e.ctx), "call: Unlock of the next holder")
	_ = held.Unlock(e.ctx)
	_ = reader.Unlock(e.ctx)
}
