package bench

import (
	"context"
	"errors"
	"time"
)

// TTL is the lease time to live every adapter asks for. It is long enough
// that no lease expires during a scenario, so expiry never does the work of
// a release.
const TTL = 10 * time.Second

// Locker is what a scenario needs of a lock library. Implementations must
// be safe for concurrent use: scenarios call them from many goroutines,
// which contend as separate owners.
type Locker interface {
	// Lock acquires key, waiting while another owner holds it, until it is
	// acquired or ctx is done. When ctx ends first it returns an error and
	// holds nothing. When the library gives up waiting on its own while ctx
	// is still live (a retry limit, a deadline of its own), the error wraps
	// ErrGaveUp and the scenario calls Lock again.
	Lock(ctx context.Context, key string) (Unlocker, error)

	// TryLock makes one attempt to acquire key and does not wait. It
	// returns ok false and a nil error when another owner holds key.
	TryLock(ctx context.Context, key string) (u Unlocker, ok bool, err error)
}

// Unlocker releases one acquisition made by a Locker.
type Unlocker interface {
	// Unlock releases the lock. It returns an error when the release
	// failed or found the lease no longer held.
	Unlock(ctx context.Context) error
}

// ErrGaveUp is wrapped by a Locker's Lock error when the library stopped
// waiting by itself while the caller's context was still live.
var ErrGaveUp = errors.New("bench: lock gave up waiting")

// The interfaces below are optional: a Locker implements them when its
// library has the feature, and the scenario that needs one finds it by type
// assertion (database/sql's pattern). A Target lists such a scenario only
// when its Locker implements the interface; the scenario fails, saying so,
// otherwise.

// RWLocker is implemented by a Locker whose library has a read-write lock;
// the op=rw scenario needs it. The read-write lock on a key is its own
// lock, distinct from Lock's mutex on the same key. Implementations must be
// safe for concurrent use, every call contending as a separate owner.
type RWLocker interface {
	// RLock takes a shared read lock on key, waiting while a writer holds
	// it (and, in a library with writer preference, while one waits for
	// it), until it is acquired or ctx is done. When ctx ends first it
	// returns an error and holds nothing.
	RLock(ctx context.Context, key string) (Unlocker, error)

	// WLock takes the exclusive write lock on key, waiting while a writer
	// or any reader holds it, until it is acquired or ctx is done. When
	// ctx ends first it returns an error and holds nothing.
	WLock(ctx context.Context, key string) (Unlocker, error)
}

// AutoRefresher is implemented by a Locker whose library keeps a lease
// alive by itself while it is held; the op=refresh scenario needs it.
type AutoRefresher interface {
	// LockAutoRefresh acquires key as Lock does, for a lease of RefreshTTL
	// that the library renews by itself, about every RefreshInterval,
	// until Unlock.
	LockAutoRefresh(ctx context.Context, key string) (RefreshedLease, error)
}

// TTLAutoRefresher is an AutoRefresher whose lease TTL can be chosen; the
// op=refresh growth row (RefreshScale) needs it.
type TTLAutoRefresher interface {
	// LockAutoRefreshTTL is LockAutoRefresh with a lease TTL of ttl,
	// renewed about every third of it.
	LockAutoRefreshTTL(ctx context.Context, key string, ttl time.Duration) (RefreshedLease, error)
}

// RefreshedLease is a lease returned by an AutoRefresher.
type RefreshedLease interface {
	Unlocker
	// Err returns nil while the library still holds the lease, and why it
	// does not once the library found it lost (a renewal that failed or
	// found another owner, a validity deadline that passed). It does not
	// contact Redis.
	Err() error
}

// Rewaiter is implemented by a Locker whose Lock bounds each wait of its
// library and, when the bound passes without a grant, stops that wait and
// calls the library again: a guard for a library that can miss the
// wake-up it waits for (see bench/peers' rueidislock rows). Each benchmark
// leaf of such a Locker reports rewaits, the waits it re-entered during
// the run.
type Rewaiter interface {
	// Rewaits returns the number of waits re-entered so far.
	Rewaits() int64
}
