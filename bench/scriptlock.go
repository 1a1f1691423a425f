package bench

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/scriptlock/scriptlock/locker"
)

// Scriptlock returns a Locker over c. It makes one *locker.Mutex per key
// (TTL, default options) on first use and reuses it, the way a program with
// long-lived lock names uses scriptlock (a Mutex is safe for concurrent use
// and each Lock gets its own token). Lock is Mutex.Lock with the Client's
// waiting policy; the returned Unlocker is the *locker.Lease itself.
//
// It also implements RWLocker, with one *locker.RWMutex per key (TTL,
// default options: writer preference), reused the same way, and
// AutoRefresher: LockAutoRefresh is Mutex.Lock on a Mutex made for the call
// with RefreshTTL and MutexOptions.AutoRefresh, renewed by the Client's
// shared renewer; the returned lease is the *locker.Lease, whose Err
// reports a loss.
func Scriptlock(c *locker.Client) Locker {
	return &scriptlockLocker{c: c}
}

// ScriptlockFIFO is Scriptlock with MutexOptions.FIFO: waiters are granted
// the lock in arrival order.
func ScriptlockFIFO(c *locker.Client) Locker {
	return &scriptlockLocker{c: c, opts: &locker.MutexOptions{FIFO: true}}
}

type scriptlockLocker struct {
	c         *locker.Client
	opts      *locker.MutexOptions
	handed    *atomic.Int64 // hand-overs seen by the Client's Observer, or nil
	mutexes   sync.Map      // key -> *locker.Mutex
	rwmutexes sync.Map      // key -> *locker.RWMutex
	sems      sync.Map      // key -> *locker.Semaphore
	multis    sync.Map      // keys joined by "\x00" -> *locker.MultiLock
}

// HandOvers returns how many Lock calls were granted by a hand-over, as
// the Client's Observer saw them (Event.HandedOver); 0 on a Client built
// without countHandOvers.
func (s *scriptlockLocker) HandOvers() int64 {
	if s.handed == nil {
		return 0
	}
	return s.handed.Load()
}

// countHandOvers returns Options whose Observer counts the acquisitions
// granted by a hand-over into n.
func countHandOvers(n *atomic.Int64) *locker.Options {
	return &locker.Options{Observer: func(_ context.Context, e locker.Event) {
		if e.HandedOver {
			n.Add(1)
		}
	}}
}

var (
	_ HandOverCounter = (*scriptlockLocker)(nil)
	_ RWLocker        = (*scriptlockLocker)(nil)
	_ AutoRefresher   = (*scriptlockLocker)(nil)
	_ SemLocker       = (*scriptlockLocker)(nil)
	_ MultiLocker     = (*scriptlockLocker)(nil)
)

// MultiLock takes keys with a *locker.MultiLock (TTL), reused per key set;
// the Unlocker is the *locker.MultiLease.
func (s *scriptlockLocker) MultiLock(ctx context.Context, keys []string) (Unlocker, error) {
	m, err := cached(&s.multis, strings.Join(keys, "\x00"), func() (*locker.MultiLock, error) {
		return s.c.NewMultiLock(keys, TTL, nil)
	})
	if err != nil {
		return nil, err
	}
	return unlocker(m.Lock(ctx))
}

// Acquire takes n permits of a *locker.Semaphore per key (TTL, permits,
// FIFO when the Locker is ScriptlockFIFO), reused like the mutexes.
func (s *scriptlockLocker) Acquire(ctx context.Context, key string, permits, n int) (Unlocker, error) {
	sem, err := cached(&s.sems, key, func() (*locker.Semaphore, error) {
		return s.c.NewSemaphore(key, permits, TTL, &locker.SemaphoreOptions{FIFO: s.opts != nil && s.opts.FIFO})
	})
	if err != nil {
		return nil, err
	}
	return unlocker(sem.Acquire(ctx, n))
}

func (s *scriptlockLocker) mutex(key string) (*locker.Mutex, error) {
	return cached(&s.mutexes, key, func() (*locker.Mutex, error) { return s.c.NewMutex(key, TTL, s.opts) })
}

// cached returns the lock stored under key in m, making and storing one
// with newLock on first use.
func cached[T any](m *sync.Map, key string, newLock func() (T, error)) (T, error) {
	if v, ok := m.Load(key); ok {
		return v.(T), nil
	}
	v, err := newLock()
	if err != nil {
		return v, err
	}
	got, _ := m.LoadOrStore(key, v)
	return got.(T), nil
}

// unlocker returns l as an Unlocker, or err with a nil Unlocker (not a nil
// lease inside one).
func unlocker[L Unlocker](l L, err error) (Unlocker, error) {
	if err != nil {
		return nil, err
	}
	return l, nil
}

// tried is unlocker for a TryLock: ErrNotObtained is a refusal, not an
// error.
func tried[L Unlocker](l L, err error) (Unlocker, bool, error) {
	if errors.Is(err, locker.ErrNotObtained) {
		return nil, false, nil
	}
	u, err := unlocker(l, err)
	return u, err == nil, err
}

func (s *scriptlockLocker) Lock(ctx context.Context, key string) (Unlocker, error) {
	m, err := s.mutex(key)
	if err != nil {
		return nil, err
	}
	return unlocker(m.Lock(ctx))
}

func (s *scriptlockLocker) TryLock(ctx context.Context, key string) (Unlocker, bool, error) {
	m, err := s.mutex(key)
	if err != nil {
		return nil, false, err
	}
	return tried(m.TryLock(ctx))
}

func (s *scriptlockLocker) rwmutex(key string) (*locker.RWMutex, error) {
	return cached(&s.rwmutexes, key, func() (*locker.RWMutex, error) { return s.c.NewRWMutex(key, TTL, nil) })
}

func (s *scriptlockLocker) RLock(ctx context.Context, key string) (Unlocker, error) {
	m, err := s.rwmutex(key)
	if err != nil {
		return nil, err
	}
	return unlocker(m.RLock(ctx))
}

func (s *scriptlockLocker) WLock(ctx context.Context, key string) (Unlocker, error) {
	m, err := s.rwmutex(key)
	if err != nil {
		return nil, err
	}
	return unlocker(m.Lock(ctx))
}

func (s *scriptlockLocker) LockAutoRefresh(ctx context.Context, key string) (RefreshedLease, error) {
	return s.LockAutoRefreshTTL(ctx, key, RefreshTTL)
}

func (s *scriptlockLocker) LockAutoRefreshTTL(ctx context.Context, key string, ttl time.Duration) (RefreshedLease, error) {
	m, err := s.c.NewMutex(key, ttl, &locker.MutexOptions{AutoRefresh: true})
	if err != nil {
		return nil, err
	}
	l, err := m.Lock(ctx)
	if err != nil {
		return nil, err
	}
	return l, nil
}
