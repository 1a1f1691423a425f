package redigo_test

import (
	"context"
	"fmt"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/scriptlock/scriptlock/drivers/redigo"
	"github.com/scriptlock/scriptlock/locker"
)

// The quick start: wrap the redigo pool you already have. For Redis
// Cluster, wrap a *redisc.Cluster with redigo.NewCluster instead.
func Example() {
	pool := &redis.Pool{
		MaxIdle: 8,
		DialContext: func(ctx context.Context) (redis.Conn, error) {
			return redis.DialContext(ctx, "tcp", redisAddr)
		},
	}
	defer pool.Close()
	locks, err := locker.New(redigo.New(pool), nil)
	if err != nil {
		panic(err)
	}
	defer locks.Close()

	ctx := context.Background()
	m, _ := locks.NewMutex("redigo-example", 10*time.Second, nil)
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
