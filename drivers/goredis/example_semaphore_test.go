package goredis_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/scriptlock/scriptlock/locker"
)

// Limit the calls to a rate-limited partner API to 3 at a time across every
// process: each call takes a permit for as long as it runs. A process that
// crashes mid-call gives its permit back after the TTL.
func Example_semaphore() {
	locks, closeAll := connect()
	defer closeAll()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()

	api, err := locks.NewSemaphore("partner-api", 3, 30*time.Second, nil)
	if err != nil {
		panic(err)
	}
	// A batch job takes two permits, a request one.
	batch, err := api.Acquire(ctx, 2)
	if err != nil {
		fmt.Println("not acquired:", err)
		return
	}
	req, _ := api.Acquire(ctx, 1)
	_, err = api.TryAcquire(ctx, 1)
	fmt.Println("a fourth call waits:", errors.Is(err, locker.ErrNotObtained))
	fmt.Println("fences increase:", req.Fence() > batch.Fence())

	// Lower the limit for every client while the partner is degraded: the
	// calls in flight finish, no new one starts until fewer than 1 run.
	_ = api.SetPermits(ctx, 1)
	_ = batch.Unlock(ctx)
	_, err = api.TryAcquire(ctx, 1)
	fmt.Println("limit 1, one call running, a new one refused:", errors.Is(err, locker.ErrNotObtained))
	_ = req.Unlock(ctx)
	_ = api.SetPermits(ctx, 0) // back to each client's own limit, 3

	l, _ := api.Acquire(ctx, 3)
	fmt.Println("all three permits at once:", l.Valid())
	_ = l.Unlock(ctx)
	// Output:
	// a fourth call waits: true
	// fences increase: true
	// limit 1, one call running, a new one refused: true
	// all three permits at once: true
}
