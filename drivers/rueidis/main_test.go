package rueidis_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/scriptlock/scriptlock/internal/redisserver"
)

// redisAddr is the redis-server TestMain starts for the runnable example.
var redisAddr string

func TestMain(m *testing.M) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	srv, stop, err := redisserver.Launch(ctx)
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "rueidis example:", err)
		os.Exit(1)
	}
	redisAddr = srv.Addr
	code := m.Run()
	stop()
	os.Exit(code)
}
