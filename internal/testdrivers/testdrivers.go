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
	Authenticated: func(t testing.TB, addrs []string, cluster bool, user, password string) locker.Scripter {
		if cluster {
			c := goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: addrs, Username: user, Password: password, ContextTimeoutEnabled: true})
			t.Cleanup(func() { _ = c.Close() })
			return goredisdriver.New(c)
		}
		c := goredis.NewClient(&goredis.Options{Addr: addrs[0], Username: user, Password: password, ContextTimeoutEnabled: true})
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
		return redisCluster(t, addrs)
	},
	Authenticated: func(t testing.TB, addrs []string, cluster bool, user, password string) locker.Scripter {
		auth := []redigo.DialOption{redigo.DialUsername(user), redigo.DialPassword(password)}
		if cluster {
			return redisCluster(t, addrs, auth...)
		}
		p := redigoPool(addrs[0], auth...)
		t.Cleanup(func() { _ = p.Close() })
		return redigodriver.New(p)
	},
}

// redisCluster connects redisc to the Cluster at addrs.
func redisCluster(t testing.TB, addrs []string, opts ...redigo.DialOption) locker.Scripter {
	{
		c := &redisc.Cluster{
			StartupNodes: addrs,
			DialOptions:  append([]redigo.DialOption{redigo.DialConnectTimeout(5 * time.Second), redigo.DialReadTimeout(10 * time.Second)}, opts...),
			CreatePool: func(addr string, opts ...redigo.DialOption) (*redigo.Pool, error) {
				return &redigo.Pool{
					MaxIdle:      128,
					IdleTimeout:  time.Minute,
					TestOnBorrow: testOnBorrow,
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
	}
}

func redigoPool(addr string, opts ...redigo.DialOption) *redigo.Pool {
	opts = append([]redigo.DialOption{redigo.DialConnectTimeout(5 * time.Second)}, opts...)
	return &redigo.Pool{
		MaxIdle:      128,
		IdleTimeout:  time.Minute,
		TestOnBorrow: testOnBorrow,
		DialContext: func(ctx context.Context) (redigo.Conn, error) {
			return redigo.DialContext(ctx, "tcp", addr, opts...)
		},
	}
}

// testOnBorrow pings a pooled redigo connection that sat idle for more than
// 100 ms before handing it out, so a connection the server closed (CLIENT
// KILL, restart) is replaced instead of failing the next call. Hot
// connections are not pinged: the uncontended lock stays two round trips.
func testOnBorrow(c redigo.Conn, idleSince time.Time) error {
	if time.Since(idleSince) < 100*time.Millisecond {
		return nil
	}
	_, err := c.Do("PING")
	return err
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
	Authenticated: func(t testing.TB, addrs []string, _ bool, user, password string) locker.Scripter {
		return rueidisClient(t, addrs, func(o *rueidis.ClientOption) { o.Username, o.Password = user, password })
	},
}

func rueidisClient(t testing.TB, addrs []string, opts ...func(*rueidis.ClientOption)) locker.Scripter {
	o := rueidis.ClientOption{InitAddress: addrs, DisableCache: true}
	for _, f := range opts {
		f(&o)
	}
	c, err := rueidis.NewClient(o)
	if err != nil {
		t.Fatalf("rueidis: NewClient(%v): %v", addrs, err)
	}
	t.Cleanup(c.Close)
	return rueidisdriver.New(c)
}
