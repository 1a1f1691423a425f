package miniredistest_test

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/scriptlock/scriptlock/drivers/goredis"
	"github.com/scriptlock/scriptlock/internal/miniredistest"
	"github.com/scriptlock/scriptlock/locker"
)

// TestMiniredis runs every user-facing operation through this driver on
// miniredis, for users who unit-test with it.
func TestMiniredisGoredis(t *testing.T) {
	miniredistest.Run(t, func(addr string) (locker.Scripter, func()) {
		rdb := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
		return goredis.New(rdb), func() { _ = rdb.Close() }
	})
}
