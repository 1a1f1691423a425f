package locker

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// rwOps act on read and write leases of an RWMutex alike: the lease's hold
// field ('r:<id>' or 'w:<id>') tells the scripts which kind it is.
var rwOps = &leaseOps{release: scriptRWRelease, extend: scriptRWExtend, pttl: scriptRWPTTL, keys: 2, wake: true}

// Hold field prefixes in the read-write lock's hash.
const (
	rwRead   = "r:"
	rwWrite  = "w:"
	rwIntent = "i:"
)

// RWMutexOptions configures one RWMutex. A nil *RWMutexOptions, and every
// zero field, means the default written at the end of the field's doc.
type RWMutexOptions struct {
	// Owner, when set, is the token stored in Redis for every lease of this
	// RWMutex, read or write, instead of 128 random bits per acquisition.
	// Acquiring again what Owner already holds (a read hold, or the write
	// lock) succeeds with the current fence: a process can take over its own
	// lease after a restart. Each acquisition is its own hold; without
	// Reentrant, Unlock of a lease also drops the Owner's holds of the same
	// kind granted before it, never one granted after it. At most
	// MaxNameLen bytes. Default: random per acquisition.
	Owner string

	// Reentrant, with Owner set, counts holds: every RLock or Lock by the
	// same Owner adds a hold with its own Lease (and, for reads, its own
	// expiry); every Unlock drops one. Requires Owner. Default false: an
	// Unlock also drops the Owner's earlier holds of the same kind.
	Reentrant bool

	// AutoRefresh keeps every lease, read or write, alive until Unlock, as
	// MutexOptions.AutoRefresh does: refreshed every third of the TTL by the
	// Client's shared refresher, and reported Lost at once when a refresh
	// fails for good or the validity deadline passes. Default false.
	AutoRefresh bool

	// StarvationThreshold bounds how long a blocking Lock (a writer) lets
	// other writers barge past it. Until then writers race for the free
	// lock (readers never barge past a waiting writer: see RWMutex). Once
	// a writer's Lock has waited this long, its intent is marked as
	// starving, and while it lives the free lock goes only to the writer
	// that starved first: the releaser's next Lock or TryLock, or any
	// other writer's, is refused, and the starving writer, woken by the
	// release, takes it. A starving writer that crashed holds other
	// writers back until its intent expires (the TTL, as its intent holds
	// readers back today). Negative: never. Default
	// DefaultStarvationThreshold, as for a Mutex.
	StarvationThreshold time.Duration
}

// RWMutex is a distributed read-write lock on one name: any number of
// readers, or one writer. It holds no state in Redis until acquired; each
// acquisition returns a *Lease whose Unlock, Extend and TTL work as for a
// Mutex lease and are owner-checked. An RWMutex is safe for concurrent use:
// goroutines sharing it contend like separate processes (unless Owner is
// set, which makes them one owner).
//
// The lock is one hash, "<prefix>{<name>}:rw", with its read holds' expiries
// in the sorted set "<prefix>{<name>}:rwr" (so no call scans the readers:
// each costs O(log R) with R readers), both in one Cluster slot; a Mutex of the same name is a different lock, but both
// take fences from the server clock, so fences strictly increase per name
// across both.
//
//   - Every read hold has its own expiry, kept in server time (Redis TIME):
//     a reader that crashes frees its share after its own TTL without
//     touching other readers, and one reader's Unlock never ends another's
//     lease. TTL and Extend act on the lease's own hold; the key lives as
//     long as its latest live hold.
//   - Writer preference: a writer waiting in Lock records an intent that
//     lives for the RWMutex's TTL and is refreshed by each of its attempts;
//     while any intent lives, new readers are refused, so a stream of
//     readers cannot starve writers. Readers already in keep their leases,
//     and an owner that already holds a read (or the write lock) may add
//     read holds, since refusing it would deadlock it against the writer.
//     The intent is dropped when the writer acquires, or, when Lock fails,
//     by a bounded clean-up call; if that call fails too, the intent
//     expires after the TTL. TryLock records no intent.
//   - Writers barge, as a default Mutex's waiters do, until one has waited
//     RWMutexOptions.StarvationThreshold (default
//     DefaultStarvationThreshold, 5 ms): its intent then starves, and the
//     free lock goes to the writer that starved first (no other writer,
//     the releaser included, can take it meanwhile). There is no direct
//     hand-over: the release wakes the waiters and the starving writer
//     takes the lock on its wake-up. Readers cannot starve: while no
//     writer waits they always share the lock, and writers wait for their
//     intent only (a stream of writers can hold readers back: writer
//     preference).
//   - Write grants take the next fence; read leases report the fence of the
//     last write grant (or, when the hash holds none, the server clock in
//     µs: never 0), so a resource can reject writes from an older writer.
//   - Downgrade turns a write lease into a read lease in one script: no
//     writer can get in between.
//   - There is no upgrade from read to write: two readers that both
//     upgraded would each wait for the other forever. Lock refuses while
//     any read hold lives, the caller's own included, so an owner calling
//     Lock while it holds a read lease waits until that lease is released
//     or expires. Release the read lease first (and re-check what was read
//     under the write lease), or take the write lock and Downgrade.
//   - An owner that holds the write lock may also take read holds.
type RWMutex struct {
	lockBase
	keys []string // the read-write hash and its read expiries: every script's keys
}

