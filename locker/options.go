package locker

import (
	"fmt"
	"strings"
	"time"
)

// Limits on TTLs accepted by every operation.
const (
	// MinTTL is the shortest TTL: Redis expires keys with millisecond
	// resolution. Note that a lease's local validity subtracts a drift
	// margin of at least 2 ms, so a lease with a TTL of 2 ms or less is
	// locally invalid from the start (Lease.Valid reports false).
	MinTTL = time.Millisecond
	// MaxTTL is the longest TTL (one year); longer values are rejected as
	// almost certainly a unit mistake.
	MaxTTL = 365 * 24 * time.Hour
)

// Options configures a Client. A nil *Options, and every zero field, means
// the default written at the end of the field's doc.
type Options struct {
	// Prefix starts every key the Client writes. It must not contain '{' or
	// '}', which would break the hash tag that keeps a lock's keys in one
	// Cluster slot. Default "scriptlock:".
	Prefix string

	// DriftFactor is the fraction of a TTL a lease subtracts, on top of
	// 2 ms, from its local validity to allow for clock drift between this
	// process and Redis and for Redis's expiry granularity. Must be in
	// [0, 0.5). Default 0.01.
	DriftFactor float64

	// MinRetryDelay is the first pause of a blocking Lock between two
	// attempts; pauses double up to MaxRetryDelay, are jittered, and never
	// exceed the holder's remaining TTL. Must be positive and at most
	// MaxRetryDelay. Default 2ms.
	MinRetryDelay time.Duration

	// MaxRetryDelay caps the pause of a blocking Lock between two attempts.
	// Must be at least MinRetryDelay and at most one minute. Default 100ms.
	MaxRetryDelay time.Duration

	// UnreachableTimeout bounds how long a blocking acquisition (Lock,
	// RLock, RWMutex.Lock, Semaphore.Acquire, MultiLock.Lock) whose ctx has
	// no deadline keeps retrying while the server cannot be reached: a
	// refused or broken connection, a name that does not resolve, a
	// timeout, any failure that is not an answer from the server. It counts
	// from the first such failure since the server last answered (a refusal
	// because the lock is held is an answer, and so is a passing server
	// error such as TRYAGAIN or LOADING, which is retried without this
	// bound). Once it has passed, the next failed attempt ends the call
	// with an error matching ErrUnreachable and that failure (errors.Is
	// works on both); the failures before it are retried with backoff and
	// reported to the Observer as EventRetry. An attempt in flight is
	// bounded by the driver's own dial and read timeouts, not by this
	// option. Waiting for a holder stays unbounded. With a ctx deadline the
	// deadline alone bounds the call, and its error joins the last
	// connection failure. Quorum.Lock uses its first Client's bound, while
	// no deployment refuses the lock as held and too few grant it. For a
	// waiting Lock to outlast a failover, set it above the failover's
	// duration (a Cluster's: cluster-node-timeout, 15s by default, and the
	// election). Negative: no bound, connection failures are retried until
	// ctx ends. Default 10s.
	UnreachableTimeout time.Duration

	// Observer, when set, sees every acquisition, release, extend, loss,
	// wake-up, script reload and retried call (see Observer; SlogObserver
	// logs them). Default nil: nothing is reported, at no cost.
	Observer Observer

	// Ack, when set, makes every call that writes wait for replicas (WAIT)
	// or for fsync (WAITAOF) as it describes before it succeeds, so that a
	// grant, a refresh, a downgrade or a release survives a failover to an
	// acknowledging replica. A call whose writes were not acknowledged in
	// time fails with an AckError (ErrNotAcknowledged) and is treated as a
	// call with an unknown outcome: a grant is undone in the background,
	// an Extend does not lengthen the lease, an Unlock is retried in the
	// background. It needs a Scripter that implements Acknowledger: New
	// fails with ErrInvalidOption otherwise. Default nil: calls return as
	// soon as the node that ran them answered (replication is asynchronous;
	// see docs/guarantees.md).
	Ack *Ack
}

// Defaults of Options.
const (
	DefaultPrefix        = "scriptlock:"
	DefaultDriftFactor   = 0.01
	DefaultMinRetryDelay = 2 * time.Millisecond
	DefaultMaxRetryDelay = 100 * time.Millisecond

	DefaultUnreachableTimeout = 10 * time.Second
)

// withDefaults validates o and returns a copy with defaults filled in.
func (o *Options) withDefaults() (Options, error) {
	var r Options
	if o != nil {
		r = *o
	}
	if r.Prefix == "" {
		r.Prefix = DefaultPrefix
	}
	if strings.ContainsAny(r.Prefix, "{}") {
		return r, fmt.Errorf("%w: Prefix %q contains '{' or '}'", ErrInvalidOption, r.Prefix)
	}
	if r.DriftFactor == 0 {
		r.DriftFactor = DefaultDriftFactor
	}
	if !(r.DriftFactor >= 0 && r.DriftFactor < 0.5) {
		return r, fmt.Errorf("%w: DriftFactor %v not in [0, 0.5)", ErrInvalidOption, r.DriftFactor)
	}
	if r.MinRetryDelay == 0 {
		r.MinRetryDelay = DefaultMinRetryDelay
	}
	if r.MaxRetryDelay == 0 {
		r.MaxRetryDelay = max(DefaultMaxRetryDelay, r.MinRetryDelay)
	}
	if r.UnreachableTimeout == 0 {
		r.UnreachableTimeout = DefaultUnreachableTimeout
	}
	if r.Ack != nil {
		a, err := r.Ack.withDefaults()
		if err != nil {
			return r, err
		}
		r.Ack = &a
	}
	if r.MinRetryDelay < 0 || r.MaxRetryDelay < r.MinRetryDelay || r.MaxRetryDelay > time.Minute {
		return r, fmt.Errorf("%w: retry delays [%v, %v] not within (0, 1m] and ordered", ErrInvalidOption, r.MinRetryDelay, r.MaxRetryDelay)
	}
	return r, nil
}

