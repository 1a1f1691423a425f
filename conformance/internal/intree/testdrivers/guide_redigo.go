package testdrivers

import (
	"context"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/mna/redisc"
)

// newPool makes a redigo pool with the settings scriptlock is certified
// with; opts says how to log in (redis.DialUsername, redis.DialPassword,
// redis.DialUseTLS, ...).
func newPool(addr string, opts ...redis.DialOption) *redis.Pool {
	opts = append([]redis.DialOption{redis.DialConnectTimeout(5 * time.Second)}, opts...)
	return &redis.Pool{
		MaxIdle:             64,
		IdleTimeout:         time.Minute,
		TestOnBorrowContext: testOnBorrow,
		DialContext: func(ctx context.Context) (redis.Conn, error) {
			return redis.DialContext(ctx, "tcp", addr, opts...)
		},
	}
}

// newCluster connects redisc to the Cluster at addrs (any of its nodes),
// with a pool per node made by newPool, and loads the slot map. redisc has
// no context support: the driver returns when the caller's context ends,
// and the read timeout bounds the abandoned call.
func newCluster(addrs []string, opts ...redis.DialOption) (*redisc.Cluster, error) {
	cluster := &redisc.Cluster{
		StartupNodes: addrs,
		DialOptions:  append([]redis.DialOption{redis.DialReadTimeout(10 * time.Second)}, opts...),
		CreatePool: func(addr string, opts ...redis.DialOption) (*redis.Pool, error) {
			return newPool(addr, opts...), nil
		},
	}
	if err := cluster.Refresh(); err != nil {
		_ = cluster.Close()
		return nil, err
	}
	return cluster, nil
}

// testOnBorrow replaces pooled connections the server closed (restart,
// CLIENT KILL) before use; hot connections are not pinged, so an
// uncontended lock stays two round trips. The PING honours the caller's
// context: with c.Do, a stalled server would hold a TryLock past its
// deadline.
func testOnBorrow(ctx context.Context, c redis.Conn, idle time.Time) error {
	if time.Since(idle) < 100*time.Millisecond {
		return nil
	}
	_, err := redis.DoContext(c, ctx, "PING")
	return err
}
