package goredis_test

import (
	"context"
	"fmt"
	"time"
)

// A singleton worker: every instance campaigns; the leader works under
// its term's Context, which ends when leadership is lost, and resigns
// when done, handing leadership to the next instance at once.
func Example_election() {
	locks, closeAll := connect()
	defer closeAll()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()

	work := func(ctx context.Context, who string) {
		select {
		case <-ctx.Done(): // leadership lost: stop at once
		case <-time.After(10 * time.Millisecond): // stands for the scheduler's work
		}
	}
	run := func(who string, done chan<- int64) {
		el, err := locks.NewElection("scheduler", 10*time.Second, nil)
		if err != nil {
			panic(err)
		}
		term, err := el.Campaign(ctx, who)
		if err != nil {
			fmt.Println("not elected:", err)
			return
		}
		work(term.Context(), who)
		_ = el.Resign(ctx)
		done <- term.Fence()
	}

	watcher, _ := locks.NewElection("scheduler", 10*time.Second, nil)
	first := make(chan int64)
	go run("instance-1", first)
	t1 := <-first
	second := make(chan int64)
	go run("instance-2", second)
	t2 := <-second
	fmt.Println("terms increase:", t2 > t1)
	_, err := watcher.Leader(ctx)
	fmt.Println("leader after both resigned:", err)
	// Output:
	// terms increase: true
	// leader after both resigned: locker: no leader: "scheduler"
}
