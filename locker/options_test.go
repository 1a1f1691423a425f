package locker_test

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/scriptlock/scriptlock/locker"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNewNilScripter(t *testing.T) {
	c, err := locker.New(nil, nil)
	require.ErrorIs(t, err, locker.ErrNilScripter)
	assert.Nil(t, c)

	var typedNil *fakeScripter
	c, err = locker.New(typedNil, nil)
	require.ErrorIs(t, err, locker.ErrNilScripter)
	assert.Nil(t, c)
}

func TestNewInvalidOptions(t *testing.T) {
	cases := []struct {
		name string
		opts locker.Options
	}{
		{"prefix with {", locker.Options{Prefix: "app{"}},
		{"prefix with }", locker.Options{Prefix: "app}:"}},
		{"prefix with {}", locker.Options{Prefix: "{x}:"}},
		{"drift -0.1", locker.Options{DriftFactor: -0.1}},
		{"drift 0.5", locker.Options{DriftFactor: 0.5}},
		{"drift 1", locker.Options{DriftFactor: 1}},
		{"drift NaN", locker.Options{DriftFactor: math.NaN()}},
		{"drift +Inf", locker.Options{DriftFactor: math.Inf(1)}},
		{"min delay negative", locker.Options{MinRetryDelay: -time.Millisecond}},
		{"max delay negative", locker.Options{MaxRetryDelay: -time.Millisecond}},
		{"max < min", locker.Options{MinRetryDelay: 50 * time.Millisecond, MaxRetryDelay: 10 * time.Millisecond}},
		{"max > 1m", locker.Options{MaxRetryDelay: time.Minute + time.Nanosecond}},
		{"min > 1m, max default", locker.Options{MinRetryDelay: 2 * time.Minute}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake()
			opts := tc.opts
			c, err := locker.New(f, &opts)
			require.ErrorIs(t, err, locker.ErrInvalidOption)
			assert.Nil(t, c)
			assert.Zero(t, f.count(), "New must not contact Redis")
		})
	}
}

func TestNewValidOptionEdges(t *testing.T) {
	for _, o := range []locker.Options{
		{DriftFactor: 0.49},
		{MinRetryDelay: time.Minute, MaxRetryDelay: time.Minute},
		{MinRetryDelay: time.Nanosecond, MaxRetryDelay: time.Nanosecond},
		{MinRetryDelay: 500 * time.Millisecond}, // max defaults to at least min
		{Prefix: "a:b:c:"},
		{UnreachableTimeout: -1}, // no bound
		{UnreachableTimeout: time.Nanosecond},
	} {
		_, err := locker.New(newFake(), &o)
		assert.NoError(t, err, "%+v", o)
	}
}

func TestDefaultPrefix(t *testing.T) {
	c1, _ := newClient(t, nil)
	c2, _ := newClient(t, &locker.Options{})
	c3, _ := newClient(t, &locker.Options{Prefix: "app:"})
	assert.Equal(t, "scriptlock:{x}", c1.Key("x"))
	assert.Equal(t, "scriptlock:{x}", c2.Key("x"))
	assert.Equal(t, "app:{x}", c3.Key("x"))
	assert.Equal(t, "scriptlock:{%7Ba%25b%7D}", c1.Key("{a%b}"))
}

func TestNewMutexInvalid(t *testing.T) {
	long := strings.Repeat("x", locker.MaxNameLen+1)
	cases := []struct {
		name    string
		lock    string
		ttl     time.Duration
		opts    *locker.MutexOptions
		wantErr error
	}{
		{"empty name", "", time.Second, nil, locker.ErrInvalidName},
		{"name MaxNameLen+1", long, time.Second, nil, locker.ErrInvalidName},
		{"ttl 0", "n", 0, nil, locker.ErrInvalidTTL},
		{"ttl -1s", "n", -time.Second, nil, locker.ErrInvalidTTL},
		{"ttl 999µs", "n", 999 * time.Microsecond, nil, locker.ErrInvalidTTL},
		{"ttl MaxTTL+1", "n", locker.MaxTTL + 1, nil, locker.ErrInvalidTTL},
		{"reentrant without owner", "n", time.Second, &locker.MutexOptions{Reentrant: true}, locker.ErrInvalidOption},
		{"owner too long", "n", time.Second, &locker.MutexOptions{Owner: long}, locker.ErrInvalidOption},
		{"owner too long reentrant", "n", time.Second, &locker.MutexOptions{Owner: long, Reentrant: true}, locker.ErrInvalidOption},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, f := newClient(t, nil)
			m, err := c.NewMutex(tc.lock, tc.ttl, tc.opts)
			require.ErrorIs(t, err, tc.wantErr)
			assert.Nil(t, m)
			assert.Zero(t, f.count(), "nothing may be sent to Redis")
		})
	}
}

