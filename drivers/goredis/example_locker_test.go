package goredis_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/scriptlock/scriptlock/drivers/goredis"
	"github.com/scriptlock/scriptlock/locker"
)

// connect is how the examples reach Redis: a go-redis client of the Redis at
// $REDIS_ADDR (localhost:6379 when it is empty) wrapped in a locker.Client,
// as in Example; any driver works the same way. closeAll closes both.
// TestMain calls setupExamples, which starts the servers they run against.
func connect() (locks *locker.Client, closeAll func()) {
	rdb := redis.NewClient(&redis.Options{Addr: os.Getenv("REDIS_ADDR"), ContextTimeoutEnabled: true})
	locks, err := locker.New(goredis.New(rdb), nil)
	if err != nil {
		panic(err)
	}
	return locks, func() {
		locks.Close()
		rdb.Close()
	}
}

func Example_mutexLock() {
	locks, closeAll := connect()
	defer closeAll()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()

	m, err := locks.NewMutex("report:2026-11", 10*time.Second, nil)
	if err != nil {
		panic(err)
	}
	lease, err := m.Lock(ctx) // waits while someone else holds it
	if err != nil {
		fmt.Println("not locked:", err)
		return
	}
	fmt.Println("locked, fence > 0:", lease.Fence() > 0, "valid:", lease.Valid())
	// ... write to the resource, passing lease.Fence() along ...
	fmt.Println("unlock:", lease.Unlock(ctx))
	// Output:
	// locked, fence > 0: true valid: true
	// unlock: <nil>
}

func Example_mutexTryLock() {
	locks, closeAll := connect()
	defer closeAll()
	ctx := context.Background()

	m, _ := locks.NewMutex("nightly-job", time.Minute, nil)
	first, err := m.TryLock(ctx)
	fmt.Println("first:", err)
	_, err = m.TryLock(ctx)
	fmt.Println("second gets ErrNotObtained:", errors.Is(err, locker.ErrNotObtained))
	_ = first.Unlock(ctx)
	// Output:
	// first: <nil>
	// second gets ErrNotObtained: true
}

func Example_leaseExtend() {
	locks, closeAll := connect()
	defer closeAll()
	ctx := context.Background()

	m, _ := locks.NewMutex("long-task", 2*time.Second, nil)
	lease, _ := m.TryLock(ctx)
	defer lease.Unlock(ctx)

	// The work takes longer than planned: push the expiry back.
	if err := lease.Extend(ctx, time.Minute); err != nil {
		// ErrExpired or ErrHeldByOther: the lock was lost; stop working.
		fmt.Println("lost:", err)
		return
	}
	ttl, _ := lease.TTL(ctx)
	fmt.Println("ttl over 50s:", ttl > 50*time.Second)
	// Output:
	// ttl over 50s: true
}

func Example_clientClaim() {
	locks, closeAll := connect()
	defer closeAll()
	ctx := context.Background()

	// Several workers receive the same message; only the first pushes it on.
	msgID := fmt.Sprintf("%x", time.Now().UnixNano()) // the message's own id
	for worker := range 3 {
		first, err := locks.Claim(ctx, "msg-pushed:"+msgID, time.Minute)
		if err != nil {
			panic(err)
		}
		fmt.Printf("worker %d first: %v\n", worker, first)
	}
	// Output:
	// worker 0 first: true
	// worker 1 first: false
	// worker 2 first: false
}

func Example_mutexOptionsReentrant() {
	locks, closeAll := connect()
	defer closeAll()
	ctx := context.Background()

	opts := &locker.MutexOptions{Owner: "order-service/job-17", Reentrant: true}
	m, _ := locks.NewMutex("order:17", time.Minute, opts)
	outer, _ := m.Lock(ctx)
	inner, _ := m.Lock(ctx) // same owner: a second hold, same fence
	fmt.Println("same fence:", outer.Fence() == inner.Fence())
	_ = inner.Unlock(ctx)

	other, _ := locks.NewMutex("order:17", time.Minute, nil)
	_, err := other.TryLock(ctx)
	fmt.Println("still held after one unlock:", errors.Is(err, locker.ErrNotObtained))
	_ = outer.Unlock(ctx)
	l, err := other.TryLock(ctx)
	fmt.Println("free after the last unlock:", err == nil)
	_ = l.Unlock(ctx)
	// Output:
	// same fence: true
	// still held after one unlock: true
	// free after the last unlock: true
}
