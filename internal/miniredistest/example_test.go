package miniredistest_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/scriptlock/scriptlock/drivers/goredis"
	"github.com/scriptlock/scriptlock/locker"
)

// chargeOnce is the code under test: it charges an invoice under the
// invoice's lock, passing the fence on, and reports false, charging
// nothing, when another process holds the lock.
func chargeOnce(ctx context.Context, locks *locker.Client, id string, charge func(fence int64)) (bool, error) {
	m, err := locks.NewMutex("invoice:"+id, 30*time.Second, nil)
	if err != nil {
		return false, err
	}
	lease, err := m.TryLock(ctx)
	if errors.Is(err, locker.ErrNotObtained) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer lease.Unlock(ctx)
	charge(lease.Fence())
	return true, nil
}

// Unit-testing your own code that takes a scriptlock lock, on miniredis
// (github.com/alicebob/miniredis/v2): an in-process fake, no redis-server
// needed. In a test, start it with miniredis.RunT(t). Key TTLs there move
// only when the test calls FastForward, so a lock's expiry is as
// deterministic as the test wants it.
func Example_miniredis() {
	mr := miniredis.NewMiniRedis()
	if err := mr.Start(); err != nil {
		panic(err)
	}
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr(), ContextTimeoutEnabled: true})
	defer rdb.Close()
	locks, err := locker.New(goredis.New(rdb), nil)
	if err != nil {
		panic(err)
	}
	defer locks.Close()
	ctx := context.Background()
	charge := func(fence int64) {}

	ok, err := chargeOnce(ctx, locks, "42", charge)
	fmt.Println("charged:", ok, err)

	// Another process took the lock and crashed without unlocking it.
	crashed, _ := locks.NewMutex("invoice:42", 30*time.Second, nil)
	if _, err := crashed.TryLock(ctx); err != nil {
		panic(err)
	}
	ok, err = chargeOnce(ctx, locks, "42", charge)
	fmt.Println("while another holds the lock:", ok, err)

	// Its lock expires once its 30 s TTL has passed: in miniredis, when
	// the test says so.
	mr.FastForward(30 * time.Second)
	ok, err = chargeOnce(ctx, locks, "42", charge)
	fmt.Println("after its TTL:", ok, err)

	fmt.Println("keys left:", mr.Keys())
	// Output:
	// charged: true <nil>
	// while another holds the lock: false <nil>
	// after its TTL: true <nil>
	// keys left: []
}
