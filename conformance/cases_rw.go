package conformance

import (
	"context"
	"errors"
	"fmt"
	"math"
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

// rwCases check the read-write lock.
var rwCases = []testCase{
	{
		name:  "RW/ManyReaders",
		rule:  "10 readers hold read leases at once, and a writer blocked in Lock gets the lock only after the last of them has unlocked.",
		check: checkRWManyReaders,
	},
	{
		name:  "RW/Exclusion",
		rule:  "A two-field structure written under Lock and read under RLock by 16 goroutines over 2,000 operations (one in four a write) never shows a torn state, and no writer overlaps a reader or another writer.",
		check: checkRWExclusion,
	},
	{
		name:  "RW/ReaderExpiry",
		rule:  "A reader whose lease expires frees only its own share: another reader keeps its lease and TTL (also through a third reader's Unlock), and the lock is free for a writer once every share has expired or been unlocked.",
		check: checkRWReaderExpiry,
	},
	{
		name:  "RW/WriterPreference",
		rule:  "While a writer waits in Lock new readers are refused until the writer has had the lock; writers waiting behind 8 goroutines re-reading in a loop each get the lock with at most 8 read grants (the ones already in flight, one per reader goroutine) completing after their first refusal.",
		check: checkRWWriterPreference,
	},
	{
		name:      "RW/WriterGivesUp",
		rule:      "A writer whose Lock ends with its context returns at once and leaves no intent behind: its intent is dropped in the background, so a new reader's TryRLock succeeds within a second (not after the intent's 30 s), and the lock's hash holds no intent.",
		check:     checkRWWriterGivesUp,
		exclusive: "bounds how soon a new reader gets in (1 s)",
	},
	{
		name:  "RW/Downgrade",
		rule:  "Downgrade turns a write lease into a read lease with the same fence and no gap: readers may join it, a writer blocked in Lock gets the lock only after the read lease is unlocked and with the next fence, and the write lease counts as released.",
		check: checkRWDowngrade,
	},
	{
		name:  "RW/FencesIncrease",
		rule:  "Fences strictly increase across 60 write grants, including grants after the previous write lease expired, and a read lease's fence is at least that of the last write grant and below the next one's, also after that grant expired.",
		check: checkRWFences,
	},
	{
		name:  "RW/StaleLease",
		rule:  "Unlock, Extend and TTL of an expired read or write lease report ErrExpired when no other owner excludes it and ErrHeldByOther when another owner holds the write lock (or, for a write lease, a read lease), and change nothing for the current holders.",
		check: checkRWStaleLease,
	},
	{
		name:  "RW/ClockIndependence",
		rule:  "No read-write lock script call carries this process's clock: across every RW operation with TTLs from 1 ms to one year, no ARGV parses as a number within a day of now in seconds, milliseconds, microseconds or nanoseconds.",
		check: checkRWClock,
	},
	{
		name:  "RW/BadInput",
		rule:  "Every bad RW input (empty or oversized name, TTL outside [MinTTL, MaxTTL], Reentrant without Owner, nil context, Downgrade of a nil, read, released or foreign lease) returns its typed error without panicking, and nothing is left in Redis.",
		check: checkRWBadInput,
	},
	{
		name:  "RW/UseAfterClose",
		rule:  "After Client.Close every operation of its RWMutexes and their leases returns ErrClosed, except Unlock, which still releases.",
		check: checkRWUseAfterClose,
	},
	{
		name:      "RW/TwoRoundTrips",
		needs:     "reads the node's INFO commandstats",
		rule:      "An uncontended TryRLock plus Unlock, and TryLock plus Unlock, each cost exactly two script calls once the scripts are loaded.",
		check:     checkRWTwoRoundTrips,
		exclusive: "reads the node's INFO commandstats, which counts every client's calls",
	},
}

// rw returns an RWMutex on c, failing the case on error.
func (e *env) rw(c *locker.Client, name string, ttl time.Duration, opts *locker.RWMutexOptions) *locker.RWMutex {
	e.t.Helper()
	m, err := c.NewRWMutex(name, ttl, opts)
	require.NoError(e.t, err, "call: NewRWMutex(%q, %v, %+v)", name, ttl, opts)
	return m
}

// rwHashFields returns the field names of the read-write lock name's hash.
func (e *env) rwHashFields(c *locker.Client, name string) []string {
	e.t.Helper()
	k := c.Key(name) + ":rw"
	r, err := e.d.admin.Do(e.ctx, k, "HKEYS", k)
	require.NoError(e.t, err, "call: admin HKEYS %s", k)
	a, _ := r.([]any)
	var out []string
	for _, v := range a {
		s, _ := v.(string)
		out = append(out, s)
	}
	return out
}

// rwLockAsync runs rw.Lock(ctx) in a goroutine; after, when not nil, runs
// in that goroutine right after Lock returned.
func rwLockAsync(ctx context.Context, rw *locker.RWMutex, after func()) <-chan lockResult {
	ch := make(chan lockResult, 1)
	go func() {
		l, err := rw.Lock(ctx)
		if after != nil {
			after()
		}
		ch <- lockResult{l, err}
	}()
	return ch
}

// refusalScripter forwards to the driver's Scripter and counts acquire
// refusals (replies {0, pttl}); onRefusal, when set, runs on each.
type refusalScripter struct {
	locker.Scripter
	refusals  atomic.Int64
	onRefusal func()
}

func (r *refusalScripter) EvalSha(ctx context.Context, sha string, keys, args []string) (any, error) {
	return r.seen(r.Scripter.EvalSha(ctx, sha, keys, args))
}

func (r *refusalScripter) Eval(ctx context.Context, src string, keys, args []string) (any, error) {
	return r.seen(r.Scripter.Eval(ctx, src, keys, args))
}

func (r *refusalScripter) seen(v any, err error) (any, error) {
	if a, ok := v.([]any); ok && err == nil && len(a) == 2 && a[0] == int64(0) {
		r.refusals.Add(1)
		if r.onRefusal != nil {
			r.onRefusal()
		}
	}
	return v, err
}

// Subscribe forwards to the driver's Subscriber, if any.
func (r *refusalScripter) Subscribe(ctx context.Context, channel string, onMessage func(string)) (func(), error) {
	s, ok := r.Scripter.(locker.Subscriber)
	if !ok {
		return nil, errors.New("conformance: driver does not implement locker.Subscriber")
	}
	return s.Subscribe(ctx, channel, onMessage)
}

// awaitRefusals waits until rs has seen at least n refusals (liveness:
// see eventually); when they do not come, the test stops there.
func awaitRefusals(t *testing.T, e *env, rs *refusalScripter, n int64, what string) {
	t.Helper()
	if !e.eventually(t, func() bool { return rs.refusals.Load() >= n }, 10*time.Second,
		fmt.Sprintf("call: %s: want at least %d refused attempts", what, n)) {
		t.SkipNow()
	}
}

func checkRWManyReaders(t *testing.T, e *env) {
	c := e.client(nil)
	const n = 10
	var (
		wg     sync.WaitGroup
		start  = make(chan struct{})
		leases = make([]*locker.Lease, n)
		errs   = make([]error, n)
	)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			leases[i], errs[i] = e.rw(c, "many", 30*time.Second, nil).TryRLock(e.ctx)
		}()
	}
	close(start)
	wg.Wait()
	for i := range n {
		require.NoError(t, errs[i], "call: TryRLock #%d of %d concurrent readers", i, n)
	}
	for i, l := range leases {
		_, err := l.TTL(e.ctx)
		require.NoError(t, err, "call: reader #%d TTL() with all %d readers in", i, n)
	}

	rs := &refusalScripter{Scripter: e.s}
	var unlocked atomic.Int32 // readers that have started to unlock
	var seen int32
	got := rwLockAsync(e.ctx, e.rw(e.clientOn(rs, nil), "many", 30*time.Second, nil), func() { seen = unlocked.Load() })
	awaitRefusals(t, e, rs, 1, "writer Lock while 10 readers hold")
	other := e.rw(c, "many", 30*time.Second, nil)
	for i, l := range leases {
		unlocked.Add(1)
		require.NoError(t, l.Unlock(e.ctx), "call: reader #%d Unlock", i)
		if i == n-1 {
			break
		}
		_, err := other.TryLock(e.ctx)
		assert.ErrorIs(t, err, locker.ErrNotObtained, "call: TryLock with %d of %d readers left", n-1-i, n)
		select {
		case r := <-got:
			t.Fatalf("call: writer Lock returned (%v, %v) with %d of %d readers left, want it to wait", r.l, r.err, n-1-i, n)
		default:
		}
	}
	r := <-got
	require.NoError(t, r.err, "call: writer Lock after the last reader left")
	assert.Equal(t, int32(n), seen, "call: readers that had started to unlock when the writer's Lock returned")
	require.NoError(t, r.l.Unlock(e.ctx), "call: writer Unlock")
	assert.Empty(t, e.lockKeysLeft(), "call: keys under the prefix after every Unlock")
}

