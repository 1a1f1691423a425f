package bench

import (
	"context"
	"sync"
)

// SyncMutex returns an in-process Locker: one sync.Mutex per key. It is the
// handoff ideal the contended scenario compares with: no network, no
// polling, and Go's starvation mode hands the mutex to a waiter that has
// waited over 1 ms. Lock ignores ctx (a sync.Mutex cannot stop waiting), so
// waiters still queued when a contended run ends get the mutex, release it
// at once and count as pending. Unlock never fails.
//
// It also implements RWLocker with one sync.RWMutex per key (ctx ignored
// likewise): the reference of the op=rw scenario, reported as
// lib=syncmutex too. Go's RWMutex also makes new readers wait behind a
// waiting writer. And SemLocker, with a buffered channel per key: the
// reference of the op=semaphore scenario.
func SyncMutex() Locker {
	return &syncMutexLocker{}
}

type syncMutexLocker struct {
	mutexes   sync.Map // key -> *sync.Mutex
	rwmutexes sync.Map // key -> *sync.RWMutex
	chanSemaphores
}

var (
	_ RWLocker  = (*syncMutexLocker)(nil)
	_ SemLocker = (*syncMutexLocker)(nil)
)

func (s *syncMutexLocker) mutex(key string) *sync.Mutex {
	if m, ok := s.mutexes.Load(key); ok {
		return m.(*sync.Mutex)
	}
	m, _ := s.mutexes.LoadOrStore(key, new(sync.Mutex))
	return m.(*sync.Mutex)
}

func (s *syncMutexLocker) Lock(_ context.Context, key string) (Unlocker, error) {
	m := s.mutex(key)
	m.Lock()
	return syncUnlocker{m}, nil
}

func (s *syncMutexLocker) TryLock(_ context.Context, key string) (Unlocker, bool, error) {
	m := s.mutex(key)
	if !m.TryLock() {
		return nil, false, nil
	}
	return syncUnlocker{m}, true, nil
}

// syncUnlocker is pointer-shaped, so returning it as an Unlocker does not
// allocate.
type syncUnlocker struct{ m *sync.Mutex }

func (u syncUnlocker) Unlock(context.Context) error {
	u.m.Unlock()
	return nil
}

func (s *syncMutexLocker) rwmutex(key string) *sync.RWMutex {
	if m, ok := s.rwmutexes.Load(key); ok {
		return m.(*sync.RWMutex)
	}
	m, _ := s.rwmutexes.LoadOrStore(key, new(sync.RWMutex))
	return m.(*sync.RWMutex)
}

func (s *syncMutexLocker) RLock(_ context.Context, key string) (Unlocker, error) {
	m := s.rwmutex(key)
	m.RLock()
	return syncRUnlocker{m}, nil
}

func (s *syncMutexLocker) WLock(_ context.Context, key string) (Unlocker, error) {
	m := s.rwmutex(key)
	m.Lock()
	return syncWUnlocker{m}, nil
}

// syncRUnlocker and syncWUnlocker release a read and a write hold of a
// sync.RWMutex; pointer-shaped, so no allocation as an Unlocker.
type (
	syncRUnlocker struct{ m *sync.RWMutex }
	syncWUnlocker struct{ m *sync.RWMutex }
)

func (u syncRUnlocker) Unlock(context.Context) error {
	u.m.RUnlock()
	return nil
}

func (u syncWUnlocker) Unlock(context.Context) error {
	u.m.Unlock()
	return nil
}
