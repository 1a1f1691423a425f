// Package testdrivers builds the in-tree drivers on fresh clients for
// their certification (the tests of conformance/internal/intree), with the
// client settings this project recommends (a ctx deadline bounds socket I/O; no client-side
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
	"github.com/valkey-io/valkey-go"

	"github.com/scriptlock/scriptlock/conformance"
	goredisdriver "github.com/scriptlock/scriptlock/drivers/goredis"
	redigodriver "github.com/scriptlock/scriptlock/drivers/redigo"
	rueidisdriver "github.com/scriptlock/scriptlock/drivers/rueidis"
	valkeygodriver "github.com/scriptlock/scriptlock/drivers/valkeygo"
	"github.com/scriptlock/scriptlock/locker"
)

// All returns every in-tree driver, in a fixed order.
func All() []conformance.Driver {
	return []conformance.Driver{GoRedis, Redigo, Rueidis, Valkeygo}
}

// GoRedis is the go-redis v9 driver: a Client standalone, a
// ClusterClient on a Cluster.
var GoRedis = conformance.Driver{
	Name: "goredis",
	Connect: func(t testing.TB, c conformance.Conn) locker.Scripter {
		if c.Cluster {
			cl := goredis.NewClusterClient(&goredis.ClusterOptions{
				Addrs: c.Addrs, Username: c.Username, Password: c.Password, TLSConfig: c.TLS,
				ContextTimeoutEnabled: true, PoolSize: 128,
			})
			t.Cleanup(func() { _ = cl.Close() })
			return goredisdriver.New(cl)
		}
		cl := goredis.NewClient(&goredis.Options{
			Addr: c.Addrs[0], Username: c.Username, Password: c.Password, DB: c.DB, TLSConfig: c.TLS,
			ContextTimeoutEnabled: true, PoolSize: 128,
		})
		t.Cleanup(func() { _ = cl.Close() })
		return goredisdriver.New(cl)
	},
}

// Redigo is the redigo driver: a *redis.Pool standalone, redisc on a Cluster.
var Redigo = conformance.Driver{
	Name: "redigo",
	Connect: func(t testing.TB, c conformance.Conn) locker.Scripter {
		var opts []redigo.DialOption
		if c.Password != "" {
			opts = append(opts, redigo.DialUsername(c.Username), redigo.DialPassword(c.Password))
		}
		if c.TLS != nil {
			opts = append(opts, redigo.DialUseTLS(true), redigo.DialTLSConfig(c.TLS))
		}
		if c.Cluster {
			return redisCluster(t, c.Addrs, opts...)
		}
		if c.DB != 0 {
			opts = append(opts, redigo.DialDatabase(c.DB))
		}
		p := redigoPool(c.Addrs[0], opts...)
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
	Connect: func(t testing.TB, c conformance.Conn) locker.Scripter {
		return rueidisClient(t, c.Addrs, func(o *rueidis.ClientOption) {
			o.Username, o.Password, o.SelectDB, o.TLSConfig = c.Username, c.Password, c.DB, c.TLS
		})
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

// Valkeygo is the valkey-go driver; valkey-go, like rueidis, detects a
// Cluster by itself.
var Valkeygo = conformance.Driver{
	Name: "valkeygo",
	Connect: func(t testing.TB, c conformance.Conn) locker.Scripter {
		o := valkey.ClientOption{InitAddress: c.Addrs, DisableCache: true,
			Username: c.Username, Password: c.Password, SelectDB: c.DB, TLSConfig: c.TLS}
		cl, err := valkey.NewClient(o)
		if err != nil {
			t.Fatalf("valkey-go: NewClient(%v): %v", c.Addrs, err)
		}
		t.Cleanup(cl.Close)
		return valkeygodriver.New(cl)
	},
}