func checkRWExclusion(t *testing.T, e *env) {
	c := e.client(nil)
	const workers, rounds = 16, 125 // 2,000 operations
	var (
		wg            sync.WaitGroup
		a, b          atomic.Int64 // written one after the other: a torn state shows a != b
		readers       atomic.Int32
		writers       atomic.Int32
		torn, overlap atomic.Int32
		writes        atomic.Int64
		errs          = make(chan error, workers)
	)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rw := e.rw(c, "exclusion", 10*time.Second, nil)
			for i := range rounds {
				if (w+i)%4 == 0 {
					l, err := rw.Lock(e.ctx)
					if err != nil {
						errs <- err
						return
					}
					if writers.Add(1) != 1 || readers.Load() != 0 {
						overlap.Add(1)
					}
					v := a.Load() + 1
					a.Store(v)
					runtime.Gosched()
					b.Store(v)
					writes.Add(1)
					writers.Add(-1)
					if err := l.Unlock(e.ctx); err != nil {
						errs <- err
						return
					}
					continue
				}
				l, err := rw.RLock(e.ctx)
				if err != nil {
					errs <- err
					return
				}
				readers.Add(1)
				if writers.Load() != 0 {
					overlap.Add(1)
				}
				x := a.Load()
				runtime.Gosched()
				if y := b.Load(); x != y {
					torn.Add(1)
				}
				readers.Add(-1)
				if err := l.Unlock(e.ctx); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	assert.Zero(t, torn.Load(), "call: reads that saw the two fields differ")
	assert.Zero(t, overlap.Load(), "call: times a writer was inside together with a reader or another writer")
	assert.Equal(t, writes.Load(), a.Load(), "call: value after %d locked read-increment-writes", writes.Load())
	for err := range errs {
		if !e.done(t, err, "call: Lock/RLock/Unlock in the loop") {
			return
		}
	}
	assert.Equal(t, int64(workers*rounds/4), writes.Load(), "call: writes done")
}

func checkRWReaderExpiry(t *testing.T, e *env) {
	c := e.client(nil)
	short := e.rw(c, "expiry", 150*time.Millisecond, nil)
	long := e.rw(c, "expiry", 30*time.Second, nil)
	a, err := short.TryRLock(e.ctx)
	require.NoError(t, err, "call: TryRLock a (150ms)")
	b, err := long.TryRLock(e.ctx)
	require.NoError(t, err, "call: TryRLock b (30s)")
	time.Sleep(300 * time.Millisecond)

	_, err = a.TTL(e.ctx)
	assert.ErrorIs(t, err, locker.ErrExpired, "call: a.TTL() after its 150ms TTL")
	ttl, err := b.TTL(e.ctx)
	require.NoError(t, err, "call: b.TTL() after a expired")
	assert.Greater(t, ttl, 20*time.Second, "call: b.TTL(): a's expiry must not shorten b's lease")
	_, err = long.TryLock(e.ctx)
	assert.ErrorIs(t, err, locker.ErrNotObtained, "call: TryLock while b still reads")

	cl, err := long.TryRLock(e.ctx)
	require.NoError(t, err, "call: TryRLock c")
	require.NoError(t, cl.Unlock(e.ctx), "call: c.Unlock")
	ttl, err = b.TTL(e.ctx)
	require.NoError(t, err, "call: b.TTL() after c's Unlock")
	assert.Greater(t, ttl, 20*time.Second, "call: b.TTL() after c's Unlock")
	_, err = long.TryLock(e.ctx)
	assert.ErrorIs(t, err, locker.ErrNotObtained, "call: TryLock after c's Unlock: b still reads")
	assert.ErrorIs(t, a.Unlock(e.ctx), locker.ErrExpired, "call: a.Unlock() after expiry")

	require.NoError(t, b.Unlock(e.ctx), "call: b.Unlock")
	w, err := long.TryLock(e.ctx)
	require.NoError(t, err, "call: TryLock after b's Unlock and a's expiry")
	require.NoError(t, w.Unlock(e.ctx), "call: writer Unlock")

	// A reader that never unlocks frees the lock on its own expiry.
	a, err = short.TryRLock(e.ctx)
	require.NoError(t, err, "call: TryRLock a again")
	var w2 *locker.Lease
	if !waitFor(func() bool {
		w2, err = long.TryLock(e.ctx)
		return err == nil
	}, 5*time.Second) {
		e.tooLate(t, fmt.Sprintf("call: TryLock after a's 150ms TTL: not granted within 5s; last error %v", err))
	}
	assert.Greater(t, w2.Fence(), w.Fence(), "call: Fence() of the grant after the reader expired")
	assert.ErrorIs(t, a.Unlock(e.ctx), locker.ErrHeldByOther, "call: a.Unlock() of the expired reader while a writer holds")
	require.NoError(t, w2.Unlock(e.ctx), "call: writer Unlock")
	assert.Empty(t, e.lockKeysLeft(), "call: keys under the prefix after every Unlock")
}

func checkRWWriterPreference(t *testing.T, e *env) {
	c := e.client(nil)
	rw := e.rw(c, "pref", 30*time.Second, nil)

	// A new reader is refused while a writer waits, until the writer has
	// had the lock.
	r, err := rw.TryRLock(e.ctx)
	require.NoError(t, err, "call: TryRLock r")
	rs := &refusalScripter{Scripter: e.s}
	got := rwLockAsync(e.ctx, e.rw(e.clientOn(rs, nil), "pref", 30*time.Second, nil), nil)
	awaitRefusals(t, e, rs, 1, "writer Lock while r reads")
	for i := range 3 {
		_, err = rw.TryRLock(e.ctx)
		assert.ErrorIs(t, err, locker.ErrNotObtained, "call: new reader's TryRLock #%d while a writer waits", i)
	}
	ctx, cancel := context.WithTimeout(e.ctx, 200*time.Millisecond)
	_, err = rw.RLock(ctx)
	cancel()
	assert.ErrorIs(t, err, locker.ErrNotObtained, "call: new reader's RLock(200ms) while a writer waits")
	require.NoError(t, r.Unlock(e.ctx), "call: r.Unlock")
	res := <-got
	require.NoError(t, res.err, "call: writer Lock after r left")
	_, err = rw.TryRLock(e.ctx)
	assert.ErrorIs(t, err, locker.ErrNotObtained, "call: TryRLock while the writer holds")
	require.NoError(t, res.l.Unlock(e.ctx), "call: writer Unlock")
	r, err = rw.TryRLock(e.ctx)
	require.NoError(t, err, "call: TryRLock after the writer had the lock")
	require.NoError(t, r.Unlock(e.ctx), "call: reader Unlock")

	// Writers behind a stream of readers.
	const readerGoroutines, writerRounds = 8, 3
	var (
		grants atomic.Int64
		wg     sync.WaitGroup
		errs   = make(chan error, readerGoroutines)
	)
	stream, stop := context.WithCancel(e.ctx)
	defer stop()
	for range readerGoroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			reader := e.rw(c, "pref", 10*time.Second, nil)
			for stream.Err() == nil {
				l, err := reader.RLock(stream)
				if err != nil {
					if stream.Err() == nil {
						errs <- err
					}
					return
				}
				grants.Add(1)
				runtime.Gosched()
				if err := l.Unlock(e.ctx); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	if !e.eventually(t, func() bool { return grants.Load() >= 50 }, 10*time.Second, "call: the readers' stream of RLock") {
		stop()
		wg.Wait()
		return
	}
	refused, stalled := 0, false
	// A writer may find a gap between readers and be granted at once; run
	// more rounds (up to maxRounds) until at least one was refused first.
	const maxRounds = 20
	for round := 0; round < writerRounds || refused == 0 && round < maxRounds; round++ {
		var atFirst atomic.Int64
		atFirst.Store(-1)
		ws := &refusalScripter{Scripter: e.s}
		ws.onRefusal = func() { atFirst.CompareAndSwap(-1, grants.Load()) }
		w, err := e.rw(e.clientOn(ws, nil), "pref", 10*time.Second, nil).Lock(e.ctx)
		after := grants.Load()
		require.NoError(t, err, "call: writer Lock #%d behind %d re-reading goroutines", round, readerGoroutines)
		if first := atFirst.Load(); first >= 0 {
			refused++
			t.Logf("writer #%d: %d refusals, %d read grants completed after the first", round, ws.refusals.Load(), after-first)
			assert.LessOrEqual(t, after-first, int64(readerGoroutines),
				"call: writer Lock #%d: read grants completed between its first refusal and its grant", round)
		}
		require.NoError(t, w.Unlock(e.ctx), "call: writer Unlock #%d", round)
		before := grants.Load()
		if !e.eventually(t, func() bool { return grants.Load() >= before+20 }, 10*time.Second, fmt.Sprintf("call: readers resume after writer #%d", round)) {
			stalled = true
			break
		}
	}
	stop()
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err, "call: reader RLock/Unlock in the stream")
	}
	if stalled {
		return
	}
	assert.Positive(t, refused, "call: writers (of up to %d) that were refused at least once by the readers' stream", maxRounds)
}

