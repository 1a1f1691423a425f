// Package subtest holds the Subscriber check the drivers' tests share:
// Payloads, which publishes real messages and holds a driver's onMessage
// calls to their payloads.
//
// Only tests import it.
package subtest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/scriptlock/scriptlock/internal/require"
	"github.com/scriptlock/scriptlock/locker"
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
	var (
		mu     sync.Mutex
		a1, a2 []string
		b      []string
	)
	record := func(dst *[]string) func(string) {
		return func(payload string) {
			mu.Lock()
			*dst = append(*dst, payload)
			mu.Unlock()
		}
	}
	got := func(src *[]string) []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), *src...)
	}
	unA1, err := s.Subscribe(ctx, "payload{a}:wake", record(&a1))
	require.NoError(t, err)
	defer unA1()
	unA2, err := s.Subscribe(ctx, "payload{a}:wake", record(&a2))
	require.NoError(t, err)
	defer unA2()
	unB, err := s.Subscribe(ctx, "payload{b}:wake", record(&b))
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
	require.Eventually(t, func() bool { return len(got(&a1)) == len(want) && len(got(&a2)) == len(want) && len(got(&b)) == 1 },
		5*time.Second, 5*time.Millisecond, "a1=%q a2=%q b=%q", got(&a1), got(&a2), got(&b))
	require.Equal(t, want, got(&a1), "a1's payloads")
	require.Equal(t, want, got(&a2), "a2's payloads")
	require.Equal(t, []string{"1700000000654321"}, got(&b), "b's payloads")
}
