package locker_test

// The background clean-ups of calls whose outcome is unknown (cleanup.go),
// through the public API with a fake Scripter: a clean-up is retried after
// a transient failure, stops on an answer from the server, is waited for by
// Client.Close (and cancelled after its grace), and a Claim of a key waits
// for the pending clean-up of an earlier Claim of it.

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/scriptlock/scriptlock/internal/leak"
	"github.com/scriptlock/scriptlock/locker"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// abandonAfterUnknown makes a TryLock whose acquire call fails with an
// unknown outcome, so that one abandon clean-up starts.
func abandonAfterUnknown(t *testing.T, c *locker.Client, f *fakeScripter) {
	t.Helper()
	f.fail(errBoom, "acquire")
	_, err := newMutex(t, c, "n", time.Second, nil).TryLock(testCtx(t))
	require.ErrorIs(t, err, errBoom)
}

func TestCleanupRetriesTransient(t *testing.T) {
	defer leak.VerifyNone(t, leak.IgnoreCurrent())
	c, f := newClient(t, nil)
	var tries atomic.Int32
	f.handle(func(context.Context, call) (any, error) {
		if tries.Add(1) <= 2 {
			return nil, errConn
		}
		return int64(1), nil
	}, "abandon")
	abandonAfterUnknown(t, c, f)
	require.NoError(t, c.Close())
	ab := f.runs("abandon")
	require.Len(t, ab, 3, "retried after two connection failures, until done")
	assert.Equal(t, ab[0].args, ab[2].args, "the same call each time")
}

func TestCleanupRetriesUnknown(t *testing.T) {
	defer leak.VerifyNone(t, leak.IgnoreCurrent())
	c, f := newClient(t, nil)
	var tries atomic.Int32
	var deadline atomic.Bool
	f.handle(func(ctx context.Context, _ call) (any, error) {
		if tries.Add(1) == 1 {
			_, ok := ctx.Deadline()
			deadline.Store(ok)
			<-ctx.Done() // a try that hangs: its own bound ends it
			return nil, ctx.Err()
		}
		return int64(1), nil
	}, "abandon")
	abandonAfterUnknown(t, c, f)
	require.NoError(t, c.Close())
	assert.True(t, deadline.Load(), "each try is bounded")
	assert.Len(t, f.runs("abandon"), 2, "a try that timed out is tried again")
}

// TestCleanupReachesSlowServer checks that a clean-up reaches a server
// whose round trip takes longer than a clean-up's first try: each try that
// timed out gets twice as long as the one before.
func TestCleanupReachesSlowServer(t *testing.T) {
	defer leak.VerifyNone(t, leak.IgnoreCurrent())
	c, f := newClient(t, nil)
	const trip = 1200 * time.Millisecond
	var mu sync.Mutex
	var bounds []time.Duration
	done := make(chan struct{})
	f.handle(func(ctx context.Context, _ call) (any, error) {
		d, _ := ctx.Deadline()
		mu.Lock()
		bounds = append(bounds, time.Until(d).Round(100*time.Millisecond))
		mu.Unlock()
		select {
		case <-time.After(trip):
			close(done)
			return int64(1), nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}, "abandon")
	abandonAfterUnknown(t, c, f)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the clean-up never reached the slow server")
	}
	require.NoError(t, c.Close())
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, bounds, 3, "tries bounded 500ms and 1s time out; the third, 2s, is answered")
	assert.Less(t, bounds[0], bounds[1], "a try after a timeout is longer")
	assert.Less(t, bounds[1], bounds[2], "a try after a timeout is longer")
}

func TestCleanupStopsOnAnswer(t *testing.T) {
	defer leak.VerifyNone(t, leak.IgnoreCurrent())
	c, f := newClient(t, nil)
	f.fail(errAnswered, "abandon")
	abandonAfterUnknown(t, c, f)
	require.NoError(t, c.Close())
	assert.Len(t, f.runs("abandon"), 1, "the server answered: not retried")
}

func TestCleanupRunsAfterCallerCtx(t *testing.T) {
	defer leak.VerifyNone(t, leak.IgnoreCurrent())
	c, f := newClient(t, nil)
	var cleanupCtxErr atomic.Value
	f.handle(func(ctx context.Context, _ call) (any, error) {
		cleanupCtxErr.Store(ctx.Err() == nil)
		return int64(1), nil
	}, "abandon")
	ctx, cancel := context.WithCancel(context.Background())
	f.handle(cancelOn(cancel), "acquire")
	_, err := newMutex(t, c, "n", time.Second, nil).TryLock(ctx)
	require.ErrorIs(t, err, context.Canceled)
	require.NoError(t, c.Close())
	require.Len(t, f.runs("abandon"), 1)
	assert.Equal(t, true, cleanupCtxErr.Load(), "the clean-up does not run under the caller's ended context")
}

