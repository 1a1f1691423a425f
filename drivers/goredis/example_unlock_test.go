package goredis_test

// The "Using a lock" pattern of docs/guide.md, run as written, as an
// example and with an ended context: internal/readme's test checks that
// handleInvoice below is the guide's block verbatim.

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/scriptlock/scriptlock/drivers/goredis"
	"github.com/scriptlock/scriptlock/locker"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// handleInvoice runs write under the lock of one invoice. write is the
// protected operation: pass it the fence, and have the resource reject
// fences older than the last one it saw.
func handleInvoice(ctx context.Context, locks *locker.Client, id string, write func(fence int64) error) error {
	m, err := locks.NewMutex("invoice:"+id, 10*time.Second, nil)
	if err != nil {
		return err // ErrInvalidName or ErrInvalidTTL: nothing was sent
	}
	lease, err := m.Lock(ctx) // blocks until acquired or ctx is done
	if err != nil {
		return err // errors.Is(err, locker.ErrNotObtained) && errors.Is(err, ctx.Err())
	}
	// Unlock with the same ctx, even if it has ended by then (the request
	// was cancelled or timed out): an Unlock that cannot reach Redis ends
	// the lease at once and releases the lock in the background.
	defer lease.Unlock(ctx)
	return write(lease.Fence())
}

// awaitMutexFree polls TryLock until the lock name is free and reports whether
// it was within limit (the lock's TTL is 10s: freed sooner means released,
// not expired).
func awaitMutexFree(locks *locker.Client, name string, limit time.Duration) bool {
	m, err := locks.NewMutex(name, time.Second, nil)
	if err != nil {
		panic(err)
	}
	for end := time.Now().Add(limit); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		l, err := m.TryLock(context.Background())
		if err == nil {
			_ = l.Unlock(context.Background())
			return true
		}
	}
	return false
}

// The request's context ends while the lock is held: the deferred
// Unlock(ctx) cannot reach Redis with it, ends the lease at once and
// releases the lock in the background, long before its 10s TTL.
func Example_leaseUnlock() {
	locks, closeAll := connect()
	defer closeAll()
	ctx, cancel := context.WithCancel(context.Background()) // a request's context

	err := handleInvoice(ctx, locks, "1001", func(fence int64) error {
		cancel() // the client went away mid-request
		return ctx.Err()
	})
	fmt.Println("handleInvoice:", err)
	fmt.Println("free well before the TTL:", awaitMutexFree(locks, "invoice:1001", 5*time.Second))
	// Output:
	// handleInvoice: context canceled
	// free well before the TTL: true
}

// TestDeferredUnlockWithEndedContext runs handleInvoice with a request
// context that ends while the lock is held (cancelled, or past its
// deadline): the deferred Unlock(ctx) frees the lock long before its TTL.
func TestDeferredUnlockWithEndedContext(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = rdb.Close() })
	locks, err := locker.New(goredis.New(rdb), &locker.Options{Prefix: "ended-ctx-test:"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = locks.Close() })
	for _, tc := range []struct {
		what string
		ctx  func() (context.Context, context.CancelFunc)
		end  func(cancel context.CancelFunc)
	}{
		{"cancelled", func() (context.Context, context.CancelFunc) { return context.WithCancel(context.Background()) },
			func(cancel context.CancelFunc) { cancel() }},
		{"deadline passed", func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 200*time.Millisecond)
		}, func(context.CancelFunc) { time.Sleep(300 * time.Millisecond) }},
	} {
		t.Run(tc.what, func(t *testing.T) {
			ctx, cancel := tc.ctx()
			defer cancel()
			id := "ended-" + tc.what
			err := handleInvoice(ctx, locks, id, func(fence int64) error {
				st, err := locks.Inspect(context.Background(), "invoice:"+id)
				require.NoError(t, err)
				require.True(t, st.Mutex.Held, "held while write runs")
				require.Equal(t, fence, st.Mutex.Fence)
				tc.end(cancel)
				require.Error(t, ctx.Err(), "the request's context has ended before Unlock")
				return ctx.Err()
			})
			assert.True(t, errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded), "handleInvoice: %v", err)
			require.Eventually(t, func() bool {
				st, err := locks.Inspect(context.Background(), "invoice:"+id)
				return err == nil && !st.Mutex.Held
			}, 5*time.Second, 5*time.Millisecond, "the lock (TTL 10s) is free soon after the deferred Unlock(ctx) with an ended ctx")
			assert.True(t, awaitMutexFree(locks, "invoice:"+id, time.Second), "another owner takes the lock")
		})
	}
}
