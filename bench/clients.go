package bench

import (
	"context"
	"testing"
	"time"

	redigo "github.com/gomodule/redigo/redis"
	goredis "github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
	"github.com/valkey-io/valkey-go"
)

// The client constructors below use the settings of the project's tests
// (conformance/internal/testdrivers): a ctx deadline bounds socket I/O, pools of 128
// connections, no client-side cache. rueidis and valkey-go (a fork of
// rueidis, v1.0.79 both, with the same option code) get the same options:
// the client-side cache off (DisableCache) and every other option at its
// default, which the two share (auto-pipelining, PipelineMultiplex,
// BlockingPoolSize 1024), on a Cluster as on a standalone server.
// Every row that runs on a driver, scriptlock, the raw reference and the
// peers alike, gets its clients from here, so a difference between rows is
// never a difference of client settings.

// NewGoRedis returns a go-redis client for the server at addr, with
// ContextTimeoutEnabled and PoolSize 128, closed by tb.Cleanup.
func NewGoRedis(tb testing.TB, addr string) *goredis.Client {
	c := goredis.NewClient(&goredis.Options{Addr: addr, ContextTimeoutEnabled: true, PoolSize: 128})
	tb.Cleanup(func() { _ = c.Close() })
	return c
}

// NewRedigoPool returns a redigo pool for the server at addr, keeping up to
// 128 idle connections, closed by tb.Cleanup.
func NewRedigoPool(tb testing.TB, addr string) *redigo.Pool {
	p := &redigo.Pool{
		MaxIdle:     128,
		IdleTimeout: time.Minute,
		DialContext: func(ctx context.Context) (redigo.Conn, error) {
			return redigo.DialContext(ctx, "tcp", addr, redigo.DialConnectTimeout(5*time.Second))
		},
	}
	tb.Cleanup(func() { _ = p.Close() })
	return p
}

// NewRueidis returns a rueidis client for the server at addr (a Cluster
// when given its nodes' addresses) with the client-side cache disabled,
// closed by tb.Cleanup. It fails tb when the client cannot connect.
func NewRueidis(tb testing.TB, addr ...string) rueidis.Client {
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: addr, DisableCache: true})
	if err != nil {
		tb.Fatalf("rueidis: NewClient(%v): %v", addr, err)
	}
	tb.Cleanup(c.Close)
	return c
}

// NewValkeyGo is NewRueidis for valkey-go.
func NewValkeyGo(tb testing.TB, addr ...string) valkey.Client {
	c, err := valkey.NewClient(valkey.ClientOption{InitAddress: addr, DisableCache: true})
	if err != nil {
		tb.Fatalf("valkey-go: NewClient(%v): %v", addr, err)
	}
	tb.Cleanup(c.Close)
	return c
}
