package goredis_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/scriptlock/scriptlock/drivers/goredis"
	"github.com/scriptlock/scriptlock/locker"
)

// One lock across three independent Redis deployments, granted on a
// majority: losing one deployment (a crash, a failover that forgot the
// grant) cannot give the lock to a second holder.
func Example_quorum() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// REDIS_QUORUM_ADDRS names three independent deployments:
	// "host:port,host:port,host:port".
	var deployments []*locker.Client
	for _, addr := range strings.Split(os.Getenv("REDIS_QUORUM_ADDRS"), ",") {
		rdb := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
		defer rdb.Close()
		locks, err := locker.New(goredis.New(rdb), nil)
		if err != nil {
			panic(err)
		}
		defer locks.Close()
		deployments = append(deployments, locks)
	}

	q, err := locker.NewQuorum(deployments, "nightly-billing", 30*time.Second, nil)
	if err != nil {
		panic(err)
	}
	lease, err := q.Lock(ctx)
	if err != nil {
		fmt.Println("not locked:", err)
		return
	}
	// Granted as soon as a majority granted: a slower deployment's part
	// joins the lease a moment later.
	fmt.Println("granted on a majority:", len(lease.Parts()) >= q.Need(), "need", q.Need())
	_, err = q.TryLock(ctx)
	fmt.Println("a second holder is refused:", errors.Is(err, locker.ErrNotObtained))
	// Pass lease.Fences() to the resource: it keeps the largest fence it
	// saw per deployment and refuses a request whose fence on any
	// deployment is not larger.
	fmt.Println("one fence per deployment:", len(lease.Fences()))
	_ = lease.Unlock(ctx)
	// Output:
	// granted on a majority: true need 2
	// a second holder is refused: true
	// one fence per deployment: 3
}

// Grants that survive a failover: every call that writes waits until one
// replica has the write (WAIT, on the same connection) before it succeeds.
func Example_ack() {
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"127.0.0.1:7000"}, ContextTimeoutEnabled: true})
	defer rdb.Close()
	locks, err := locker.New(goredis.New(rdb), &locker.Options{
		Ack: &locker.Ack{Replicas: 1, Timeout: 500 * time.Millisecond},
	})
	if err != nil {
		panic(err) // ErrInvalidOption: this driver cannot acknowledge
	}
	defer locks.Close()
	m, _ := locks.NewMutex("invoice:42", 10*time.Second, nil)
	lease, err := m.TryLock(context.Background())
	var ae *locker.AckError
	switch {
	case errors.As(err, &ae):
		// No replica acknowledged within 500ms: the grant is undone.
		fmt.Println("not acknowledged:", ae.Got.Replicas, "replicas")
	case err != nil:
		fmt.Println("not locked:", err)
	default:
		defer lease.Unlock(context.Background())
		// ... the grant is on a replica too ...
	}
}
