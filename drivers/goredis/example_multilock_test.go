package goredis_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/scriptlock/scriptlock/locker"
)

// Move money between two accounts under the locks of both, taken as one:
// two transfers in opposite directions never deadlock, and a plain Mutex of
// either account is excluded while the transfer runs.
func Example_multiLock() {
	locks, closeAll := connect()
	defer closeAll()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()

	transfer, err := locks.NewMultiLock([]string{"account:bob", "account:alice"}, 10*time.Second, nil)
	if err != nil {
		panic(err)
	}
	lease, err := transfer.Lock(ctx)
	if err != nil {
		fmt.Println("not locked:", err)
		return
	}
	fmt.Println("holds", transfer.Names())

	single, _ := locks.NewMutex("account:alice", 10*time.Second, nil)
	_, err = single.TryLock(ctx)
	fmt.Println("alice's own lock is taken:", errors.Is(err, locker.ErrNotObtained))

	// Each part has its own fence, for the resource of that name.
	for _, p := range lease.Parts() {
		_ = p.Fence()
	}
	_ = lease.Unlock(ctx)
	l, err := single.TryLock(ctx)
	fmt.Println("free after Unlock:", err == nil)
	_ = l.Unlock(ctx)
	// Output:
	// holds [account:alice account:bob]
	// alice's own lock is taken: true
	// free after Unlock: true
}
