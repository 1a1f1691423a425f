// Package subtest holds the Subscriber checks the drivers' tests share:
// Subscribe, which checks fan-out and unsubscribes, and Payloads, which
// publishes real messages and holds a driver's onMessage calls to their
// payloads (recorded in a syncx.Log).
//
// Only tests import it.
package subtest

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/scriptlock/scriptlock/internal/syncx"
	"github.com/scriptlock/scriptlock/locker"
	"github.com/stretchr/testify/require"
)

// Driver is what Payloads needs of a driver: it publishes through the
// driver's own Eval.
type Driver interface {
	locker.Scripter
	locker.Subscriber
}

// publishPayloadScript publishes ARGV[1] on KEYS[1] as the lock scripts
// do: SPUBLISH, or PUBLISH on a server without it (Redis 6.2).
const publishPayloadScript = `local r = redis.pcall('SPUBLISH', KEYS[1], ARGV[1])
if type(r) == 'table' and r.err then
  return redis.call('PUBLISH', KEYS[1], ARGV[1])
end
return r`

// Payloads checks that onMessage gets each message's payload exactly as
// published, in order, for every subscriber of the channel, and that a
// channel's messages reach only its own subscribers. It unsubscribes all
// it subscribed before it returns, so the caller can check for leaks.
func Payloads(t *testing.T, ctx context.Context, s Driver) {
	t.Helper()
	var a1, a2, b syncx.Log[string]
	unA1, err := s.Subscribe(ctx, "payload{a}:wake", a1.Add)
	require.NoError(t, err)
	defer unA1()
	unA2, err := s.Subscribe(ctx, "payload{a}:wake", a2.Add)
	require.NoError(t, err)
	defer unA2()
	unB, err := s.Subscribe(ctx, "payload{b}:wake", b.Add)
	require.NoError(t, err)
	defer unB()

	publish := func(ch, payload string) {
		_, err := s.Eval(ctx, publishPayloadScript, []string{ch}, []string{payload})
		require.NoError(t, err)
	}
	want := []string{"1700000000123456", "", "x y\r\n\x00z"}
	for _, payload := range want {
		publish("payload{a}:wake", payload)
	}
	publish("payload{b}:wake", "1700000000654321")
	require.Eventually(t, func() bool { return len(a1.All()) == len(want) && len(a2.All()) == len(want) && len(b.All()) == 1 },
		5*time.Second, 5*time.Millisecond, "a1=%q a2=%q b=%q", a1.All(), a2.All(), b.All())
	require.Equal(t, want, a1.All(), "a1's payloads")
	require.Equal(t, want, a2.All(), "a2's payloads")
	require.Equal(t, []string{"1700000000654321"}, b.All(), "b's payloads")
}

// Subscribe checks Subscribe's fan-out on s: every subscriber of a channel
// gets each message, an unsubscribe (idempotent) stops only its own
// subscriber, and a channel's messages reach only its own; then Payloads.
// Like Payloads, it leaves nothing subscribed.
func Subscribe(t *testing.T, ctx context.Context, s Driver) {
	t.Helper()
	var a1, a2, b atomic.Int64
	count := func(n *atomic.Int64) func(string) { return func(string) { n.Add(1) } }
	unA1, err := s.Subscribe(ctx, "sub{a}:wake", count(&a1))
	require.NoError(t, err)
	unA2, err := s.Subscribe(ctx, "sub{a}:wake", count(&a2))
	require.NoError(t, err)
	unB, err := s.Subscribe(ctx, "sub{b}:wake", count(&b))
	require.NoError(t, err)

	publish := func(ch string) {
		_, err := s.Eval(ctx, publishPayloadScript, []string{ch}, []string{"x"})
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
	Payloads(t, ctx, s)
}
