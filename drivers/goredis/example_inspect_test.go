package goredis_test

import (
	"context"
	"fmt"
	"time"

	"github.com/scriptlock/scriptlock/locker"
)

func Example_clientInspect() {
	locks, closeAll := connect()
	defer closeAll()
	ctx := context.Background()

	m, err := locks.NewMutex("report:inspect", time.Minute, nil)
	if err != nil {
		panic(err)
	}
	lease, err := m.TryLock(ctx)
	if err != nil {
		panic(err)
	}
	defer lease.Unlock(ctx)

	st, err := locks.Inspect(ctx, "report:inspect")
	if err != nil {
		panic(err)
	}
	fmt.Println("held:", st.Mutex.Held, "holds:", st.Mutex.Holds)
	fmt.Println("fence is the lease's:", st.Mutex.Fence == lease.Fence())
	fmt.Println("ttl at most a minute:", st.Mutex.TTL > 0 && st.Mutex.TTL <= time.Minute)
	// Owners appear as fingerprints, never as their token.
	fmt.Println("owner is the lease's fingerprint:", st.Mutex.Owner == locker.Fingerprint(lease.Token()))
	fmt.Println("queued:", st.Mutex.Queue, "readers:", st.RW.Readers, "writer:", st.RW.Writer)
	// Output:
	// held: true holds: 1
	// fence is the lease's: true
	// ttl at most a minute: true
	// owner is the lease's fingerprint: true
	// queued: 0 readers: 0 writer: false
}
