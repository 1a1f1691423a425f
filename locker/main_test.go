package locker_test

import (
	"testing"

	"github.com/scriptlock/scriptlock/internal/redisserver"
)

// redisAddr is the standalone redis-server TestMain starts.
var redisAddr string

// TestMain starts the redis-server of this test binary: the tests of the
// scripts (*_redis_test.go, each with a key prefix of its own) use it,
// through internal/resptest (the runnable examples, which need a real
// driver, are in drivers/goredis). A missing redis-server fails
// the run with a message that names the fix.
func TestMain(m *testing.M) { redisserver.Main(m, "locker tests", &redisAddr, nil) }
