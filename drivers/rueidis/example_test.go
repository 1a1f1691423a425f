package rueidis_test

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/rueidis"

	rueidisdriver "github.com/scriptlock/scriptlock/drivers/rueidis"
	"github.com/scriptlock/scriptlock/locker"
)

// The quick start: wrap the rueidis client you already have; a Cluster or
// Sentinel client works the same. The driver's package shares the upstream
// name, so one of them is imported under another.
func Example() {
	client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{redisAddr}})
	if err != nil {
		panic(err)
	}
	defer client.Close()
	locks, err := locker.New(rueidisdriver.New(client), nil)
	if err != nil {
		panic(err)
	}
	defer locks.Close()

	ctx := context.Background()
	m, _ := locks.NewMutex("rueidis-example", 10*time.Second, nil)
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
