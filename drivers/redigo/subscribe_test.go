package redigo_test

import (
	"context"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/scriptlock/scriptlock/drivers/internal/subtest"
	"github.com/scriptlock/scriptlock/drivers/redigo"
	"github.com/scriptlock/scriptlock/internal/leak"
)

// TestSubscribe checks fan-out, unsubscribe, payloads (subtest.Subscribe)
// and clean-up of Subscribe on one connection; the conformance suite
// covers the rest.
func TestSubscribe(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	pool := &redis.Pool{
		MaxIdle: 2,
		DialContext: func(ctx context.Context) (redis.Conn, error) {
			return redis.DialContext(ctx, "tcp", redisAddr, redis.DialReadTimeout(time.Second))
		},
	}
	defer pool.Close()
	leaks := leak.IgnoreCurrent()
	s := redigo.New(pool)

	subtest.Subscribe(t, ctx, s)
	leak.VerifyNone(t, leaks)
}
