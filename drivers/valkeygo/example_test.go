package valkeygo_test

import (
	"context"
	"fmt"
	"time"

	"github.com/valkey-io/valkey-go"

	"github.com/scriptlock/scriptlock/drivers/valkeygo"
	"github.com/scriptlock/scriptlock/locker"
)

// The quick start: wrap the valkey-go client you already have; a Cluster
// or Sentinel client works the same.
func Example() {
	client, err := valkey.NewClient(valkey.ClientOption{InitAddress: []string{redisAddr}, DisableCache: true})
	if err != nil {
		panic(err)
	}
	defer client.Close()
	locks, err := locker.New(valkeygo.New(client), nil)
	if err != nil {
		panic(err)
	}
	defer locks.Close()

	ctx := context.Background()
	m, _ := locks.NewMutex("valkeygo-example", 10*time.Second, nil)
	lease, err := m.Lock(ctx)
	if err != nil {
		panic(err)
	}
	fmt.Println("fenced:", lease.Fence() > 0)
	fmt.Println("unlock:", lease.Unlock(ctx))
	// Output:
	// fenced: true
	// unlock: <nil>
}