// NewRWMutex returns the read-write lock called name whose leases last ttl
// unless extended. It does not contact Redis. It fails with ErrClosed,
// ErrInvalidName (empty, or longer than MaxNameLen), ErrInvalidTTL (outside
// [MinTTL, MaxTTL]) or ErrInvalidOption (Reentrant without Owner, Owner
// longer than MaxNameLen).
func (c *Client) NewRWMutex(name string, ttl time.Duration, opts *RWMutexOptions) (*RWMutex, error) {
	o := orZero(opts)
	b, err := c.newLockBase(name, ttl, o.Owner, o.Reentrant, o.AutoRefresh, o.StarvationThreshold)
	if err != nil {
		return nil, err
	}
	k := c.Key(name)
	return &RWMutex{lockBase: b, keys: []string{k + ":rw", k + ":rwr"}}, nil
}

// Name returns the lock's name.
func (rw *RWMutex) Name() string { return rw.name }

// TryRLock makes one attempt to take a read lease and does not wait. It
// blocks for one round trip. It returns the lease, whose Fence is that of
// the last write grant, or ErrNotObtained when another owner holds the
// write lock or a writer is waiting, or ErrClosed, ErrNilContext or the
// Scripter's error; on any error nothing is held.
func (rw *RWMutex) TryRLock(ctx context.Context) (*Lease, error) {
	return rw.c.tryOnce(ctx, rw.name, modeRead, nil, func(ctx context.Context, _ time.Time) (*Lease, error) {
		l, _, err := rw.try(ctx, false, "", false)
		return l, err
	})
}

// RLock takes a read lease, waiting while another owner holds the write
// lock or a writer is waiting. It blocks until the lease is granted or ctx
// is done, pausing between attempts as Mutex.Lock does. When ctx ends first
// it returns ErrNotObtained joined with ctx.Err(). Connection failures are
// retried as Mutex.Lock retries them (with a ctx without deadline, for at
// most Options.UnreachableTimeout, then ErrUnreachable); another Scripter
// error is returned at once. On any error nothing is held.
func (rw *RWMutex) RLock(ctx context.Context) (*Lease, error) {
	return rw.c.waitLock(ctx, rw.name, modeRead, 0, func(ctx context.Context, _ bool) (*Lease, time.Duration, error) {
		return rw.try(ctx, false, "", false)
	}, nil)
}

// TryLock makes one attempt to take the write lock and does not wait; it
// records no intent, so it does not hold back readers. It blocks for one
// round trip. It returns the lease with a new fence, or ErrNotObtained when
// another owner holds the write lock or any reader holds a read lease, or
// ErrClosed, ErrNilContext or the Scripter's error; on any error nothing is
// held.
func (rw *RWMutex) TryLock(ctx context.Context) (*Lease, error) {
	return rw.c.tryOnce(ctx, rw.name, modeWrite, nil, func(ctx context.Context, _ time.Time) (*Lease, error) {
		l, _, err := rw.try(ctx, true, "", false)
		return l, err
	})
}

// Lock takes the write lock, waiting while another owner holds it or any
// read lease lives. While it waits, its intent keeps new readers out (see
// RWMutex). It blocks until the lock is acquired or ctx is done; there is no
// give-up after a number of attempts. When ctx ends first it returns
// ErrNotObtained joined with ctx.Err(). Connection failures are retried as
// Mutex.Lock retries them (with a ctx without deadline, for at most
// Options.UnreachableTimeout, then ErrUnreachable); another Scripter error
// is returned at once. On any error nothing is held and the
// intent is dropped (one bounded extra round trip), so readers proceed at
// once.
func (rw *RWMutex) Lock(ctx context.Context) (*Lease, error) {
	intent := rwIntent + newToken()
	// A starving writer's intent goes first; the release wakes every
	// waiter, so it needs no own channel.
	return rw.c.waitLock(ctx, rw.name, modeWrite, rw.starve, func(ctx context.Context, starved bool) (*Lease, time.Duration, error) {
		return rw.try(ctx, true, intent, starved)
	}, func() { rw.cancel("", intent, "0") })
}