func checkRWWriterGivesUp(t *testing.T, e *env) {
	c := e.client(nil)
	rw := e.rw(c, "gives-up", 30*time.Second, nil)
	granted := time.Now()
	r, err := rw.TryRLock(e.ctx)
	require.NoError(t, err, "call: TryRLock r")
	for i := range 2 {
		ctx, cancel := context.WithTimeout(e.ctx, 200*time.Millisecond)
		w, err := rw.Lock(ctx)
		cancel()
		assert.Nil(t, w, "call: Lock #%d past its deadline: lease", i)
		require.ErrorIs(t, err, locker.ErrNotObtained, "call: Lock #%d past its deadline", i)
		require.ErrorIs(t, err, context.DeadlineExceeded, "call: Lock #%d past its deadline: want ctx.Err() joined", i)
		var r2 *locker.Lease
		readable := func() bool {
			r2, err = rw.TryRLock(e.ctx)
			if err != nil && !errors.Is(err, locker.ErrNotObtained) {
				// Not an answer but a call lost with its connection (rueidis,
				// for one, hands the outcome of a dial made under another
				// call's context, here a writer's 200 ms, to every call
				// waiting for that connection). Ask again.
				t.Logf("call: TryRLock after writer #%d gave up: %v; asking again", i, err)
			}
			return err == nil
		}
		if !e.freeSoon(t, readable, time.Second, 10*time.Second, fmt.Sprintf("call: TryRLock after writer #%d gave up: its intent (30s) must be gone", i)) {
			return
		}
		require.NoError(t, r2.Unlock(e.ctx), "call: Unlock of that reader")
		for _, f := range e.rwHashFields(c, "gives-up") {
			assert.False(t, strings.HasPrefix(f, "i:"), "call: HKEYS of the lock's hash after writer #%d gave up: intent %q left", i, f)
		}
	}
	ttl, err := r.TTL(e.ctx)
	require.NoError(t, err, "call: r.TTL() after the writers gave up")
	// Untouched, r's lease has its 30 s less the time since its grant
	// (and a second for the calls' own time) left, however slow the run.
	least := 30*time.Second - time.Since(granted) - time.Second
	assert.Greater(t, ttl, least, "call: r.TTL(): the writers must not have touched r's lease")
	// A writer's clean-up (rw_cancel.lua) may still be running: Close
	// waits for it (a Lease's Unlock still releases after Close).
	require.NoError(t, c.Close(), "call: Close, which waits for the writers' clean-ups")
	require.NoError(t, r.Unlock(e.ctx), "call: r.Unlock")
	// No hold, intent or reader count is left. A writer whose call was
	// still on its way when its context ended (its outcome unknown: under
	// load) leaves the record that refuses that call (x:<call id>) for
	// 30 s, which Leak/NoKeysLeft sees expire, and with it the hash's
	// bookkeeping ('f', the last fence; 'o', the names of such records).
	for _, f := range e.rwHashFields(c, "gives-up") {
		assert.True(t, f == "f" || f == "o" || strings.HasPrefix(f, "x:"),
			"call: HKEYS of the lock's hash after every Unlock: %q left (only the record refusing a writer's call whose outcome was unknown may be, with 'f' and 'o')", f)
	}
}