func TestNewMutexValidEdges(t *testing.T) {
	c, f := newClient(t, nil)
	for _, ttl := range []time.Duration{locker.MinTTL, locker.MaxTTL} {
		_, err := c.NewMutex("n", ttl, nil)
		assert.NoError(t, err, "ttl %v", ttl)
	}
	_, err := c.NewMutex(strings.Repeat("x", locker.MaxNameLen), time.Second,
		&locker.MutexOptions{Owner: strings.Repeat("o", locker.MaxNameLen), Reentrant: true})
	assert.NoError(t, err)
	assert.Zero(t, f.count(), "NewMutex must not contact Redis")
}

func TestClaimInvalid(t *testing.T) {
	cases := []struct {
		name    string
		key     string
		ttl     time.Duration
		wantErr error
	}{
		{"empty key", "", time.Second, locker.ErrInvalidName},
		{"key MaxNameLen+1", strings.Repeat("k", locker.MaxNameLen+1), time.Second, locker.ErrInvalidName},
		{"ttl 0", "k", 0, locker.ErrInvalidTTL},
		{"ttl -1s", "k", -time.Second, locker.ErrInvalidTTL},
		{"ttl 999µs", "k", 999 * time.Microsecond, locker.ErrInvalidTTL},
		{"ttl MaxTTL+1", "k", locker.MaxTTL + 1, locker.ErrInvalidTTL},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, f := newClient(t, nil)
			first, err := c.Claim(testCtx(t), tc.key, tc.ttl)
			require.ErrorIs(t, err, tc.wantErr)
			assert.False(t, first)
			assert.Zero(t, f.count(), "nothing may be sent to Redis")
		})
	}
}

func TestExtendInvalidTTL(t *testing.T) {
	_, f, ctx, l := heldMutex(t)
	vu := l.ValidUntil()
	f.reset()
	for _, ttl := range []time.Duration{0, -time.Second, 999 * time.Microsecond, locker.MaxTTL + 1} {
		require.ErrorIs(t, l.Extend(ctx, ttl), locker.ErrInvalidTTL, "ttl %v", ttl)
	}
	assert.Zero(t, f.count(), "nothing may be sent to Redis")
	assert.Equal(t, vu, l.ValidUntil(), "a rejected Extend leaves the deadline unchanged")
}

// clientOps are the operations checked for nil ctx and after Close.
func clientOps(c *locker.Client, m *locker.Mutex, l *locker.Lease) map[string]func(context.Context) error {
	return map[string]func(context.Context) error{
		"TryLock": func(ctx context.Context) error { _, err := m.TryLock(ctx); return err },
		"Lock":    func(ctx context.Context) error { _, err := m.Lock(ctx); return err },
		"Do":      func(ctx context.Context) error { return m.Do(ctx, func(context.Context) error { return nil }) },
		"Claim":   func(ctx context.Context) error { _, err := c.Claim(ctx, "k", time.Second); return err },
		"ClaimAs": func(ctx context.Context) error { _, err := c.ClaimAs(ctx, "k", "tok", time.Second); return err },
		"Unlock":  func(ctx context.Context) error { return l.Unlock(ctx) },
		"Extend":  func(ctx context.Context) error { return l.Extend(ctx, time.Second) },
		"TTL":     func(ctx context.Context) error { _, err := l.TTL(ctx); return err },
	}
}

func TestNilContext(t *testing.T) {
	c, f := newClient(t, nil)
	m := newMutex(t, c, "n", time.Second, nil)
	l, err := m.TryLock(testCtx(t))
	require.NoError(t, err)
	f.reset()

	var nilCtx context.Context
	for name, op := range clientOps(c, m, l) {
		t.Run(name, func(t *testing.T) {
			require.ErrorIs(t, op(nilCtx), locker.ErrNilContext)
		})
	}
	assert.Zero(t, f.count(), "nothing may be sent to Redis: %v", f.ops())
	// The lease is unchanged: a later Unlock with a real ctx releases it.
	assert.True(t, l.Valid())
	require.NoError(t, l.Unlock(testCtx(t)))
	assert.Len(t, f.runs("release"), 1)
}

func TestClosed(t *testing.T) {
	c, f := newClient(t, nil)
	m := newMutex(t, c, "n", time.Second, nil)
	l, err := m.TryLock(testCtx(t))
	require.NoError(t, err)
	f.reset()

	require.NoError(t, c.Close())
	require.NoError(t, c.Close(), "Close is idempotent")

	ctx := testCtx(t)
	ops := clientOps(c, m, l)
	unlock := ops["Unlock"]
	delete(ops, "Unlock")
	for name, op := range ops {
		t.Run(name, func(t *testing.T) {
			require.ErrorIs(t, op(ctx), locker.ErrClosed)
		})
	}
	_, err = c.NewMutex("other", time.Second, nil)
	require.ErrorIs(t, err, locker.ErrClosed)
	_, err = c.NewRWMutex("other", time.Second, nil)
	require.ErrorIs(t, err, locker.ErrClosed)
	assert.Zero(t, f.count(), "nothing may be sent to Redis: %v", f.ops())
	assert.True(t, l.Valid(), "Close does not release held locks")

	require.NoError(t, unlock(ctx), "Unlock still releases after Close")
	assert.Equal(t, []string{"evalsha:release"}, f.ops())
	assert.False(t, l.Valid())
}
