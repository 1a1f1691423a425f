package miniredistest_test

import (
	"context"
	"testing"

	"github.com/gomodule/redigo/redis"

	redigodriver "github.com/scriptlock/scriptlock/drivers/redigo"
	"github.com/scriptlock/scriptlock/internal/miniredistest"
	"github.com/scriptlock/scriptlock/locker"
)

// TestMiniredis runs every user-facing operation through this driver on
// miniredis, for users who unit-test with it.
func TestMiniredisRedigo(t *testing.T) {
	miniredistest.Run(t, func(addr string) (locker.Scripter, func()) {
		pool := &redis.Pool{DialContext: func(ctx context.Context) (redis.Conn, error) {
			return redis.DialContext(ctx, "tcp", addr)
		}}
		return redigodriver.New(pool), func() { _ = pool.Close() }
	})
}
