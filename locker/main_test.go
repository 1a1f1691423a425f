package locker_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/scriptlock/scriptlock/internal/redisserver"
)

// TestMain starts the one redis-server of this test binary: the runnable
// examples and the tests of the scripts (*_redis_test.go, each with a key
// prefix of its own) use it. A missing redis-server fails the run with a
// message that names the fix.
func TestMain(m *testing.M) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	srv, stop, err := redisserver.Launch(ctx)
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "locker tests: starting redis-server:", err)
		os.Exit(1)
	}
	redisAddr = srv.Addr
	var b [4]byte
	_, _ = rand.Read(b[:])
	examplePrefix = "example:" + hex.EncodeToString(b[:]) + ":"
	code := m.Run()
	stop()
	os.Exit(code)
}
