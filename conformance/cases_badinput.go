package conformance

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/scriptlock/scriptlock/locker"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// badInputCases check that bad input gets a typed error, no panic, and
// leaves nothing behind in Redis.
var badInputCases = []testCase{
	{
		name:  "BadInput/TypedErrors",
		rule:  "Every bad input returns its typed error without panicking, and no key is left behind in Redis.",
		check: checkBadInput,
	},
	{
		name:  "BadInput/UseAfterClose",
		rule:  "After Client.Close every operation of the client, its mutexes and its leases returns ErrClosed, except Unlock, which still releases: the lock is free for another client at once.",
		check: checkUseAfterClose,
	},
}

type badInput struct {
	call string
	do   func(e *env, c *locker.Client) error
	want error
}

var nilCtx context.Context // a nil context, on purpose

var badInputs = []badInput{
	{"locker.New(nil, nil)", func(e *env, _ *locker.Client) error { _, err := locker.New(nil, nil); return err }, locker.ErrNilScripter},
	{"Options{Prefix: \"a{b\"}", func(e *env, _ *locker.Client) error {
		_, err := locker.New(e.s, &locker.Options{Prefix: "a{b"})
		return err
	}, locker.ErrInvalidOption},
	{"Options{DriftFactor: 0.7}", func(e *env, _ *locker.Client) error {
		_, err := locker.New(e.s, &locker.Options{DriftFactor: 0.7})
		return err
	}, locker.ErrInvalidOption},
	{"Options{MinRetryDelay: -1}", func(e *env, _ *locker.Client) error {
		_, err := locker.New(e.s, &locker.Options{MinRetryDelay: -1})
		return err
	}, locker.ErrInvalidOption},
	{"Options{MinRetryDelay: 1s, MaxRetryDelay: 1ms}", func(e *env, _ *locker.Client) error {
		_, err := locker.New(e.s, &locker.Options{MinRetryDelay: time.Second, MaxRetryDelay: time.Millisecond})
		return err
	}, locker.ErrInvalidOption},
	{"NewMutex(\"\")", func(e *env, c *locker.Client) error { _, err := c.NewMutex("", time.Second, nil); return err }, locker.ErrInvalidName},
	{"NewMutex(MaxNameLen+1 bytes)", func(e *env, c *locker.Client) error {
		_, err := c.NewMutex(strings.Repeat("x", locker.MaxNameLen+1), time.Second, nil)
		return err
	}, locker.ErrInvalidName},
	{"NewMutex(ttl 0)", func(e *env, c *locker.Client) error { _, err := c.NewMutex("m", 0, nil); return err }, locker.ErrInvalidTTL},
	{"NewMutex(ttl -1s)", func(e *env, c *locker.Client) error { _, err := c.NewMutex("m", -time.Second, nil); return err }, locker.ErrInvalidTTL},
	{"NewMutex(ttl 999µs)", func(e *env, c *locker.Client) error {
		_, err := c.NewMutex("m", 999*time.Microsecond, nil)
		return err
	}, locker.ErrInvalidTTL},
	{"NewMutex(ttl MaxTTL+1ms)", func(e *env, c *locker.Client) error {
		_, err := c.NewMutex("m", locker.MaxTTL+time.Millisecond, nil)
		return err
	}, locker.ErrInvalidTTL},
	{"NewMutex(Reentrant without Owner)", func(e *env, c *locker.Client) error {
		_, err := c.NewMutex("m", time.Second, &locker.MutexOptions{Reentrant: true})
		return err
	}, locker.ErrInvalidOption},
	{"TryLock(nil ctx)", func(e *env, c *locker.Client) error {
		_, err := mustMutex(e, c).TryLock(nilCtx)
		return err
	}, locker.ErrNilContext},
	{"Lock(nil ctx)", func(e *env, c *locker.Client) error {
		_, err := mustMutex(e, c).Lock(nilCtx)
		return err
	}, locker.ErrNilContext},
	{"Lock(cancelled ctx)", func(e *env, c *locker.Client) error {
		ctx, cancel := context.WithCancel(e.ctx)
		cancel()
		_, err := mustMutex(e, c).Lock(ctx)
		return err
	}, context.Canceled},
	{"Claim(\"\")", func(e *env, c *locker.Client) error { _, err := c.Claim(e.ctx, "", time.Second); return err }, locker.ErrInvalidName},
	{"Claim(ttl 0)", func(e *env, c *locker.Client) error { _, err := c.Claim(e.ctx, "k", 0); return err }, locker.ErrInvalidTTL},
	{"Claim(nil ctx)", func(e *env, c *locker.Client) error { _, err := c.Claim(nilCtx, "k", time.Second); return err }, locker.ErrNilContext},
	{"Extend(ttl 0)", func(e *env, c *locker.Client) error {
		l := mustLease(e, c)
		defer l.Unlock(e.ctx)
		return l.Extend(e.ctx, 0)
	}, locker.ErrInvalidTTL},
	{"Extend(nil ctx)", func(e *env, c *locker.Client) error {
		l := mustLease(e, c)
		defer l.Unlock(e.ctx)
		return l.Extend(nilCtx, time.Second)
	}, locker.ErrNilContext},
	{"Unlock(nil ctx)", func(e *env, c *locker.Client) error {
		l := mustLease(e, c)
		defer l.Unlock(e.ctx)
		return l.Unlock(nilCtx)
	}, locker.ErrNilContext},
	{"Extend after Unlock", func(e *env, c *locker.Client) error {
		l := mustLease(e, c)
		require.NoError(e.t, l.Unlock(e.ctx))
		return l.Extend(e.ctx, time.Second)
	}, locker.ErrExpired},
	{"TTL after Unlock", func(e *env, c *locker.Client) error {
		l := mustLease(e, c)
		require.NoError(e.t, l.Unlock(e.ctx))
		_, err := l.TTL(e.ctx)
		return err
	}, locker.ErrExpired},
	{"Unlock twice", func(e *env, c *locker.Client) error {
		l := mustLease(e, c)
		require.NoError(e.t, l.Unlock(e.ctx))
		return l.Unlock(e.ctx)
	}, nil},
	{"Unlock of a nil lease", func(e *env, c *locker.Client) error {
		var l *locker.Lease
		return l.Unlock(e.ctx)
	}, nil},
	{"Extend of a nil lease", func(e *env, c *locker.Client) error {
		var l *locker.Lease
		return l.Extend(e.ctx, time.Second)
	}, locker.ErrExpired},
	{"Claim(MaxNameLen+1 bytes)", func(e *env, c *locker.Client) error {
		_, err := c.Claim(e.ctx, strings.Repeat("k", locker.MaxNameLen+1), time.Second)
		return err
	}, locker.ErrInvalidName},
	{"Claim(ttl 999µs)", func(e *env, c *locker.Client) error { _, err := c.Claim(e.ctx, "k", 999*time.Microsecond); return err }, locker.ErrInvalidTTL},
	{"Claim(cancelled ctx)", func(e *env, c *locker.Client) error {
		ctx, cancel := context.WithCancel(e.ctx)
		cancel()
		_, err := c.Claim(ctx, "k-cancelled", time.Second)
		return err
	}, context.Canceled},
	{"TryLock(cancelled ctx)", func(e *env, c *locker.Client) error {
		ctx, cancel := context.WithCancel(e.ctx)
		cancel()
		_, err := mustMutex(e, c).TryLock(ctx)
		return err
	}, context.Canceled},
	{"NewMutex(Owner longer than MaxNameLen)", func(e *env, c *locker.Client) error {
		_, err := c.NewMutex("m", time.Second, &locker.MutexOptions{Owner: strings.Repeat("o", locker.MaxNameLen+1)})
		return err
	}, locker.ErrInvalidOption},
	{"Extend(ttl -1s)", func(e *env, c *locker.Client) error {
		l := mustLease(e, c)
		defer l.Unlock(e.ctx)
		return l.Extend(e.ctx, -time.Second)
	}, locker.ErrInvalidTTL},
	{"Extend(ttl MaxTTL+1ms)", func(e *env, c *locker.Client) error {
		l := mustLease(e, c)
		defer l.Unlock(e.ctx)
		return l.Extend(e.ctx, locker.MaxTTL+time.Millisecond)
	}, locker.ErrInvalidTTL},
	{"Extend after expiry", func(e *env, c *locker.Client) error {
		l, err := e.mutex(c, "bad-input-short", 5*time.Millisecond, nil).TryLock(e.ctx)
		require.NoError(e.t, err)
		time.Sleep(20 * time.Millisecond)
		return l.Extend(e.ctx, time.Second)
	}, locker.ErrExpired},
	{"reentrant Unlock more times than Lock", func(e *env, c *locker.Client) error {
		m := e.mutex(c, "bad-input-reentrant", 10*time.Second, &locker.MutexOptions{Owner: "o-" + e.prefix, Reentrant: true})
		a, err := m.TryLock(e.ctx)
		require.NoError(e.t, err)
		b, err := m.TryLock(e.ctx)
		require.NoError(e.t, err)
		require.NoError(e.t, a.Unlock(e.ctx))
		require.NoError(e.t, a.Unlock(e.ctx)) // a second Unlock of one hold drops nothing
		require.NoError(e.t, b.Unlock(e.ctx))
		return b.Unlock(e.ctx)
	}, nil},
	{"Unlock of a lease the client closed under (still releases)", func(e *env, _ *locker.Client) error {
		other := e.client(nil)
		l, err := e.mutex(other, "bad-input-closed", 10*time.Second, nil).TryLock(e.ctx)
		require.NoError(e.t, err)
		require.NoError(e.t, other.Close())
		return l.Unlock(e.ctx) // nothing stays behind: checked with the keys below
	}, nil},
}

