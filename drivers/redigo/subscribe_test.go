package redigo_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/scriptlock/scriptlock/drivers/internal/subtest"
	"github.com/scriptlock/scriptlock/drivers/redigo"
	"github.com/scriptlock/scriptlock/internal/leak"
	"github.com/stretchr/testify/require"
)

// TestSubscribe checks fan-out, unsubscribe, payloads (subtest.Payloads)
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

	var a1, a2, b atomic.Int64
	count := func(n *atomic.Int64) func(string) { return func(string) { n.Add(1) } }
	unA1, err := s.Subscribe(ctx, "sub{a}:wake", count(&a1))
	require.NoError(t, err)
	unA2, err := s.Subscribe(ctx, "sub{a}:wake", count(&a2))
	require.NoError(t, err)
	unB, err := s.Subscribe(ctx, "sub{b}:wake", count(&b))
	require.NoError(t, err)

	publish := func(ch string) {
		_, err := s.Eval(ctx, publishScript, []string{ch}, nil)
		require.NoError(t, err)
	}
	for range 3 {
		publish("sub{a}:wake")
	}
	publish("sub{b}:wake")
	require.Eventually(t, func() bool { return a1.Load() == 3 && a2.Load() == 3 && b.Load() == 1 },
		5*time.Second, 5*time.Millisecond, "a1=%d a2=%d b=%d", a1.Load(), a2.Load(), b.Load())

	unA1()
	unA1() // idempotent
	publish("sub{a}:wake")
	require.Eventually(t, func() bool { return a2.Load() == 4 }, 5*time.Second, 5*time.Millisecond)
	require.Equal(t, int64(3), a1.Load(), "a1 after its unsubscribe")
	require.Equal(t, int64(1), b.Load(), "b got messages of another channel")

	unA2()
	unB()
	publish("sub{b}:wake")
	require.Equal(t, int64(1), b.Load(), "b after its unsubscribe")
	subtest.Payloads(t, ctx, s)
	leak.VerifyNone(t, leaks)
}

// publishScript publishes as the lock scripts do: SPUBLISH, or PUBLISH on
// a server without it (Redis 6.2).
const publishScript = `local r = redis.pcall('SPUBLISH', KEYS[1], 'x')
if type(r) == 'table' and r.err then
  return redis.call('PUBLISH', KEYS[1], 'x')
end
return r`