func checkRWDowngrade(t *testing.T, e *env) {
	c := e.client(nil)
	rw := e.rw(c, "downgrade", 30*time.Second, nil)
	other := e.rw(c, "downgrade", 30*time.Second, nil)

	// Readers may join a downgraded lease; writers may not.
	w, err := rw.TryLock(e.ctx)
	require.NoError(t, err, "call: TryLock w")
	d, err := rw.Downgrade(e.ctx, w)
	require.NoError(t, err, "call: Downgrade(w)")
	assert.Equal(t, w.Fence(), d.Fence(), "call: Fence() of the downgraded lease")
	assert.Equal(t, w.Token(), d.Token(), "call: Token() of the downgraded lease")
	assert.NoError(t, w.Unlock(e.ctx), "call: w.Unlock() after Downgrade: the write lease counts as released")
	assert.ErrorIs(t, w.Extend(e.ctx, time.Minute), locker.ErrExpired, "call: w.Extend() after Downgrade")
	_, err = rw.Downgrade(e.ctx, w)
	assert.ErrorIs(t, err, locker.ErrExpired, "call: Downgrade(w) again")
	_, err = other.TryLock(e.ctx)
	assert.ErrorIs(t, err, locker.ErrNotObtained, "call: TryLock while the downgraded lease reads")
	r, err := other.TryRLock(e.ctx)
	require.NoError(t, err, "call: another reader's TryRLock beside the downgraded lease")
	require.NoError(t, r.Unlock(e.ctx), "call: that reader's Unlock")
	require.NoError(t, d.Unlock(e.ctx), "call: Unlock of the downgraded lease")

	// A writer blocked in Lock during the downgrade gets in only after the
	// read lease is unlocked, with the next fence: nobody wrote in between.
	w, err = rw.TryLock(e.ctx)
	require.NoError(t, err, "call: TryLock w")
	rs := &refusalScripter{Scripter: e.s}
	var readDone atomic.Bool
	var sawDone bool
	// A short TTL makes the waiting writer retry (refreshing its intent)
	// every 200 ms at least, so it tries while the downgraded lease reads.
	waiting := e.rw(e.clientOn(rs, nil), "downgrade", 400*time.Millisecond, nil)
	got := rwLockAsync(e.ctx, waiting, func() { sawDone = readDone.Load() })
	awaitRefusals(t, e, rs, 1, "writer Lock while w holds")
	d, err = rw.Downgrade(e.ctx, w)
	require.NoError(t, err, "call: Downgrade(w) with a writer waiting")
	assert.Equal(t, w.Fence(), d.Fence(), "call: Fence() of the downgraded lease")
	_, err = other.TryLock(e.ctx)
	assert.ErrorIs(t, err, locker.ErrNotObtained, "call: TryLock right after Downgrade")
	before := rs.refusals.Load()
	awaitRefusals(t, e, rs, before+2, "the waiting writer retrying after Downgrade")
	select {
	case res := <-got:
		t.Fatalf("call: waiting writer's Lock returned (%v, %v) while the downgraded lease reads", res.l, res.err)
	default:
	}
	ttl, err := d.TTL(e.ctx)
	require.NoError(t, err, "call: TTL() of the downgraded lease")
	assert.Greater(t, ttl, 20*time.Second, "call: TTL() of the downgraded lease")
	// No write grant since w: the hash still holds w's fence.
	fk := e.client(nil).Key("downgrade") + ":rw"
	cur, err := e.d.admin.Do(e.ctx, fk, "HGET", fk, "f")
	require.NoError(t, err, "call: admin HGET %s f", fk)
	assert.Equal(t, strconv.FormatInt(w.Fence(), 10), cur, "call: last write fence before the read lease is unlocked: no write grant since the downgraded one")
	readDone.Store(true)
	require.NoError(t, d.Unlock(e.ctx), "call: Unlock of the downgraded lease")
	res := <-got
	require.NoError(t, res.err, "call: waiting writer's Lock after the read lease was unlocked")
	assert.True(t, sawDone, "call: the waiting writer got the lock before the downgraded lease was unlocked")
	assert.Greater(t, res.l.Fence(), w.Fence(), "call: Fence() of the waiting writer: after the downgraded write grant")
	require.NoError(t, ignoreExpired(res.l.Unlock(e.ctx)), "call: waiting writer's Unlock")
	assert.Empty(t, e.lockKeysLeft(), "call: keys under the prefix after every Unlock")
}