// MutexOptions configures one Mutex. A nil *MutexOptions, and every zero
// field, means the default written at the end of the field's doc.
type MutexOptions struct {
	// Owner, when set, is the token stored in Redis for every lease of this
	// Mutex, instead of 128 random bits per acquisition. Acquiring a lock
	// that Owner already holds succeeds with the current fence (a hand-over:
	// a process can take over its own lease after a restart). Each
	// acquisition is its own hold: without Reentrant, Unlock of a lease also
	// drops the holds Owner was granted before it (so the hand-over's Unlock
	// frees the lock), never one granted after it (so a late Unlock of an
	// old lease cannot end a newer one). At most MaxNameLen bytes. Default:
	// random per acquisition.
	Owner string

	// Reentrant, with Owner set, counts holds: every Lock or TryLock by the
	// same Owner adds a hold with its own Lease, every Unlock drops one, and
	// the lock is free when the last hold is dropped. Requires Owner.
	// Default false: an Unlock also drops the Owner's earlier holds.
	Reentrant bool

	// AutoRefresh keeps every lease alive until Unlock: the Client's shared
	// refresher extends it to its full TTL every RefreshFraction (1/3) of the
	// TTL, retrying after RetryFraction (1/10) of the TTL on network errors.
	// A lease whose refresh finds the lock expired or held by another owner,
	// or whose validity deadline passes without a successful refresh, is
	// lost at once: Lost is closed and Context cancelled. Default false: a
	// lease lives for its TTL unless extended.
	AutoRefresh bool

	// FIFO makes blocking Lock calls queue in the lock's hash slot and be
	// granted in arrival order. A queued waiter's entry expires, in server
	// time, after the lock's TTL clamped to [200ms, 5s] and is refreshed
	// every third of that while it waits; a waiter whose ctx ends leaves
	// the queue at once, one that crashed is skipped once its entry
	// expires. While waiters are queued, TryLock and non-FIFO Lock calls on
	// the same name are refused, so all users of a name should agree on
	// this option. Default false: waiters race for the lock (see
	// StarvationThreshold).
	FIFO bool

	// StarvationThreshold bounds how long a blocking Lock that is not FIFO
	// lets others barge past it. Until a waiter has waited this long,
	// waiters race for a freed lock, and a holder that locks again at once
	// usually wins (barging: what keeps throughput high while contention
	// is light). Once it has waited this long, the waiter becomes a
	// starving waiter, kept in the lock's own key in the order the waiters
	// starved, and the release of the lock's last hold hands the lock
	// straight to the first of them (it is never free in between, so
	// neither the releaser nor a newcomer can take it) and wakes only that
	// waiter, the way sync.Mutex switches to starvation mode. A starving
	// waiter's entry lives as a FIFO waiter's does (the lock's TTL within
	// [200ms, 5s], refreshed every third of that while it waits); one that
	// crashed is skipped once its entry expired, and one whose ctx ends
	// leaves at once. Negative: never (pure barging). Default
	// DefaultStarvationThreshold.
	StarvationThreshold time.Duration
}

// DefaultStarvationThreshold is the default of
// MutexOptions.StarvationThreshold and RWMutexOptions.StarvationThreshold
// (see Mutex). It was chosen with the bench package's BenchmarkLockStarve
// (thresholds 1, 2, 5, 10 and 50 ms against barging alone and FIFO, one
// key, medians of 5 within one run, loopback, go-redis and rueidis).
// Under light contention (2 goroutines, 1 ms holds) 5 ms hands over 9–12%
// of grants, at 3.5 script calls per grant, and gave the most grants per
// second (with 10 ms) and the lowest p99 wait (7.5–7.7 ms, against
// 15.7–16.8 ms for barging alone); 1 ms hands over 44–47% of grants, at
// 4.1 calls each, for a fifth fewer grants per second; 10 ms let p99 rise
// to 12.3–12.5 ms and fairness fall to 0.90–0.94. Under heavy contention
// (8 goroutines) every waiter passes any of them, the lock stays in
// starvation mode, and p99 and fairness come close to the FIFO mode's,
// for 11–16% fewer grants per second than barging alone with 1 ms holds
// and 1.7–2.3 times as many with 100 µs holds. Over a network round trip
// well above a millisecond a larger threshold fits better: a waiter
// should not starve for losing one race.
const DefaultStarvationThreshold = 5 * time.Millisecond

// validName checks a lock name or claim key.
func validName(name string) error {
	if name == "" {
		return fmt.Errorf("%w: empty", ErrInvalidName)
	}
	if len(name) > MaxNameLen {
		return fmt.Errorf("%w: %d bytes, longer than MaxNameLen (%d)", ErrInvalidName, len(name), MaxNameLen)
	}
	return nil
}

// validTTL checks a TTL and returns it in whole milliseconds.
func validTTL(ttl time.Duration) (int64, error) {
	if ttl < MinTTL || ttl > MaxTTL {
		return 0, fmt.Errorf("%w: %v not in [%v, %d days]", ErrInvalidTTL, ttl, MinTTL, MaxTTL/(24*time.Hour))
	}
	return ttl.Milliseconds(), nil
}

// orZero returns *opts, or the zero options for nil.
func orZero[T any](opts *T) T {
	if opts == nil {
		var zero T
		return zero
	}
	return *opts
}
