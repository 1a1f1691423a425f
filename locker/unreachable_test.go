package locker_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/scriptlock/scriptlock/locker"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Connection failures as the standard library reports them.
var (
	errRefused = &net.OpError{Op: "dial", Net: "tcp", Err: &os.SyscallError{Syscall: "connect", Err: syscall.ECONNREFUSED}}
	errNoHost  = &net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Err: "no such host", Name: "redis.invalid", IsNotFound: true}}
)

// events records the Events of a Client.
type events struct {
	mu sync.Mutex
	es []locker.Event
}

func (r *events) observe(_ context.Context, e locker.Event) {
	r.mu.Lock()
	r.es = append(r.es, e)
	r.mu.Unlock()
}

// of returns the recorded events of kind k.
func (r *events) of(k locker.EventKind) []locker.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []locker.Event
	for _, e := range r.es {
		if e.Kind == k {
			out = append(out, e)
		}
	}
	return out
}

// unreachableOpts are Options with a short UnreachableTimeout and short
// pauses, observed by r.
func unreachableOpts(bound time.Duration, r *events) *locker.Options {
	return &locker.Options{UnreachableTimeout: bound, MinRetryDelay: time.Millisecond, MaxRetryDelay: 5 * time.Millisecond, Observer: r.observe}
}

// returns runs f and fails t if it does not return within ceiling, a
// generous multiple of the bound under test: what is checked is that the
// call returns at all.
func returns[T any](t *testing.T, ceiling time.Duration, f func() (T, error)) (T, error) {
	t.Helper()
	var (
		v    T
		err  error
		done = make(chan struct{})
	)
	go func() {
		defer close(done)
		v, err = f()
	}()
	select {
	case <-done:
		return v, err
	case <-time.After(ceiling):
		t.Fatalf("the call did not return within %v", ceiling)
		panic("unreachable")
	}
}

// TestLockUnreachable checks that every blocking acquisition with a
// context without deadline ends with ErrUnreachable, wrapping the
// connection failure, once the server has not answered for
// UnreachableTimeout, and that every retried failure reached the Observer.
func TestLockUnreachable(t *testing.T) {
	const bound = 50 * time.Millisecond
	kinds := []struct {
		name    string
		scripts []string
		lock    func(c *locker.Client) (any, error)
	}{
		{"Mutex.Lock", []string{"acquire"}, func(c *locker.Client) (any, error) {
			return newMutex(t, c, "n", time.Second, nil).Lock(context.Background())
		}},
		{"Mutex.Lock/FIFO", []string{"acquire"}, func(c *locker.Client) (any, error) {
			return newMutex(t, c, "n", time.Second, &locker.MutexOptions{FIFO: true}).Lock(context.Background())
		}},
		{"RWMutex.RLock", []string{"rw_rlock"}, func(c *locker.Client) (any, error) {
			rw, err := c.NewRWMutex("n", time.Second, nil)
			require.NoError(t, err)
			return rw.RLock(context.Background())
		}},
		{"RWMutex.Lock", []string{"rw_lock"}, func(c *locker.Client) (any, error) {
			rw, err := c.NewRWMutex("n", time.Second, nil)
			require.NoError(t, err)
			return rw.Lock(context.Background())
		}},
		{"Semaphore.Acquire", []string{"sem_acquire"}, func(c *locker.Client) (any, error) {
			s, err := c.NewSemaphore("n", 2, time.Second, nil)
			require.NoError(t, err)
			return s.Acquire(context.Background(), 1)
		}},
		{"MultiLock.Lock", []string{"multi_acquire"}, func(c *locker.Client) (any, error) {
			m, err := c.NewMultiLock([]string{"a", "b"}, time.Second, nil)
			require.NoError(t, err)
			return m.Lock(context.Background())
		}},
	}
	for _, k := range kinds {
		for _, fail := range []error{errRefused, errNoHost, errConn} {
			t.Run(k.name+"/"+fail.Error(), func(t *testing.T) {
				var r events
				f := newFake()
				c := clientOn(t, f, unreachableOpts(bound, &r))
				f.fail(fail, k.scripts...)
				start := time.Now()
				l, err := returns(t, 100*bound, func() (any, error) { return k.lock(c) })
				took := time.Since(start)
				require.Error(t, err, "call: %s(context.Background()) against an unreachable server", k.name)
				assert.Nil(t, l)
				require.ErrorIs(t, err, locker.ErrUnreachable)
				require.ErrorIs(t, err, fail, "the connection failure is wrapped")
				assert.NotErrorIs(t, err, locker.ErrNotObtained, "nobody was found holding the lock")
				assert.GreaterOrEqual(t, took, bound, "it kept trying for the bound")
				retries := r.of(locker.EventRetry)
				require.NotEmpty(t, retries, "the failures before the bound reach the Observer")
				for _, e := range retries {
					assert.ErrorIs(t, e.Err, fail)
				}
				acq := r.of(locker.EventAcquire)
				require.Len(t, acq, 1)
				assert.ErrorIs(t, acq[0].Err, locker.ErrUnreachable, "the last failure reaches the Observer with the acquisition")
				assert.Equal(t, acq[0].Attempts, len(retries)+1, "every failed attempt but the last is an EventRetry")
				assert.GreaterOrEqual(t, len(f.runs(k.scripts[0])), acq[0].Attempts, "every attempt ran the script")
			})
		}
	}
}

