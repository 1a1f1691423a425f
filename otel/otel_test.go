package otel_test

import (
	"context"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/codes"

	goredisdriver "github.com/scriptlock/scriptlock/drivers/goredis"
	"github.com/scriptlock/scriptlock/internal/leak"
	"github.com/scriptlock/scriptlock/internal/redisserver"
	"github.com/scriptlock/scriptlock/locker"
	lockotel "github.com/scriptlock/scriptlock/otel"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMain(m *testing.M) {
	leak.VerifyTestMain(m)
}

// setup starts a redis-server and returns a go-redis client on it and a
// locker.Client reporting to h's Observer.
func setup(t *testing.T, h *harness) (*goredis.Client, *locker.Client) {
	t.Helper()
	srv := redisserver.StartStandalone(t)
	rc := goredis.NewClient(&goredis.Options{Addr: srv.Addr, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = rc.Close() })
	c, err := locker.New(goredisdriver.New(rc), &locker.Options{Observer: h.obs})
	require.NoError(t, err, "locker.New")
	t.Cleanup(func() { _ = c.Close() })
	return rc, c
}

// TestContendedLock: a Lock that waits for another lease's Unlock records
// its whole wait, outcome granted and several attempts, and a span
// scriptlock.acquire under the caller's span covering the wait; its Unlock
// records the hold and a scriptlock.hold span; an Extend under a span
// records a scriptlock.extend span.
func TestContendedLock(t *testing.T) {
	for _, names := range []bool{false, true} {
		t.Run(map[bool]string{false: "names=off", true: "names=on"}[names], func(t *testing.T) {
			const hold = 100 * time.Millisecond
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			h := newHarness(t, names)
			rc, c := setup(t, h)
			name := "otel:contended"
			mu, err := c.NewMutex(name, 10*time.Second, nil)
			require.NoError(t, err)

			holder, err := mu.TryLock(ctx)
			require.NoError(t, err, "holder TryLock")
			released := make(chan error, 1)
			go func() {
				// Release only once the waiter is subscribed to the wake
				// channel (so its Lock has started), and hold a while more.
				wake := c.Key(name) + ":wake"
				for {
					n, err := rc.PubSubShardNumSub(ctx, wake).Result()
					if err != nil {
						released <- err
						return
					}
					if n[wake] > 0 {
						break
					}
					time.Sleep(time.Millisecond)
				}
				time.Sleep(hold)
				released <- holder.Unlock(context.Background())
			}()

			rctx, request := h.parent(ctx)
			lease, err := mu.Lock(rctx)
			require.NoError(t, err, "waiter Lock")
			require.NoError(t, <-released, "holder Unlock")
			require.NoError(t, lease.Extend(rctx, 10*time.Second), "Extend")
			require.NoError(t, lease.Extend(ctx, 10*time.Second), "Extend without a span")
			require.NoError(t, lease.Unlock(rctx), "waiter Unlock")
			request.End()

			ms := h.collect(t)
			granted := match(points(t, ms, lockotel.MetricAcquireDuration), mode("mutex"), outcome("granted"))
			require.Len(t, granted, 1, "one series for granted mutex acquisitions")
			assert.Equal(t, uint64(2), granted[0].count, "acquisitions: the holder's TryLock and the waiter's Lock")
			assert.GreaterOrEqual(t, granted[0].max, hold.Seconds(), "the waiter's wait in %s", lockotel.MetricAcquireDuration)
			attempts := match(points(t, ms, lockotel.MetricAcquireAttempts), mode("mutex"), outcome("granted"))
			require.Len(t, attempts, 1)
			assert.GreaterOrEqual(t, attempts[0].max, 2.0, "the waiter's attempts")
			assert.Equal(t, 1.0, attempts[0].min, "the holder's attempts")
			held := match(points(t, ms, lockotel.MetricHoldDuration), mode("mutex"), outcome("released"))
			require.Len(t, held, 1)
			assert.Equal(t, uint64(2), held[0].count, "releases")
			assert.GreaterOrEqual(t, held[0].max, hold.Seconds(), "the holder held for at least %v", hold)
			ext := match(points(t, ms, lockotel.MetricExtends), mode("mutex"), outcome("extended"))
			require.Len(t, ext, 1)
			assert.Equal(t, 2.0, ext[0].sum, "extends, traced or not")

			// Spans: the waiter's are children of the request.
			req := h.ended("request")
			require.Len(t, req, 1)
			parent := req[0].SpanContext()
			acq := h.ended(lockotel.SpanAcquire)
			require.Len(t, acq, 2, "acquire spans: holder and waiter")
			var waiter = acq[0]
			if !waiter.Parent().IsValid() {
				waiter = acq[1]
			}
			assert.Equal(t, parent.SpanID(), waiter.Parent().SpanID(), "the waiter's acquire span is a child of the request")
			assert.Equal(t, parent.TraceID(), waiter.SpanContext().TraceID())
			assert.GreaterOrEqual(t, waiter.EndTime().Sub(waiter.StartTime()), hold, "the acquire span covers the wait")
			assert.False(t, waiter.StartTime().Before(req[0].StartTime()), "the acquire span starts within the request")
			assert.Equal(t, codes.Unset, waiter.Status().Code)
			v, ok := spanAttr(waiter, lockotel.AttrFence)
			assert.True(t, ok && v.AsInt64() == lease.Fence(), "fence attribute %v, want %d", v.String(), lease.Fence())
			v, ok = spanAttr(waiter, lockotel.AttrAttempts)
			assert.True(t, ok && v.AsInt64() >= 2, "attempts attribute %v", v.String())

			holds := h.ended(lockotel.SpanHold)
			require.Len(t, holds, 2, "hold spans: holder and waiter")
			for _, s := range holds {
				if s.Parent().IsValid() {
					assert.Equal(t, parent.SpanID(), s.Parent().SpanID(), "the waiter's hold span is a child of the request")
				}
			}
			ex := h.ended(lockotel.SpanExtend)
			require.Len(t, ex, 1, "an extend span only for the Extend under a span")
			assert.Equal(t, parent.SpanID(), ex[0].Parent().SpanID())

			// The lock name: everywhere with the option, nowhere without.
			for _, m := range []string{lockotel.MetricAcquireDuration, lockotel.MetricAcquireAttempts, lockotel.MetricHoldDuration, lockotel.MetricExtends, lockotel.MetricWakeups} {
				for _, p := range points(t, ms, m) {
					v, ok := p.attrs.Value(lockotel.AttrLockName)
					if names {
						assert.True(t, ok && v.AsString() == name, "%s: lock name %q", m, v.String())
					} else {
						assert.False(t, ok, "%s: lock name attribute without the option", m)
					}
				}
			}
			for _, s := range h.spans.Ended() {
				if s.Name() == "request" {
					continue
				}
				v, ok := spanAttr(s, lockotel.AttrLockName)
				if names {
					assert.True(t, ok && v.AsString() == name, "%s: lock name %q", s.Name(), v.String())
				} else {
					assert.False(t, ok, "%s: lock name attribute without the option", s.Name())
				}
			}
		})
	}
}

// TestLostLease: a lease whose TTL runs out before Unlock is reported lost
// with cause expired; one whose lock was taken by another owner with cause
// held_by_other. Each loss gets its own scriptlock.loss span (the core
// reports losses with context.Background), status Error.
func TestLostLease(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	h := newHarness(t, false)
	rc, c := setup(t, h)

	// Expired: a short TTL, no auto-refresh; Lost arms the deadline timer.
	mu, err := c.NewMutex("otel:expired", 200*time.Millisecond, nil)
	require.NoError(t, err)
	lease, err := mu.TryLock(ctx)
	require.NoError(t, err)
	select {
	case <-lease.Lost():
	case <-ctx.Done():
		t.Fatal("the lease was not reported lost")
	}
	require.ErrorIs(t, lease.Err(), locker.ErrExpired)

	// Held by another: delete the key, let another owner take the lock,
	// and ask the first lease its TTL.
	mu2, err := c.NewMutex("otel:taken", 10*time.Second, nil)
	require.NoError(t, err)
	first, err := mu2.TryLock(ctx)
	require.NoError(t, err)
	require.NoError(t, rc.Del(ctx, c.Key("otel:taken")).Err(), "DEL")
	second, err := mu2.TryLock(ctx)
	require.NoError(t, err, "TryLock after DEL")
	_, err = first.TTL(ctx)
	require.ErrorIs(t, err, locker.ErrHeldByOther)
	require.NoError(t, second.Unlock(ctx))

	ms := h.collect(t)
	lost := points(t, ms, lockotel.MetricLeaseLost)
	expired := match(lost, mode("mutex"), cause("expired"))
	require.Len(t, expired, 1, "a %s point with cause expired in %v", lockotel.MetricLeaseLost, lost)
	assert.Equal(t, 1.0, expired[0].sum)
	taken := match(lost, mode("mutex"), cause("held_by_other"))
	require.Len(t, taken, 1, "a %s point with cause held_by_other in %v", lockotel.MetricLeaseLost, lost)
	assert.Equal(t, 1.0, taken[0].sum)

	spans := h.ended(lockotel.SpanLoss)
	require.Len(t, spans, 2, "loss spans")
	causes := map[string]bool{}
	for _, s := range spans {
		assert.Equal(t, codes.Error, s.Status().Code, "loss span status")
		assert.False(t, s.Parent().IsValid(), "a root span: the loss came with context.Background")
		assert.NotContains(t, s.Status().Description, "otel:", "no lock name in the description")
		v, _ := spanAttr(s, lockotel.AttrLossCause)
		causes[v.AsString()] = true
		v, ok := spanAttr(s, lockotel.AttrFence)
		assert.True(t, ok && v.AsInt64() > 0, "fence attribute")
	}
	assert.Equal(t, map[string]bool{"expired": true, "held_by_other": true}, causes)
}
