package goredis_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/scriptlock/scriptlock/drivers/goredis"
	"github.com/scriptlock/scriptlock/drivers/internal/subtest"
	"github.com/scriptlock/scriptlock/internal/leak"
	"github.com/stretchr/testify/require"
)

// TestSubscribe checks fan-out, unsubscribe, payloads (subtest.Subscribe)
// and clean-up of Subscribe on one connection; the conformance suite
// covers the rest.
func TestSubscribe(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr, ContextTimeoutEnabled: true})
	defer rdb.Close()
	require.NoError(t, rdb.Ping(ctx).Err())
	leaks := leak.IgnoreCurrent()
	s := goredis.New(rdb)

	subtest.Subscribe(t, ctx, s)
	leak.VerifyNone(t, leaks)
}
