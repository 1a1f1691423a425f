package conformance

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/scriptlock/scriptlock/internal/redisserver"
	"github.com/scriptlock/scriptlock/locker"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The rules on a server that cannot be reached or refuses an
// unauthenticated client, in the Fault group.
func init() {
	faultCases = append(faultCases,
		testCase{
			name: "Fault/Unreachable",
			rule: "Once nothing listens on the server's port any more, Lock(context.Background()) does not wait forever: it ends, after retrying for Options.UnreachableTimeout (and within a generous ceiling), " +
				"with an error matching locker.ErrUnreachable and the connection failure (syscall.ECONNREFUSED); the retried failures reached the Observer as EventRetry and the outcome as EventAcquire.",
			check: checkUnreachable,
		},
		testCase{
			name:  "Fault/NoAuth",
			needs: "starts a redis-server of its own and sets its password (CONFIG SET requirepass, CLIENT KILL)",
			rule: "When the server starts requiring a password the client does not have, Lock(context.Background()) and TryLock fail at once (not after Options.UnreachableTimeout) with an error that says NOAUTH, " +
				"whatever the server's message (Redis answers a command with more than 10 arguments from an unauthenticated client with \"ERR Protocol error: unauthenticated multibulk length\").",
			check: checkNoAuth,
		},
	)
}

// unreachableBound is the Options.UnreachableTimeout of the Unreachable
// rule, and unreachableCeiling how long the rule lets Lock take at most: a
// generous ceiling, since one attempt of a driver may itself retry the dial
// for seconds (go-redis: its MaxRetries times five dials, about 1.7 s) and
// Lock ends with the first attempt that fails after the bound.
const (
	unreachableBound   = 300 * time.Millisecond
	unreachableCeiling = 30 * time.Second
)

func checkUnreachable(t *testing.T, e *env) {
	if e.d.admin.cluster() != nil {
		e.notApplicable("a standalone rule: the driver is pointed at a proxy of the standalone server, which a Cluster client would bypass")
	}
	p := redisserver.StartProxy(t, e.d.addrs[0])
	var rec eventLog
	viaProxy := e.d.conn
	viaProxy.Addrs = []string{p.Addr}
	c := e.clientOn(e.d.driver.connect(t, viaProxy), &locker.Options{UnreachableTimeout: unreachableBound, Observer: rec.observe})
	m := e.mutex(c, "unreachable", 10*time.Second, nil)
	l, err := m.TryLock(e.ctx)
	require.NoError(t, err, "call: TryLock through the proxy, before it stops")
	require.NoError(t, l.Unlock(e.ctx), "call: Unlock through the proxy, before it stops")

	p.Stop() // its connections are closed and nothing listens on its port
	start := time.Now()
	l, err = lockWithin(t, m, unreachableCeiling)
	took := time.Since(start)
	t.Logf("call: Lock(context.Background()) with nothing listening; got after %v: %v", took.Round(time.Millisecond), err)
	assert.Nil(t, l, "no lease")
	require.ErrorIs(t, err, locker.ErrUnreachable, "want: an error matching locker.ErrUnreachable")
	assert.ErrorIs(t, err, syscall.ECONNREFUSED, "want: the connection failure wrapped (the port refuses connections)")
	assert.NotErrorIs(t, err, locker.ErrNotObtained, "want: not ErrNotObtained (nobody holds the lock)")
	assert.GreaterOrEqual(t, took, unreachableBound, "want: retried for at least Options.UnreachableTimeout")
	retries := rec.of(locker.EventRetry, m.Name())
	assert.NotEmpty(t, retries, "want: the failures before the bound reported as EventRetry")
	for _, r := range retries {
		assert.Error(t, r.Err, "want: each EventRetry carries its failure")
	}
	acq := rec.of(locker.EventAcquire, m.Name())
	if assert.NotEmpty(t, acq, "want: the outcome reported as EventAcquire") {
		assert.ErrorIs(t, acq[len(acq)-1].Err, locker.ErrUnreachable, "want: EventAcquire with the error Lock returned")
	}
}