func mustMutex(e *env, c *locker.Client) *locker.Mutex {
	e.t.Helper()
	return e.mutex(c, "bad-input", 10*time.Second, nil)
}

func mustLease(e *env, c *locker.Client) *locker.Lease {
	e.t.Helper()
	l, err := mustMutex(e, c).TryLock(e.ctx)
	require.NoError(e.t, err, "call: TryLock(bad-input)")
	return l
}

func checkBadInput(t *testing.T, e *env) {
	c := e.client(nil)
	for _, b := range badInputs {
		var err error
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("call: %s: panicked: %v", b.call, r)
				}
			}()
			err = b.do(e, c)
		}()
		if b.want == nil {
			assert.NoError(t, err, "call: %s: got %v, want nil", b.call, err)
			continue
		}
		assert.True(t, errors.Is(err, b.want), "call: %s: got %v, want an error matching %v", b.call, err, b.want)
	}
	assert.Empty(t, e.lockKeysLeft(), "call: keys under the prefix after the bad inputs")
	assert.Empty(t, e.claimKeysLeft(), "call: claim keys under the prefix after the bad inputs")
}

func checkUseAfterClose(t *testing.T, e *env) {
	c := e.client(nil)
	m := e.mutex(c, "closed", 10*time.Second, nil)
	l, err := m.TryLock(e.ctx)
	require.NoError(t, err, "call: TryLock before Close")
	require.NoError(t, c.Close(), "call: Close")
	require.NoError(t, c.Close(), "call: Close again")
	_, err = m.TryLock(e.ctx)
	assert.ErrorIs(t, err, locker.ErrClosed, "call: TryLock after Close")
	_, err = m.Lock(e.ctx)
	assert.ErrorIs(t, err, locker.ErrClosed, "call: Lock after Close")
	_, err = c.NewMutex("other", time.Second, nil)
	assert.ErrorIs(t, err, locker.ErrClosed, "call: NewMutex after Close")
	_, err = c.Claim(e.ctx, "k", time.Second)
	assert.ErrorIs(t, err, locker.ErrClosed, "call: Claim after Close")
	assert.ErrorIs(t, l.Extend(e.ctx, time.Second), locker.ErrClosed, "call: Extend after Close")
	_, err = l.TTL(e.ctx)
	assert.ErrorIs(t, err, locker.ErrClosed, "call: TTL after Close")
	// Unlock is the one call allowed after Close: it still releases.
	assert.NoError(t, l.Unlock(e.ctx), "call: Unlock after Close: want nil (it still releases)")
	assertEnded(t, l, "Unlock after Close")
	other, err := e.client(nil).NewMutex("closed", 10*time.Second, nil)
	require.NoError(t, err, "call: NewMutex on another client")
	o, err := other.TryLock(e.ctx)
	require.NoError(t, err, "call: another client's TryLock after Unlock after Close: got %v, want a lease (the lock was released)", err)
	require.NoError(t, o.Unlock(e.ctx), "call: Unlock")
	assert.NoError(t, l.Unlock(e.ctx), "call: second Unlock after Close: want nil")
}
