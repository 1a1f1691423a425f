package goredis_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/scriptlock/scriptlock/locker"
)

// A read-mostly cache in front of a slow source: many processes read the
// cached price under read leases at once; a refresh takes the write lock,
// which waits for the readers in and keeps new ones out meanwhile.
func Example_rwMutexRLock() {
	locks, closeAll := connect()
	defer closeAll()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()

	price := "9.99" // stands for the shared cache entry
	rw, err := locks.NewRWMutex("price:sku-42", 10*time.Second, nil)
	if err != nil {
		panic(err)
	}

	// Readers hold read leases at the same time.
	r1, _ := rw.RLock(ctx)
	r2, _ := rw.RLock(ctx)
	fmt.Println("two readers see", price)

	// A writer cannot get in while they read.
	_, err = rw.TryLock(ctx)
	fmt.Println("writer refused while reading:", errors.Is(err, locker.ErrNotObtained))
	_ = r1.Unlock(ctx)
	_ = r2.Unlock(ctx)

	// Refresh: Lock waits for the last reader, then excludes everyone.
	w, err := rw.Lock(ctx)
	if err != nil {
		fmt.Println("not locked:", err)
		return
	}
	price = "8.49" // store it along with w.Fence(), so a stale writer's store is rejected
	_ = w.Unlock(ctx)

	r, _ := rw.RLock(ctx)
	fmt.Println("reader sees", price, "with a fence not below the write's:", r.Fence() >= w.Fence())
	_ = r.Unlock(ctx)
	// Output:
	// two readers see 9.99
	// writer refused while reading: true
	// reader sees 8.49 with a fence not below the write's: true
}

// Rebuild an index under the write lock, then keep reading it without a gap
// in which another writer could change it.
func Example_rwMutexDowngrade() {
	locks, closeAll := connect()
	defer closeAll()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()

	rw, _ := locks.NewRWMutex("search-index", 30*time.Second, nil)
	w, err := rw.Lock(ctx)
	if err != nil {
		fmt.Println("not locked:", err)
		return
	}
	// ... rebuild the index ...

	r, err := rw.Downgrade(ctx, w) // atomically: no writer gets in between
	if err != nil {
		fmt.Println("downgrade:", err) // ErrExpired or ErrHeldByOther: the write lease was lost
		return
	}
	fmt.Println("read lease keeps the write fence:", r.Fence() == w.Fence())
	fmt.Println("write lease released:", w.Unlock(ctx) == nil && !w.Valid())

	other, _ := locks.NewRWMutex("search-index", 30*time.Second, nil)
	_, err = other.TryLock(ctx)
	fmt.Println("other writers wait:", errors.Is(err, locker.ErrNotObtained))
	reader, err := other.TryRLock(ctx)
	fmt.Println("other readers join:", err == nil)

	// ... serve queries from the fresh index ...
	_ = reader.Unlock(ctx)
	_ = r.Unlock(ctx)
	// Output:
	// read lease keeps the write fence: true
	// write lease released: true
	// other writers wait: true
	// other readers join: true
}