// TestQuorumUnreachable checks Quorum.Lock: with every deployment out of
// reach it ends with ErrUnreachable (the first Client's bound).
func TestQuorumUnreachable(t *testing.T) {
	const bound = 50 * time.Millisecond
	var r events
	var clients []*locker.Client
	for range 3 {
		f := newFake()
		f.fail(errRefused, "acquire")
		clients = append(clients, clientOn(t, f, unreachableOpts(bound, &r)))
	}
	q, err := locker.NewQuorum(clients, "n", time.Second, nil)
	require.NoError(t, err)
	_, err = returns(t, 100*bound, func() (*locker.QuorumLease, error) { return q.Lock(context.Background()) })
	require.ErrorIs(t, err, locker.ErrUnreachable)
	require.ErrorIs(t, err, syscall.ECONNREFUSED)
	assert.NotEmpty(t, r.of(locker.EventRetry))
}

// TestLockUnreachableWaitsForHolder checks that refusals (the lock is
// held) are answers: a Lock refused for many times the bound still waits,
// and is granted when the holder lets go.
func TestLockUnreachableWaitsForHolder(t *testing.T) {
	const bound = 10 * time.Millisecond
	var r events
	f := newFake()
	c := clientOn(t, f, unreachableOpts(bound, &r))
	start := time.Now()
	f.handle(func(context.Context, call) (any, error) {
		if time.Since(start) < 20*bound {
			return []any{int64(0), int64(1)}, nil // held
		}
		return []any{int64(1), int64(7)}, nil
	}, "acquire")
	l, err := returns(t, 1000*bound, func() (*locker.Lease, error) {
		return newMutex(t, c, "n", time.Second, nil).Lock(context.Background())
	})
	require.NoError(t, err)
	assert.Equal(t, int64(7), l.Fence())
}

