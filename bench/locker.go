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
