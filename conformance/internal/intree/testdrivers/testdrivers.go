// Package testdrivers builds the in-tree drivers on fresh clients for
// their certification (the tests of conformance/internal/intree), with the
// client settings docs/guide.md gives users: the guide_*.go files hold
// them, word for word as the guide shows them.
package testdrivers

import (
	"testing"

	redigo "github.com/gomodule/redigo/redis"
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
			cl := newRedisClusterClient(goredis.ClusterOptions{
				Addrs: c.Addrs, Username: c.Username, Password: c.Password, TLSConfig: c.TLS, PoolSize: 128,
			})
			t.Cleanup(func() { _ = cl.Close() })
			return goredisdriver.New(cl)
		}
		cl := newRedisClient(goredis.Options{
			Addr: c.Addrs[0], Username: c.Username, Password: c.Password, DB: c.DB, TLSConfig: c.TLS, PoolSize: 128,
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
			cl, err := newCluster(c.Addrs, opts...)
			if err != nil {
				t.Fatalf("redisc: Refresh(%v): %v", c.Addrs, err)
			}
			t.Cleanup(func() { _ = cl.Close() })
			return redigodriver.NewCluster(cl)
		}
		if c.DB != 0 {
			opts = append(opts, redigo.DialDatabase(c.DB))
		}
		p := newPool(c.Addrs[0], opts...)
		t.Cleanup(func() { _ = p.Close() })
		return redigodriver.New(p)
	},
}

// Rueidis is the rueidis driver; rueidis detects a Cluster by itself.
var Rueidis = conformance.Driver{
	Name: "rueidis",
	Connect: func(t testing.TB, c conformance.Conn) locker.Scripter {
		cl, err := newRueidisClient(rueidis.ClientOption{InitAddress: c.Addrs,
			Username: c.Username, Password: c.Password, SelectDB: c.DB, TLSConfig: c.TLS})
		if err != nil {
			t.Fatalf("rueidis: NewClient(%v): %v", c.Addrs, err)
		}
		t.Cleanup(cl.Close)
		return rueidisdriver.New(cl)
	},
}

// Valkeygo is the valkey-go driver; valkey-go, like rueidis, detects a
// Cluster by itself.
var Valkeygo = conformance.Driver{
	Name: "valkeygo",
	Connect: func(t testing.TB, c conformance.Conn) locker.Scripter {
		cl, err := newValkeyClient(valkey.ClientOption{InitAddress: c.Addrs,
			Username: c.Username, Password: c.Password, SelectDB: c.DB, TLSConfig: c.TLS})
		if err != nil {
			t.Fatalf("valkey-go: NewClient(%v): %v", c.Addrs, err)
		}
		t.Cleanup(cl.Close)
		return valkeygodriver.New(cl)
	},
}