func checkNoAuth(t *testing.T, e *env) {
	if e.d.admin.cluster() != nil {
		e.notApplicable("a standalone rule: it starts a server of its own")
	}
	if env := redisserver.ExternalEnv(); slices.Contains(env, redisserver.EnvRedisAddr) || slices.Contains(env, redisserver.EnvRedisURL) {
		e.notApplicable("this rule sets a password on a server of its own, and %v names the standalone server: unset it to run the rule", env)
	}
	srv := redisserver.StartStandalone(t)
	var rec eventLog
	c := e.clientOn(e.d.driver.connect(t, Conn{Addrs: []string{srv.Addr}}), &locker.Options{Observer: rec.observe})
	m := e.mutex(c, "noauth", 10*time.Second, nil)
	l, err := m.TryLock(e.ctx)
	require.NoError(t, err, "call: TryLock before the server requires a password")
	require.NoError(t, l.Unlock(e.ctx), "call: Unlock before the server requires a password")

	var b [16]byte
	_, _ = rand.Read(b[:])
	pw := hex.EncodeToString(b[:])
	_, err = srv.Do(e.ctx, "CONFIG", "SET", "requirepass", pw)
	require.NoError(t, err, "call: admin CONFIG SET requirepass")
	// The driver's connections logged in before: they must connect again.
	_, err = srv.DoAs(e.ctx, "default", pw, "CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes")
	require.NoError(t, err, "call: admin CLIENT KILL TYPE normal")

	start := time.Now()
	l, err = lockWithin(t, m, locker.DefaultUnreachableTimeout)
	t.Logf("call: Lock(context.Background()) without the password; got after %v: %v", time.Since(start).Round(time.Millisecond), err)
	assert.Nil(t, l, "no lease")
	require.Error(t, err, "want: an authentication error")
	assert.Contains(t, err.Error(), "NOAUTH", "want: an error that says NOAUTH")
	assert.NotErrorIs(t, err, locker.ErrUnreachable, "want: an answer from the server, not a server out of reach")
	assert.NotErrorIs(t, err, locker.ErrNotObtained)

	// A client may still meet a connection the server closed (EOF; drivers
	// do not retry): the next call reconnects and is refused.
	for try := 0; try < 5; try++ {
		_, err = m.TryLock(e.ctx)
		t.Logf("call: TryLock without the password, try %d; got: %v", try, err)
		if err == nil || !errors.Is(err, io.EOF) {
			break
		}
	}
	require.Error(t, err, "want: an authentication error")
	assert.Contains(t, err.Error(), "NOAUTH", "want: an error that says NOAUTH")
}

// lockWithin runs m.Lock(context.Background()) and fails t when it has not
// returned within ceiling (the Lock goes on until its Client is closed).
func lockWithin(t *testing.T, m *locker.Mutex, ceiling time.Duration) (*locker.Lease, error) {
	t.Helper()
	type result struct {
		l   *locker.Lease
		err error
	}
	ch := make(chan result, 1)
	go func() {
		l, err := m.Lock(context.Background())
		ch <- result{l, err}
	}()
	select {
	case r := <-ch:
		return r.l, r.err
	case <-time.After(ceiling):
		t.Fatalf("call: Lock(context.Background()); got: no return within %v; want: an error", ceiling)
		return nil, nil
	}
}

// eventLog records the Events a Client reports.
type eventLog struct {
	mu sync.Mutex
	es []locker.Event
}

func (r *eventLog) observe(_ context.Context, e locker.Event) {
	r.mu.Lock()
	r.es = append(r.es, e)
	r.mu.Unlock()
}

// of returns the recorded events of kind k for the lock called name.
func (r *eventLog) of(k locker.EventKind, name string) []locker.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []locker.Event
	for _, e := range r.es {
		if e.Kind == k && e.Lock == name {
			out = append(out, e)
		}
	}
	return out
}
