package locker_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/scriptlock/scriptlock/locker"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeAck is an Acknowledger over a real Scripter whose wait reports
// replicas acknowledgements (no real WAIT: the test server has no
// replica). It records the scripts it was asked to acknowledge.
type fakeAck struct {
	plainScripter
	replicas atomic.Int64
	mu       sync.Mutex
	acked    []string // script names
}

func (f *fakeAck) EvalShaAck(ctx context.Context, sha string, keys, args []string, _ locker.Ack) (any, locker.Acked, error) {
	r, err := f.EvalSha(ctx, sha, keys, args)
	f.note(locker.ScriptName(sha))
	return r, locker.Acked{Replicas: f.replicas.Load()}, err
}

func (f *fakeAck) EvalAck(ctx context.Context, src string, keys, args []string, _ locker.Ack) (any, locker.Acked, error) {
	r, err := f.Eval(ctx, src, keys, args)
	f.note("eval")
	return r, locker.Acked{Replicas: f.replicas.Load()}, err
}

func (f *fakeAck) note(name string) {
	f.mu.Lock()
	f.acked = append(f.acked, name)
	f.mu.Unlock()
}

func (f *fakeAck) saw(name string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, n := range f.acked {
		if n == name {
			return true
		}
	}
	return false
}

// TestAckRedis checks what the core does with the wait's outcome: an
// unacknowledged grant is undone and reported as AckError, an
// unacknowledged Extend does not lengthen the lease, an unacknowledged
// Unlock ends the lease and is retried in the background, and read-only
// calls are not acknowledged.
func TestAckRedis(t *testing.T) {
	e := newRedisEnv(t)
	plain := e.client(nil)
	f := &fakeAck{plainScripter: plainScripter{e.rdb}}
	ack := clientOn(t, f, &locker.Options{Prefix: e.prefix, Ack: &locker.Ack{Replicas: 1, Timeout: 10 * time.Millisecond}})

	// A grant no replica acknowledged is undone.
	_, err := newMutex(t, ack, "a", 10*time.Second, nil).TryLock(e.ctx)
	require.ErrorIs(t, err, locker.ErrNotAcknowledged, "TryLock with 0 of 1 replicas")
	var ae *locker.AckError
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, int64(0), ae.Got.Replicas)
	assert.Equal(t, 1, ae.Want.Replicas)
	require.Eventually(t, func() bool {
		l, err := newMutex(t, plain, "a", time.Second, nil).TryLock(e.ctx)
		if err != nil {
			return false
		}
		require.NoError(t, l.Unlock(e.ctx))
		return true
	}, 5*time.Second, 10*time.Millisecond, "the unacknowledged grant is undone in the background")
	assert.True(t, f.saw("abandon"), "the clean-up is acknowledged too")

	// An acknowledged grant; then the replica goes quiet.
	f.replicas.Store(1)
	l, err := newMutex(t, ack, "b", 2*time.Second, nil).TryLock(e.ctx)
	require.NoError(t, err, "TryLock with 1 of 1 replicas")
	f.replicas.Store(0)
	before := l.ValidUntil()
	err = l.Extend(e.ctx, time.Minute)
	require.ErrorIs(t, err, locker.ErrNotAcknowledged, "Extend with 0 of 1 replicas")
	assert.False(t, l.ValidUntil().After(before), "an unacknowledged Extend must not lengthen the validity (%v, was %v)", l.ValidUntil(), before)
	ttl, err := l.TTL(e.ctx)
	require.NoError(t, err, "TTL is read-only: not acknowledged, so it works with no replica")
	assert.Greater(t, ttl, 2*time.Second, "the server applied the Extend")
	assert.False(t, f.saw("pttl"), "the read-only pttl script must not be acknowledged")
	err = l.Unlock(e.ctx)
	require.ErrorIs(t, err, locker.ErrNotAcknowledged, "Unlock with 0 of 1 replicas")
	assert.False(t, l.Valid(), "a lease whose Unlock was not acknowledged is ended at once")
	_, err = newMutex(t, plain, "b", time.Second, nil).TryLock(e.ctx)
	assert.NoError(t, err, "the release ran on the server (only its acknowledgement is missing)")

	// Options.Ack needs an Acknowledger, and sane values.
	_, err = locker.New(plainScripter{f.plainScripter.s}, &locker.Options{Ack: &locker.Ack{Replicas: 1}})
	assert.ErrorIs(t, err, locker.ErrInvalidOption, "Ack over a Scripter without Acknowledger")
	for _, a := range []locker.Ack{{}, {Replicas: -1}, {Replicas: 1, Timeout: -time.Second}, {Replicas: 1, Timeout: 2 * time.Minute}} {
		_, err = locker.New(f, &locker.Options{Ack: &a})
		assert.ErrorIs(t, err, locker.ErrInvalidOption, "Ack %+v", a)
	}
	_, err = locker.New(f, &locker.Options{Ack: &locker.Ack{Fsync: true}})
	assert.NoError(t, err, "Fsync with 0 replicas: the node's own fsync only")
}