func checkRWFences(t *testing.T, e *env) {
	c := e.client(nil)
	short := e.rw(c, "fences", 20*time.Millisecond, nil)
	reader := e.rw(c, "fences", 10*time.Second, nil)
	var last int64
	for i := range 60 {
		w, err := short.Lock(e.ctx)
		require.NoError(t, err, "call: Lock #%d", i)
		require.Greater(t, w.Fence(), last, "call: Fence() of write grant #%d: got %d, want > %d", i, w.Fence(), last)
		last = w.Fence()
		if i%10 == 9 {
			time.Sleep(30 * time.Millisecond) // let it expire; the next grant follows an expiry
		} else {
			require.NoError(t, ignoreExpired(w.Unlock(e.ctx)), "call: Unlock #%d", i)
		}
		r, err := reader.RLock(e.ctx)
		require.NoError(t, err, "call: RLock after write grant #%d", i)
		assert.GreaterOrEqual(t, r.Fence(), last, "call: Fence() of a read lease after write grant #%d", i)
		last = r.Fence() // the next write grant's fence must be above it
		require.NoError(t, r.Unlock(e.ctx), "call: reader Unlock #%d", i)
	}
}

func checkRWStaleLease(t *testing.T, e *env) {
	c := e.client(nil)
	short := e.rw(c, "stale", 50*time.Millisecond, nil)
	long := e.rw(c, "stale", 30*time.Second, nil)
	expire := func() { time.Sleep(100 * time.Millisecond) }

	// stale checks a's Extend, TTL and Unlock against want; Extend's 50ms
	// must not shorten the current holder's lease.
	stale := func(what string, a *locker.Lease, want error) {
		t.Helper()
		assert.ErrorIs(t, a.Extend(e.ctx, 50*time.Millisecond), want, "call: %s: Extend()", what)
		_, err := a.TTL(e.ctx)
		assert.ErrorIs(t, err, want, "call: %s: TTL()", what)
		assert.ErrorIs(t, a.Unlock(e.ctx), want, "call: %s: Unlock()", what)
		assert.NoError(t, a.Unlock(e.ctx), "call: %s: Unlock() a second time", what)
	}
	// untouched checks that holder still holds with a long TTL.
	untouched := func(what string, holder *locker.Lease) {
		t.Helper()
		ttl, err := holder.TTL(e.ctx)
		require.NoError(t, err, "call: %s: current holder's TTL()", what)
		assert.Greater(t, ttl, 20*time.Second, "call: %s: current holder's TTL() after the stale calls", what)
	}

	// A stale reader.
	a, err := short.TryRLock(e.ctx)
	require.NoError(t, err, "call: TryRLock a")
	expire()
	stale("expired reader, lock free", a, locker.ErrExpired)

	a, err = short.TryRLock(e.ctx)
	require.NoError(t, err, "call: TryRLock a")
	b, err := long.TryRLock(e.ctx)
	require.NoError(t, err, "call: TryRLock b")
	expire()
	stale("expired reader beside reader b", a, locker.ErrExpired)
	untouched("expired reader beside reader b", b)
	_, err = long.TryLock(e.ctx)
	assert.ErrorIs(t, err, locker.ErrNotObtained, "call: TryLock: b must still read")
	require.NoError(t, b.Unlock(e.ctx), "call: b.Unlock")

	a, err = short.TryRLock(e.ctx)
	require.NoError(t, err, "call: TryRLock a")
	expire()
	w, err := long.TryLock(e.ctx)
	require.NoError(t, err, "call: TryLock w after a expired")
	stale("expired reader, writer w holds", a, locker.ErrHeldByOther)
	untouched("expired reader, writer w holds", w)
	_, err = long.TryRLock(e.ctx)
	assert.ErrorIs(t, err, locker.ErrNotObtained, "call: TryRLock: w must still write")
	require.NoError(t, w.Unlock(e.ctx), "call: w.Unlock")

	// A stale writer.
	a, err = short.TryLock(e.ctx)
	require.NoError(t, err, "call: TryLock a")
	expire()
	stale("expired writer, lock free", a, locker.ErrExpired)

	a, err = short.TryLock(e.ctx)
	require.NoError(t, err, "call: TryLock a")
	expire()
	b, err = long.TryRLock(e.ctx)
	require.NoError(t, err, "call: TryRLock b after a expired")
	stale("expired writer, reader b holds", a, locker.ErrHeldByOther)
	untouched("expired writer, reader b holds", b)
	require.NoError(t, b.Unlock(e.ctx), "call: b.Unlock")

	a, err = short.TryLock(e.ctx)
	require.NoError(t, err, "call: TryLock a")
	expire()
	w, err = long.TryLock(e.ctx)
	require.NoError(t, err, "call: TryLock w after a expired")
	stale("expired writer, writer w holds", a, locker.ErrHeldByOther)
	untouched("expired writer, writer w holds", w)
	_, err = long.TryRLock(e.ctx)
	assert.ErrorIs(t, err, locker.ErrNotObtained, "call: TryRLock: w must still write")
	require.NoError(t, w.Unlock(e.ctx), "call: w.Unlock")
	assert.Empty(t, e.lockKeysLeft(), "call: keys under the prefix after every Unlock")
}

