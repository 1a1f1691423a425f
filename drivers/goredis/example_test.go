package goredis_test

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/scriptlock/scriptlock/drivers/goredis"
	"github.com/scriptlock/scriptlock/locker"
)

// The quick start: wrap the go-redis client you already have. A
// *redis.ClusterClient, *redis.Ring or redis.UniversalClient works the same.
func Example() {
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr, ContextTimeoutEnabled: true})
	defer rdb.Close()
	locks, err := locker.New(goredis.New(rdb), nil)
	if err != nil {
		panic(err)
	}
	defer locks.Close()

	ctx := context.Background()
	m, _ := locks.NewMutex("goredis-example", 10*time.Second, nil)
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