// Downgrade turns write, a write lease of this lock, into a read lease in
// one script, so no writer can take the lock in between; write then counts
// as released, and the read lease (same owner and fence, the RWMutex's
// TTL) is the one to unlock. It blocks for one round trip. It fails with
// ErrInvalidOption (write nil, a read lease or another lock's),
// ErrExpired or ErrHeldByOther (write was lost), ErrClosed, ErrNilContext
// or the Scripter's error; after an unknown outcome write is ended and a
// clean-up frees the lock (docs/guide.md, "Unknown outcomes").
func (rw *RWMutex) Downgrade(ctx context.Context, write *Lease) (read *Lease, err error) {
	if err := rw.c.begin(ctx); err != nil {
		return nil, err
	}
	defer rw.c.end()
	if rw.c.obs != nil {
		defer func(start time.Time) { rw.c.acquired(ctx, rw.name, modeRead, start, 1, read, err) }(time.Now())
	}
	if write == nil {
		return nil, fmt.Errorf("%w: Downgrade of a nil lease", ErrInvalidOption)
	}
	if write.ops != rwOps || !strings.HasPrefix(write.hold, rwWrite) || len(write.keys) == 0 || write.keys[0] != rw.keys[0] {
		return nil, fmt.Errorf("%w: Downgrade of a lease that is not a write lease of %q", ErrInvalidOption, rw.name)
	}
	write.unlockMu.Lock()
	defer write.unlockMu.Unlock()
	if !write.startRelease() {
		return nil, fmt.Errorf("%w: %q: lease was released", ErrExpired, rw.name)
	}
	rhold := rwRead + newToken()
	start := time.Now()
	r, err := rw.c.run(ctx, scriptRWDowngrade, rw.keys, []string{write.owner, write.hold, rw.ttlArg, rhold, rw.wake, write.singleArg()})
	var v [2]int64
	if err == nil {
		v, err = replyInts(scriptRWDowngrade, r)
		if err == nil && (v[0] < -1 || v[0] > 1) {
			err = fmt.Errorf("%w: downgrade status %d", ErrUnexpectedReply, v[0])
		}
	}
	if err != nil {
		if answered(err) {
			write.abortRelease()
			return nil, err
		}
		write.end()
		rw.cancel(write.owner, "", "0", write.hold, rhold)
		return nil, err
	}
	if err := write.outcome(v[0]); err != nil {
		write.mu.Lock()
		write.releasing = false
		write.mu.Unlock()
		write.lose(err)
		write.end()
		return nil, err
	}
	write.end() // released: as after Unlock, its Context is cancelled
	return rw.c.newLease(grant{
		ops: rwOps, name: rw.name, keys: rw.keys, wake: rw.wake,
		owner: write.owner, hold: rhold, fence: v[1], single: write.single,
	}, start, rw.ttlMS, rw.refresh)
}

// try runs the read or write acquire script once, as a call with a fresh id
// that names the hold it grants; the owner is the caller's Owner or, without
// one, the call id. intent is the waiting writer's intent field, "" for
// none; starved marks it as a starving writer's (see
// RWMutexOptions.StarvationThreshold). When refused it returns ErrNotObtained and the remaining time to
// wait at most before retrying. When the call's outcome is unknown it is
// abandoned in the background (see rw_cancel.lua).
func (rw *RWMutex) try(ctx context.Context, write bool, intent string, starved bool) (*Lease, time.Duration, error) {
	id := newToken()
	owner := rw.owner
	if owner == "" {
		owner = id
	}
	s, hold := scriptRWRLock, rwRead+id
	args := []string{owner, hold, rw.ttlArg, rw.wake}
	if write {
		s, hold = scriptRWLock, rwWrite+id
		var st string
		if starved {
			st = "1" // a starving writer: its intent goes first
		}
		args = []string{owner, hold, args[2], intent, rw.wake, st}
	}
	start := time.Now()
	r, err := rw.c.run(ctx, s, rw.keys, args)
	var v [2]int64
	if err == nil {
		v, err = replyInts(s, r)
		if err == nil && v[0] != 0 && v[0] != 1 {
			err = fmt.Errorf("%w: %s status %d", ErrUnexpectedReply, s.name, v[0])
		}
	}
	if err != nil {
		if !answered(err) {
			rw.cancel(owner, intent, abandonedMS, hold)
		}
		return nil, 0, err
	}
	if v[0] == 0 {
		return nil, time.Duration(v[1]) * time.Millisecond, fmt.Errorf("%w: %q", ErrNotObtained, rw.name)
	}
	l, err := rw.c.newLease(grant{
		ops: rwOps, name: rw.name, keys: rw.keys, wake: rw.wake,
		owner: owner, hold: hold, fence: v[1], single: rw.owner != "" && !rw.reentrant,
	}, start, rw.ttlMS, rw.refresh)
	return l, 0, err
}

// cancel runs rw_cancel.lua in the background: it drops intent (when not
// "") and the owner's holds (fields), and has Redis refuse for refuseMS the
// acquire call that named the first of them.
func (rw *RWMutex) cancel(owner, intent, refuseMS string, holds ...string) {
	args := append([]string{owner, intent, refuseMS, rw.wake}, holds...)
	rw.c.later(rw.keys[0], time.Time{}, func(ctx context.Context) error {
		_, err := rw.c.run(ctx, scriptRWCancel, rw.keys, args)
		return err
	})
}
