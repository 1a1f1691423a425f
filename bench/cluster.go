package bench

import (
	"context"
	"testing"
	"time"

	redigo "github.com/gomodule/redigo/redis"
	"github.com/mna/redisc"
	goredis "github.com/redis/go-redis/v9"

	goredisdriver "github.com/scriptlock/scriptlock/drivers/goredis"
	redigodriver "github.com/scriptlock/scriptlock/drivers/redigo"
	rueidisdriver "github.com/scriptlock/scriptlock/drivers/rueidis"
	valkeygodriver "github.com/scriptlock/scriptlock/drivers/valkeygo"
	"github.com/scriptlock/scriptlock/locker"
)

// ClusterTargets returns the rows run on a Redis Cluster whose seed
// addresses are addrs: scriptlock on each driver, lock-unlock with 1 and
// with 64 clients (64 lock names, whose hash tags spread them over the
// masters). Clients are built as in clients.go, for a Cluster.
func ClusterTargets(addrs []string) []Target {
	var ts []Target
	for _, d := range Drivers {
		one := func(tb testing.TB) Locker {
			return Scriptlock(newClient(tb, clusterScripter(tb, d, addrs), nil))
		}
		ts = append(ts, Target{Lib: "scriptlock", Driver: d, Scenarios: Uncontended(),
			New: func(tb testing.TB, _ string) (Locker, Locker) { return one(tb), one(tb) }})
	}
	return ts
}

// clusterScripter builds driver d's Scripter for the Cluster at addrs.
func clusterScripter(tb testing.TB, d string, addrs []string) locker.Scripter {
	switch d {
	case "goredis":
		c := goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: addrs, ContextTimeoutEnabled: true, PoolSize: 128})
		tb.Cleanup(func() { _ = c.Close() })
		return goredisdriver.New(c)
	case "redigo":
		c := &redisc.Cluster{
			StartupNodes: addrs,
			DialOptions:  []redigo.DialOption{redigo.DialConnectTimeout(5 * time.Second)},
			CreatePool: func(addr string, opts ...redigo.DialOption) (*redigo.Pool, error) {
				return &redigo.Pool{
					MaxIdle:     128,
					IdleTimeout: time.Minute,
					DialContext: func(ctx context.Context) (redigo.Conn, error) {
						return redigo.DialContext(ctx, "tcp", addr, opts...)
					},
				}, nil
			},
		}
		if err := c.Refresh(); err != nil {
			tb.Fatalf("redisc: Refresh(%v): %v", addrs, err)
		}
		tb.Cleanup(func() { _ = c.Close() })
		return redigodriver.NewCluster(c)
	case "rueidis":
		return rueidisdriver.New(NewRueidis(tb, addrs...))
	case "valkeygo":
		return valkeygodriver.New(NewValkeyGo(tb, addrs...))
	}
	tb.Fatalf("bench: unknown driver %q", d)
	return nil
}

// BenchmarkCluster runs targets as Benchmark does against the Cluster
// whose seed addresses are addrs; the server's cost is summed over masters
// (the nodes that serve the locks).
func BenchmarkCluster(b *testing.B, addrs, masters []string, targets []Target) {
	benchmark(b, addrs[0], newServerStats(b, masters), targets, nil)
}
