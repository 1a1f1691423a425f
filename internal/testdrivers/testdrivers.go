// Package testdrivers builds the in-tree drivers on fresh clients for the
// conformance suite and the benchmarks, with the client settings this
// project recommends (a ctx deadline bounds socket I/O; no client-side
// cache).
package testdrivers

import (
	"context"
	"testing"
	"time"

	redigo "github.com/gomodule/redigo/redis"
	"github.com/mna/redisc"
	goredis "github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"

	"github.com/scriptlock/scriptlock/conformance"
	goredisdriver "github.com/scriptlock/scriptlock/drivers/goredis"
	redigodriver "github.com/scriptlock/scriptlock/drivers/redigo"
	rueidisdriver "github.com/scriptlock/scriptlock/drivers/rueidis"
	"github.com/scriptlock/scriptlock/locker"
)

// All returns every in-tree driver, in a fixed order.
func All() []conformance.Driver {
	return []conformance.Driver{GoRedis, Redigo, Rueidis}
}

// GoRedis is the go-redis v9 driver.
var GoRedis = conformance.Driver{
	Name: "goredis",
	Standalone: func(t testing.TB, addr string) locker.Scripter {
		c := goredis.NewClient(&goredis.Options{Addr: addr, ContextTimeoutEnabled: true, PoolSize: 128})
		t.Cleanup(func() { _ = c.Close() })
		return goredisdriver.New(c)
	},
	Cluster: func(t testing.TB, addrs []string) locker.Scripter {
		c := goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: addrs, ContextTimeoutEnabled: true, PoolSize: 128})
		t.Cleanup(func() { _ = c.Close() })
		return goredisdriver.New(c)
	},
}

// Redigo is the redigo driver: a *redis.Pool standalone, redisc on a Cluster.
var Redigo = conformance.Driver{
	Name: "redigo",
	Standalone: func(t testing.TB, addr string) locker.Scripter {
		p := redigoPool(addr)
		t.Cleanup(func() { _ = p.Close() })
		return redigodriver.New(p)
	},
	Cluster: func(t testing.TB, addrs []string) locker.Scripter {
		c := &redisc.Cluster{
			StartupNodes: addrs,
			DialOptions:  []redigo.DialOption{redigo.DialConnectTimeout(5 * time.Second), redigo.DialReadTimeout(10 * time.Second)},
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
			t.Fatalf("redisc: Refresh(%v): %v", addrs, err)
		}
		t.Cleanup(func() { _ = c.Close() })
		return redigodriver.NewCluster(c)
	},
}

func redigoPool(addr string) *redigo.Pool {
	return &redigo.Pool{
		MaxIdle:     128,
		IdleTimeout: time.Minute,
		DialContext: func(ctx context.Context) (redigo.Conn, error) {
			return redigo.DialContext(ctx, "tcp", addr, redigo.DialConnectTimeout(5*time.Second))
		},
	}
}

// Rueidis is the rueidis driver; rueidis detects a Cluster by itself.
var Rueidis = conformance.Driver{
	Name: "rueidis",
	Standalone: func(t testing.TB, addr string) locker.Scripter {
		return rueidisClient(t, []string{addr})
	},
	Cluster: func(t testing.TB, addrs []string) locker.Scripter {
		return rueidisClient(t, addrs)
	},
}

func rueidisClient(t testing.TB, addrs []string) locker.Scripter {
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: addrs, DisableCache: true})
	if err != nil {
		t.Fatalf("rueidis: NewClient(%v): %v", addrs, err)
	}
	t.Cleanup(c.Close)
	return rueidisdriver.New(c)
}