// argvRecorder records the KEYS and ARGV of every script call.
type argvRecorder struct {
	locker.Scripter
	mu    sync.Mutex
	calls []recordedCall
}

type recordedCall struct {
	sha        string
	keys, args []string
}

func (r *argvRecorder) record(sha string, keys, args []string) {
	r.mu.Lock()
	r.calls = append(r.calls, recordedCall{sha, append([]string(nil), keys...), append([]string(nil), args...)})
	r.mu.Unlock()
}

func (r *argvRecorder) EvalSha(ctx context.Context, sha string, keys, args []string) (any, error) {
	r.record(sha, keys, args)
	return r.Scripter.EvalSha(ctx, sha, keys, args)
}

func (r *argvRecorder) Eval(ctx context.Context, src string, keys, args []string) (any, error) {
	r.record(sha1hex(src), keys, args)
	return r.Scripter.Eval(ctx, src, keys, args)
}

func checkRWClock(t *testing.T, e *env) {
	rec := &argvRecorder{Scripter: e.s}
	c := e.clientOn(rec, nil)
	for _, ttl := range []time.Duration{locker.MinTTL, 1500 * time.Millisecond, time.Hour, 24 * time.Hour, locker.MaxTTL} {
		for _, opts := range []*locker.RWMutexOptions{nil, {Owner: "o-" + e.prefix}, {Owner: "r-" + e.prefix, Reentrant: true}} {
			name := "clock-" + ttl.String()
			rw := e.rw(c, name, ttl, opts)
			if ttl == locker.MinTTL { // leases that end at once: only the calls matter
				r, _ := rw.TryRLock(e.ctx)
				_, _ = r.TTL(e.ctx)
				_ = r.Extend(e.ctx, ttl)
				_ = r.Unlock(e.ctx)
				w, _ := rw.TryLock(e.ctx)
				if w != nil {
					_, _ = rw.Downgrade(e.ctx, w)
				}
				continue
			}
			r, err := rw.RLock(e.ctx)
			require.NoError(t, err, "call: RLock(%s, %+v)", name, opts)
			_, err = r.TTL(e.ctx)
			require.NoError(t, err, "call: TTL")
			require.NoError(t, r.Extend(e.ctx, ttl), "call: Extend")
			ctx, cancel := context.WithTimeout(e.ctx, 30*time.Millisecond)
			_, err = e.rw(c, name, ttl, nil).Lock(ctx) // waits behind r, gives up: its intent is dropped
			cancel()
			require.ErrorIs(t, err, locker.ErrNotObtained, "call: Lock behind a reader")
			require.NoError(t, r.Unlock(e.ctx), "call: Unlock")
			// Lock, not TryLock: the intent of the writer that gave up is
			// dropped in the background, maybe not yet.
			wctx, wcancel := context.WithTimeout(e.ctx, 5*time.Second)
			w, err := rw.Lock(wctx)
			wcancel()
			require.NoError(t, err, "call: Lock after the reader left")
			require.NoError(t, w.Unlock(e.ctx), "call: Unlock")
			w, err = rw.Lock(e.ctx)
			require.NoError(t, err, "call: Lock")
			d, err := rw.Downgrade(e.ctx, w)
			require.NoError(t, err, "call: Downgrade")
			require.NoError(t, d.Unlock(e.ctx), "call: Unlock")
		}
	}

	now := time.Now()
	windows := []struct {
		unit   string
		at, pm float64
	}{
		{"s", float64(now.Unix()), 86400},
		{"ms", float64(now.UnixMilli()), 86400e3},
		{"µs", float64(now.UnixMicro()), 86400e6},
		{"ns", float64(now.UnixNano()), 86400e9},
	}
	rec.mu.Lock()
	calls := append([]recordedCall(nil), rec.calls...)
	rec.mu.Unlock()
	scripts := map[string]bool{}
	for _, call := range calls {
		if len(call.keys) == 0 || !strings.HasSuffix(call.keys[0], ":rw") {
			continue
		}
		scripts[call.sha] = true
		for _, a := range call.args {
			x, err := strconv.ParseFloat(a, 64)
			if err != nil {
				continue
			}
			for _, w := range windows {
				if math.Abs(x-w.at) <= w.pm {
					t.Errorf("call: script %s keys %q: ARGV %q looks like the current Unix time in %s", call.sha, call.keys, a, w.unit)
				}
			}
		}
	}
	assert.GreaterOrEqual(t, len(scripts), 7, "call: distinct RW scripts seen (acquire read and write, release, extend, pttl, downgrade, cancel)")
}