// TestCloseWaitsForCleanup checks that Close returns only after a clean-up
// in flight has ended, when it ends within Close's grace.
func TestCloseWaitsForCleanup(t *testing.T) {
	defer leak.VerifyNone(t, leak.IgnoreCurrent())
	c, f := newClient(t, nil)
	started, proceed := make(chan struct{}), make(chan struct{})
	var startOnce sync.Once
	var finished atomic.Bool
	var ctxOK atomic.Bool
	f.handle(func(ctx context.Context, _ call) (any, error) {
		startOnce.Do(func() { close(started) })
		<-proceed
		ctxOK.Store(ctx.Err() == nil)
		finished.Store(true)
		return int64(1), nil
	}, "abandon")
	abandonAfterUnknown(t, c, f)
	<-started
	closed := make(chan struct{})
	go func() { _ = c.Close(); close(closed) }()
	// Close has started once the Client refuses new work.
	require.Eventually(t, func() bool {
		_, err := c.NewMutex("other", time.Second, nil)
		return err != nil
	}, 5*time.Second, time.Millisecond)
	select {
	case <-closed:
		t.Fatal("Close returned while a clean-up was in flight")
	default:
	}
	close(proceed)
	<-closed
	assert.True(t, finished.Load(), "Close returned after the clean-up ended")
	assert.True(t, ctxOK.Load(), "a clean-up that ends within the grace is not cancelled")
	assert.Len(t, f.runs("abandon"), 1)
}

// TestCloseCancelsCleanupAfterGrace checks that Close does not wait for a
// clean-up that does not end: after its grace it cancels it, and no
// goroutine is left.
func TestCloseCancelsCleanupAfterGrace(t *testing.T) {
	defer leak.VerifyNone(t, leak.IgnoreCurrent())
	c, f := newClient(t, nil)
	var (
		mu   sync.Mutex
		errs []error
	)
	f.handle(func(ctx context.Context, _ call) (any, error) {
		<-ctx.Done()
		mu.Lock()
		errs = append(errs, context.Cause(ctx))
		mu.Unlock()
		return nil, ctx.Err()
	}, "abandon")
	abandonAfterUnknown(t, c, f)
	require.NoError(t, c.Close())
	mu.Lock()
	defer mu.Unlock()
	require.NotEmpty(t, errs)
	assert.ErrorIs(t, errs[len(errs)-1], context.Canceled, "the last try was cancelled by Close")
	n := len(f.runs("abandon"))
	assert.Equal(t, len(errs), n, "no try is left running")
}

// TestNoCleanupAfterClose checks that a call whose outcome is unknown after
// Close (Unlock is the one call allowed) starts no clean-up.
func TestNoCleanupAfterClose(t *testing.T) {
	defer leak.VerifyNone(t, leak.IgnoreCurrent())
	c, f := newClient(t, nil)
	l, err := newMutex(t, c, "n", time.Second, nil).TryLock(testCtx(t))
	require.NoError(t, err)
	require.NoError(t, c.Close())
	f.fail(errBoom, "release")
	require.ErrorIs(t, l.Unlock(testCtx(t)), errBoom)
	assert.False(t, l.Valid(), "the lease ended")
	assert.Len(t, f.runs("release"), 1, "no background retry after Close")
}

// TestClaimAwaitsCleanup checks that a Claim of a key waits for the pending
// clean-up of an earlier Claim of it on the same Client, bounded by its
// context, and that other keys do not wait.
func TestClaimAwaitsCleanup(t *testing.T) {
	defer leak.VerifyNone(t, leak.IgnoreCurrent())
	c, f := newClient(t, nil)
	started, proceed := make(chan struct{}), make(chan struct{})
	var startOnce sync.Once
	f.handle(func(ctx context.Context, _ call) (any, error) {
		startOnce.Do(func() { close(started) })
		select {
		case <-proceed:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return int64(1), nil
	}, "unclaim")

	ctx, cancel := context.WithCancel(context.Background())
	f.handle(cancelOn(cancel), "claim")
	_, err := c.Claim(ctx, "k", time.Minute)
	require.ErrorIs(t, err, context.Canceled)
	f.handle(nil, "claim")
	<-started

	// While the clean-up is pending, a Claim of the same key waits; its
	// context ends first, and it sends nothing.
	short, cancelShort := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancelShort()
	_, err = c.Claim(short, "k", time.Minute)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	_, err = c.ClaimAs(short, "k", "tok", time.Minute)
	require.ErrorIs(t, err, context.DeadlineExceeded, "ClaimAs waits too")
	assert.Len(t, f.runs("claim"), 1, "no claim sent while the clean-up is pending")

	// Another key does not wait.
	first, err := c.Claim(testCtx(t), "other", time.Minute)
	require.NoError(t, err)
	assert.True(t, first)

	// Once the clean-up has ended, the Claim goes ahead.
	got := make(chan error, 1)
	go func() {
		_, err := c.Claim(testCtx(t), "k", time.Minute)
		got <- err
	}()
	close(proceed)
	require.NoError(t, <-got)
	cl, un := f.runs("claim"), f.runs("unclaim")
	require.Len(t, cl, 3)
	require.Len(t, un, 1)
	assert.Equal(t, []string{cl[0].args[0], "30000"}, un[0].args, "the clean-up is of the first Claim")
	assert.Equal(t, cl[0].keys, cl[2].keys)
	require.NoError(t, c.Close())
}
