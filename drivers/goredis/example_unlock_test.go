package goredis_test

// The "Using a lock" pattern of docs/guide.md, run as written: internal/readme's
// test checks that handleInvoice below is the guide's block verbatim.

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/scriptlock/scriptlock/drivers/goredis"
	"github.com/scriptlock/scriptlock/locker"
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
	rdb := redis.NewClient(&redis.Options{Addr: os.Getenv("REDIS_ADDR"), ContextTimeoutEnabled: true}) // "" is localhost:6379
	defer rdb.Close()
	locks, err := locker.New(goredis.New(rdb), nil)
	if err != nil {
		panic(err)
	}
	defer locks.Close()
	ctx, cancel := context.WithCancel(context.Background()) // a request's context

	err = handleInvoice(ctx, locks, "1001", func(fence int64) error {
		cancel() // the client went away mid-request
		return ctx.Err()
	})
	fmt.Println("handleInvoice:", err)
	fmt.Println("free well before the TTL:", awaitMutexFree(locks, "invoice:1001", 5*time.Second))
	// Output:
	// handleInvoice: context canceled
	// free well before the TTL: true
}