func checkRWBadInput(t *testing.T, e *env) {
	c := e.client(nil)
	rw := e.rw(c, "bad-input", 10*time.Second, nil)
	w, err := rw.TryLock(e.ctx)
	require.NoError(t, err, "call: TryLock(bad-input)")
	r, err := e.rw(c, "bad-input-r", 10*time.Second, nil).TryRLock(e.ctx)
	require.NoError(t, err, "call: TryRLock(bad-input-r)")
	released, err := e.rw(c, "bad-input-x", 10*time.Second, nil).TryLock(e.ctx)
	require.NoError(t, err, "call: TryLock(bad-input-x)")
	require.NoError(t, released.Unlock(e.ctx), "call: Unlock(bad-input-x)")
	ml, err := e.mutex(c, "bad-input", 10*time.Second, nil).TryLock(e.ctx)
	require.NoError(t, err, "call: Mutex TryLock(bad-input)")

	newRW := func(name string, ttl time.Duration, opts *locker.RWMutexOptions) func() error {
		return func() error { _, err := c.NewRWMutex(name, ttl, opts); return err }
	}
	inputs := []struct {
		call string
		do   func() error
		want error
	}{
		{`NewRWMutex("")`, newRW("", time.Second, nil), locker.ErrInvalidName},
		{"NewRWMutex(MaxNameLen+1 bytes)", newRW(strings.Repeat("x", locker.MaxNameLen+1), time.Second, nil), locker.ErrInvalidName},
		{"NewRWMutex(ttl 0)", newRW("m", 0, nil), locker.ErrInvalidTTL},
		{"NewRWMutex(ttl -1s)", newRW("m", -time.Second, nil), locker.ErrInvalidTTL},
		{"NewRWMutex(ttl 999µs)", newRW("m", 999*time.Microsecond, nil), locker.ErrInvalidTTL},
		{"NewRWMutex(ttl MaxTTL+1ms)", newRW("m", locker.MaxTTL+time.Millisecond, nil), locker.ErrInvalidTTL},
		{"NewRWMutex(Reentrant without Owner)", newRW("m", time.Second, &locker.RWMutexOptions{Reentrant: true}), locker.ErrInvalidOption},
		{"NewRWMutex(Owner of MaxNameLen+1 bytes)", newRW("m", time.Second, &locker.RWMutexOptions{Owner: strings.Repeat("o", locker.MaxNameLen+1)}), locker.ErrInvalidOption},
		{"TryRLock(nil ctx)", func() error { _, err := rw.TryRLock(nilCtx); return err }, locker.ErrNilContext},
		{"RLock(nil ctx)", func() error { _, err := rw.RLock(nilCtx); return err }, locker.ErrNilContext},
		{"TryLock(nil ctx)", func() error { _, err := rw.TryLock(nilCtx); return err }, locker.ErrNilContext},
		{"Lock(nil ctx)", func() error { _, err := rw.Lock(nilCtx); return err }, locker.ErrNilContext},
		{"Downgrade(nil ctx)", func() error { _, err := rw.Downgrade(nilCtx, w); return err }, locker.ErrNilContext},
		{"RLock(cancelled ctx)", func() error {
			ctx, cancel := context.WithCancel(e.ctx)
			cancel()
			_, err := e.rw(c, "bad-input-c", time.Second, nil).RLock(ctx)
			return err
		}, context.Canceled},
		{"Lock(cancelled ctx)", func() error {
			ctx, cancel := context.WithCancel(e.ctx)
			cancel()
			_, err := e.rw(c, "bad-input-c", time.Second, nil).Lock(ctx)
			return err
		}, context.Canceled},
		{"Downgrade(nil lease)", func() error { _, err := rw.Downgrade(e.ctx, nil); return err }, locker.ErrInvalidOption},
		{"Downgrade(read lease)", func() error { _, err := rw.Downgrade(e.ctx, r); return err }, locker.ErrInvalidOption},
		{"Downgrade(lease of another name)", func() error { _, err := rw.Downgrade(e.ctx, released); return err }, locker.ErrInvalidOption},
		{"Downgrade(Mutex lease of the same name)", func() error { _, err := rw.Downgrade(e.ctx, ml); return err }, locker.ErrInvalidOption},
		{"Downgrade(released lease)", func() error {
			_, err := e.rw(c, "bad-input-x", 10*time.Second, nil).Downgrade(e.ctx, released)
			return err
		}, locker.ErrExpired},
		{"Extend(ttl 0) of a read lease", func() error { return r.Extend(e.ctx, 0) }, locker.ErrInvalidTTL},
		{"Unlock(nil ctx) of a read lease", func() error { return r.Unlock(nilCtx) }, locker.ErrNilContext},
		{"Extend after Unlock of a write lease", func() error { return released.Extend(e.ctx, time.Second) }, locker.ErrExpired},
		{"Unlock twice of a write lease", func() error { return released.Unlock(e.ctx) }, nil},
	}
	for _, in := range inputs {
		var err error
		func() {
			defer func() {
				if p := recover(); p != nil {
					t.Errorf("call: %s: panicked: %v", in.call, p)
				}
			}()
			err = in.do()
		}()
		if in.want == nil {
			assert.NoError(t, err, "call: %s", in.call)
			continue
		}
		assert.True(t, errors.Is(err, in.want), "call: %s: got %v, want an error matching %v", in.call, err, in.want)
	}
	ttl, err := w.TTL(e.ctx)
	require.NoError(t, err, "call: w.TTL() after the bad Downgrades: w is untouched")
	assert.Greater(t, ttl, 5*time.Second, "call: w.TTL()")
	for _, l := range []*locker.Lease{w, r, ml} {
		require.NoError(t, l.Unlock(e.ctx), "call: Unlock")
	}
	assert.Empty(t, e.lockKeysLeft(), "call: keys under the prefix after the bad inputs")
}