// TestLockUnreachableCountsFromLastAnswer checks that the bound counts from
// the first failure since the server last answered: failures each followed
// by an answer (a refusal, or a passing server error such as TRYAGAIN)
// never add up to the bound, however long they go on.
func TestLockUnreachableCountsFromLastAnswer(t *testing.T) {
	const bound = 50 * time.Millisecond
	for _, answer := range []struct {
		name  string
		reply any
		err   error
	}{
		{"refusal", []any{int64(0), int64(1)}, nil},
		{"TRYAGAIN", nil, locker.NewServerError("TRYAGAIN Multiple keys request during rehashing of slot", nil)},
	} {
		t.Run(answer.name, func(t *testing.T) {
			var r events
			f := newFake()
			c := clientOn(t, f, unreachableOpts(bound, &r))
			start := time.Now()
			n := 0
			f.handle(func(context.Context, call) (any, error) {
				n++
				switch {
				case time.Since(start) > 3*bound:
					return []any{int64(1), int64(7)}, nil
				case n%2 == 0:
					return answer.reply, answer.err
				}
				return nil, errRefused
			}, "acquire")
			l, err := returns(t, 100*bound, func() (*locker.Lease, error) {
				return newMutex(t, c, "n", time.Second, nil).Lock(context.Background())
			})
			require.NoError(t, err)
			assert.Equal(t, int64(7), l.Fence())
		})
	}
	t.Run("TRYAGAIN only", func(t *testing.T) {
		var r events
		f := newFake()
		c := clientOn(t, f, unreachableOpts(bound/5, &r))
		start := time.Now()
		f.handle(func(context.Context, call) (any, error) {
			if time.Since(start) < 3*bound {
				return nil, fmt.Errorf("locker: %w", locker.NewServerError("TRYAGAIN Multiple keys request during rehashing of slot", nil))
			}
			return []any{int64(1), int64(7)}, nil
		}, "acquire")
		_, err := returns(t, 10*time.Second, func() (*locker.Lease, error) {
			return newMutex(t, c, "n", time.Second, nil).Lock(context.Background())
		})
		require.NoError(t, err, "a passing server error is an answer: the server is reachable")
	})
}

// TestLockUnreachableDeadline checks that a ctx deadline, not the bound,
// ends a Lock with one: the error is ErrNotObtained joined with the
// deadline and the last connection failure.
func TestLockUnreachableDeadline(t *testing.T) {
	var r events
	f := newFake()
	c := clientOn(t, f, unreachableOpts(time.Millisecond, &r))
	f.fail(errRefused, "acquire")
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := newMutex(t, c, "n", time.Second, nil).Lock(ctx)
	require.ErrorIs(t, err, locker.ErrNotObtained)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.ErrorIs(t, err, syscall.ECONNREFUSED)
	assert.NotErrorIs(t, err, locker.ErrUnreachable)
}

// TestLockUnreachableNoBound checks that a negative UnreachableTimeout
// keeps retrying connection failures until ctx ends.
func TestLockUnreachableNoBound(t *testing.T) {
	f := newFake()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	retries := 0
	c := clientOn(t, f, &locker.Options{UnreachableTimeout: -1, MinRetryDelay: time.Millisecond, MaxRetryDelay: time.Millisecond,
		Observer: func(_ context.Context, e locker.Event) {
			if e.Kind == locker.EventRetry {
				if retries++; retries == 50 {
					cancel()
				}
			}
		}})
	f.fail(errRefused, "acquire")
	_, err := returns(t, 10*time.Second, func() (*locker.Lease, error) {
		return newMutex(t, c, "n", time.Second, nil).Lock(ctx)
	})
	require.ErrorIs(t, err, locker.ErrNotObtained)
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorIs(t, err, syscall.ECONNREFUSED)
	assert.NotErrorIs(t, err, locker.ErrUnreachable)
}

// TestLockNotTransientAtOnce checks that errors no retry can cure (an
// authentication or permission error) end a Lock at its first attempt,
// bound or not.
func TestLockNotTransientAtOnce(t *testing.T) {
	for _, fail := range []error{
		errAnswered,
		locker.NewServerError("NOAUTH Authentication required.", nil),
		locker.NewServerError("WRONGPASS invalid username-password pair or user is disabled.", nil),
		locker.NewServerError("ERR Protocol error: unauthenticated multibulk length", nil),
	} {
		t.Run(fail.Error(), func(t *testing.T) {
			var r events
			f := newFake()
			c := clientOn(t, f, unreachableOpts(time.Hour, &r))
			f.fail(fail, "acquire")
			_, err := returns(t, 10*time.Second, func() (*locker.Lease, error) {
				return newMutex(t, c, "n", time.Second, nil).Lock(context.Background())
			})
			require.ErrorIs(t, err, fail)
			assert.Len(t, f.runs("acquire"), 1)
			assert.Empty(t, r.of(locker.EventRetry))
		})
	}
}
