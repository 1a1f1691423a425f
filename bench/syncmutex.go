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
func SyncMutex() Locker {
	return &syncMutexLocker{}
}

type syncMutexLocker struct {
	mutexes sync.Map // key -> *sync.Mutex
}

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
