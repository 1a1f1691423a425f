package conformance

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/scriptlock/scriptlock/locker"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// waitCases check how blocked Lock calls are woken.
var waitCases = []testCase{
	{
		name:  "Wait/PushWakeup",
		rule:  "A waiter blocked in Lock (barging: StarvationThreshold negative; a starving waiter is handed the lock instead, see Starve/HandOver) acquires right after the holder's Unlock, woken by the release itself: three acquire calls in all (refused, refused after subscribing, granted), with polling set to one minute.",
		check: checkPushWakeup,
	},
	{
		name:  "Wait/HolderCrash",
		rule:  "A waiter acquires when the holder crashes (its key expires, nothing is published), retrying when the holder's TTL has run out rather than polling.",
		check: checkHolderCrash,
	},
	{
		name:      "Wait/LostWakeup",
		needs:     "lists and kills the subscribed connections (CLIENT LIST, CLIENT KILL)",
		rule:      "A waiter acquires when the wake-up message is lost (its pub/sub connection killed), at the latest when the holder's TTL has run out.",
		check:     checkLostWakeup,
		exclusive: "kills every subscribed connection on the node (CLIENT KILL)",
	},
}

// slowPolling makes polling useless within a case: only wake-ups and the
// holder's TTL can wake a waiter in time.
var slowPolling = &locker.Options{MinRetryDelay: time.Minute, MaxRetryDelay: time.Minute}

type lockResult struct {
	l   *locker.Lease
	err error
}

// lockAsync runs m.Lock(ctx) in a goroutine.
func lockAsync(ctx context.Context, m *locker.Mutex) <-chan lockResult {
	ch := make(chan lockResult, 1)
	go func() {
		l, err := m.Lock(ctx)
		ch <- lockResult{l, err}
	}()
	return ch
}

// awaitCalls waits until at least n script calls of cs have returned (a
// call merely started may still reach Redis after what the case does next);
// a miss is timing (see until).
func (e *env) awaitCalls(t *testing.T, cs *countingScripter, n int64, what string) {
	t.Helper()
	e.until(t, func() bool { return cs.returned.Load() >= n }, 10*time.Second, fmt.Sprintf("call: %s: at least %d script calls answered", what, n))
}

func checkPushWakeup(t *testing.T, e *env) {
	holder := e.mutex(e.client(nil), "push", time.Minute, nil)
	h, err := holder.TryLock(e.ctx)
	require.NoError(t, err, "call: holder TryLock")

	cs := &countingScripter{Scripter: e.s}
	waiter := e.mutex(e.clientOn(cs, slowPolling), "push", time.Minute, &locker.MutexOptions{StarvationThreshold: -1})
	got := lockAsync(e.ctx, waiter)
	e.awaitCalls(t, cs, 2, "waiter Lock before the release")
	require.NoError(t, h.Unlock(e.ctx), "call: holder Unlock")
	select {
	case r := <-got:
		require.NoError(t, r.err, "call: waiter Lock after Unlock")
		assert.Greater(t, r.l.Fence(), h.Fence(), "call: waiter's Fence()")
		assert.Equal(t, int64(3), cs.calls(), "call: waiter's script calls: refused, refused after subscribing, granted on the wake-up")
		require.NoError(t, r.l.Unlock(e.ctx), "call: waiter Unlock")
	case <-time.After(20 * time.Second):
		t.Fatalf("call: waiter Lock: still blocked after the holder's Unlock (script calls %d); want a wake-up", cs.calls())
	}
}

func checkHolderCrash(t *testing.T, e *env) {
	holder := e.mutex(e.client(nil), "crash", 300*time.Millisecond, nil)
	h, err := holder.TryLock(e.ctx)
	require.NoError(t, err, "call: holder TryLock (then it crashes: no Unlock)")

	cs := &countingScripter{Scripter: e.s}
	waiter := e.mutex(e.clientOn(cs, slowPolling), "crash", time.Minute, nil)
	r := <-lockAsync(e.ctx, waiter)
	require.NoError(t, r.err, "call: waiter Lock while the holder's 300ms key expires")
	assert.Greater(t, r.l.Fence(), h.Fence(), "call: waiter's Fence()")
	assert.LessOrEqual(t, cs.calls(), int64(5), "call: waiter's script calls: it must sleep until the holder's TTL ran out, not poll")
	require.NoError(t, r.l.Unlock(e.ctx), "call: waiter Unlock")
}

func checkLostWakeup(t *testing.T, e *env) {
	holder := e.mutex(e.client(nil), "lost-wakeup", 2*time.Second, nil)
	granted := time.Now()
	h, err := holder.TryLock(e.ctx)
	require.NoError(t, err, "call: holder TryLock")

	cs := &countingScripter{Scripter: e.s}
	waiter := e.mutex(e.clientOn(cs, slowPolling), "lost-wakeup", time.Minute, nil)
	got := lockAsync(e.ctx, waiter)
	e.awaitCalls(t, cs, 2, "waiter Lock before the release")
	killed := e.killSubscribers(e.client(nil).Key("lost-wakeup"))
	require.NotZero(t, killed, "call: admin CLIENT KILL of the connections with shard subscriptions on the lock's node")
	e.lapsedDone(t, h.Unlock(e.ctx), granted, 2*time.Second, "call: holder Unlock, published while the waiter's subscription is gone")
	select {
	case r := <-got:
		require.NoError(t, r.err, "call: waiter Lock after a lost wake-up")
		require.NoError(t, r.l.Unlock(e.ctx), "call: waiter Unlock")
	case <-time.After(20 * time.Second):
		t.Fatal("call: waiter Lock: still blocked 20s after a lost wake-up; want it to retry by the holder's 2s TTL")
	}
}

// killSubscribers kills every connection with a shard subscription (or a
// plain one, on a server without sharded pub/sub) on the node that owns
// key (RESP2 subscribers are of type pubsub, RESP3 ones of type normal, so
// CLIENT KILL TYPE cannot single them out) and returns how many it killed.
func (e *env) killSubscribers(key string) int {
	e.t.Helper()
	r, err := e.d.admin.Do(e.ctx, key, "CLIENT", "LIST")
	require.NoError(e.t, err, "call: admin CLIENT LIST")
	list, _ := r.(string)
	killed := 0
	for _, line := range strings.Split(list, "\n") {
		var id string
		subscribed := false
		for _, f := range strings.Fields(line) {
			k, v, _ := strings.Cut(f, "=")
			switch {
			case k == "id":
				id = v
			case (k == "ssub" || k == "sub") && v != "0": // "sub": plain SUBSCRIBE, on servers without SSUBSCRIBE
				subscribed = true
			}
		}
		if subscribed && id != "" {
			if _, err := e.d.admin.Do(e.ctx, key, "CLIENT", "KILL", "ID", id); err == nil {
				killed++
			}
		}
	}
	return killed
}