func checkRWUseAfterClose(t *testing.T, e *env) {
	c := e.client(nil)
	rw := e.rw(c, "closed", 10*time.Second, nil)
	r, err := rw.TryRLock(e.ctx)
	require.NoError(t, err, "call: TryRLock before Close")
	w, err := e.rw(c, "closed-w", 10*time.Second, nil).TryLock(e.ctx)
	require.NoError(t, err, "call: TryLock before Close")
	require.NoError(t, c.Close(), "call: Close")
	_, err = rw.TryRLock(e.ctx)
	assert.ErrorIs(t, err, locker.ErrClosed, "call: TryRLock after Close")
	_, err = rw.RLock(e.ctx)
	assert.ErrorIs(t, err, locker.ErrClosed, "call: RLock after Close")
	_, err = rw.TryLock(e.ctx)
	assert.ErrorIs(t, err, locker.ErrClosed, "call: TryLock after Close")
	_, err = rw.Lock(e.ctx)
	assert.ErrorIs(t, err, locker.ErrClosed, "call: Lock after Close")
	_, err = rw.Downgrade(e.ctx, w)
	assert.ErrorIs(t, err, locker.ErrClosed, "call: Downgrade after Close")
	_, err = c.NewRWMutex("other", time.Second, nil)
	assert.ErrorIs(t, err, locker.ErrClosed, "call: NewRWMutex after Close")
	assert.ErrorIs(t, r.Extend(e.ctx, time.Second), locker.ErrClosed, "call: read lease Extend after Close")
	_, err = r.TTL(e.ctx)
	assert.ErrorIs(t, err, locker.ErrClosed, "call: read lease TTL after Close")
	// Unlock is the one call that still works: it releases.
	assert.NoError(t, r.Unlock(e.ctx), "call: read lease Unlock after Close")
	assert.False(t, r.Valid(), "call: Valid() of the read lease unlocked after Close")
}

func checkRWTwoRoundTrips(t *testing.T, e *env) {
	cs := &countingScripter{Scripter: e.s}
	c := e.clientOn(cs, nil)
	rw := e.rw(c, "round-trips", 10*time.Second, nil)
	// Warm up: load the scripts.
	r, err := rw.TryRLock(e.ctx)
	require.NoError(t, err, "call: warm-up TryRLock")
	require.NoError(t, r.Unlock(e.ctx), "call: warm-up Unlock")
	w, err := rw.TryLock(e.ctx)
	require.NoError(t, err, "call: warm-up TryLock")
	require.NoError(t, w.Unlock(e.ctx), "call: warm-up Unlock")
	key := c.Key("round-trips") + ":rw"
	for _, write := range []bool{false, true} {
		what := "TryRLock+Unlock"
		if write {
			what = "TryLock+Unlock"
		}
		before := e.scriptCommandStats(key)
		cs.reset()
		var l *locker.Lease
		if write {
			l, err = rw.TryLock(e.ctx)
		} else {
			l, err = rw.TryRLock(e.ctx)
		}
		require.NoError(t, err, "call: %s: acquire", what)
		require.NoError(t, l.Unlock(e.ctx), "call: %s: Unlock", what)
		after := e.scriptCommandStats(key)
		evalsha, eval, load := cs.counts()
		assert.Equal(t, [3]int64{2, 0, 0}, [3]int64{evalsha, eval, load}, "call: %s: [EvalSha, Eval, ScriptLoad] calls through the Scripter", what)
		assert.Equal(t, int64(2), after["evalsha"]-before["evalsha"], "call: %s: server-side INFO commandstats delta of evalsha on the lock's node", what)
	}
}
