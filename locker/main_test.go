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

// TestMain starts the redis-server the runnable examples use.
func TestMain(m *testing.M) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	srv, stop, err := redisserver.Launch(ctx)
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "locker examples:", err)
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
