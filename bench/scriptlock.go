package bench

import (
	"context"
	"errors"
	"sync"

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
	mutexes   sync.Map // key -> *locker.Mutex
	rwmutexes sync.Map // key -> *locker.RWMutex
}

var (
	_ RWLocker      = (*scriptlockLocker)(nil)
	_ AutoRefresher = (*scriptlockLocker)(nil)
)

func (s *scriptlockLocker) mutex(key string) (*locker.Mutex, error) {
	if m, ok := s.mutexes.Load(key); ok {
		return m.(*locker.Mutex), nil
	}
	m, err := s.c.NewMutex(key, TTL, s.opts)
	if err != nil {
		return nil, err
	}
	v, _ := s.mutexes.LoadOrStore(key, m)
	return v.(*locker.Mutex), nil
}

func (s *scriptlockLocker) Lock(ctx context.Context, key string) (Unlocker, error) {
	m, err := s.mutex(key)
	if err != nil {
		return nil, err
	}
	l, err := m.Lock(ctx)
	if err != nil {
		return nil, err
	}
	return l, nil
}

func (s *scriptlockLocker) TryLock(ctx context.Context, key string) (Unlocker, bool, error) {
	m, err := s.mutex(key)
	if err != nil {
		return nil, false, err
	}
	l, err := m.TryLock(ctx)
	if errors.Is(err, locker.ErrNotObtained) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return l, true, nil
}

func (s *scriptlockLocker) rwmutex(key string) (*locker.RWMutex, error) {
	if m, ok := s.rwmutexes.Load(key); ok {
		return m.(*locker.RWMutex), nil
	}
	m, err := s.c.NewRWMutex(key, TTL, nil)
	if err != nil {
		return nil, err
	}
	v, _ := s.rwmutexes.LoadOrStore(key, m)
	return v.(*locker.RWMutex), nil
}

func (s *scriptlockLocker) RLock(ctx context.Context, key string) (Unlocker, error) {
	m, err := s.rwmutex(key)
	if err != nil {
		return nil, err
	}
	l, err := m.RLock(ctx)
	if err != nil {
		return nil, err
	}
	return l, nil
}

func (s *scriptlockLocker) WLock(ctx context.Context, key string) (Unlocker, error) {
	m, err := s.rwmutex(key)
	if err != nil {
		return nil, err
	}
	l, err := m.Lock(ctx)
	if err != nil {
		return nil, err
	}
	return l, nil
}

func (s *scriptlockLocker) LockAutoRefresh(ctx context.Context, key string) (RefreshedLease, error) {
	m, err := s.c.NewMutex(key, RefreshTTL, &locker.MutexOptions{AutoRefresh: true})
	if err != nil {
		return nil, err
	}
	l, err := m.Lock(ctx)
	if err != nil {
		return nil, err
	}
	return l, nil
}
