package goredis_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/scriptlock/scriptlock/internal/redislog"
	"github.com/scriptlock/scriptlock/internal/redisserver"
)

// redisAddr is the redis-server TestMain starts for the runnable examples.
var redisAddr string

// TestMain starts the redis-server of the examples, and the three more of
// the quorum example (see setupExamples). go-redis's log messages are
// counted, not shown: one summary line at the end.
func TestMain(m *testing.M) {
	logs := new(redislog.Counter)
	redis.SetLogger(logs)
	redisserver.Main(runFunc(func() int {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		stopExamples, err := setupExamples(ctx, redisAddr)
		cancel()
		if err != nil {
			fmt.Fprintln(os.Stderr, "goredis examples: starting the quorum example's redis-servers:", err)
			return 1
		}
		defer stopExamples()
		return logs.After(m).Run()
	}), "goredis examples", &redisAddr, nil)
}

// runFunc is a redisserver.Runner made of a function.
type runFunc func() int

func (f runFunc) Run() int { return f() }

// setupExamples points the examples at servers of this test binary:
// REDIS_ADDR at addr, TestMain's server, and REDIS_QUORUM_ADDRS at three
// more (redisserver.Launch: the one SCRIPTLOCK_REDIS_ADDR names, if set).
// It returns what stops them.
func setupExamples(ctx context.Context, addr string) (stop func(), err error) {
	var addrs []string
	var stops []func()
	stop = func() {
		for _, s := range stops {
			s()
		}
	}
	for range 3 {
		srv, s, err := redisserver.Launch(ctx)
		if err != nil {
			stop()
			return nil, err
		}
		addrs, stops = append(addrs, srv.Addr), append(stops, s)
	}
	os.Setenv("REDIS_ADDR", addr)
	os.Setenv("REDIS_QUORUM_ADDRS", strings.Join(addrs, ","))
	return stop, nil
}
