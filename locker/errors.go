package locker

import (
	"errors"
	"fmt"
	"time"
)

// Sentinel errors. Functions of this package return them wrapped with
// context; test for them with errors.Is.
var (
	// ErrNoScript is returned by a Scripter's EvalSha when the server does
	// not hold the script (the NOSCRIPT error). The core reacts by loading
	// the script and retrying; users normally never see it.
	ErrNoScript = errors.New("locker: no matching script (NOSCRIPT)")

	// ErrNotObtained means the lock is held by someone else: TryLock found
	// it taken, or Lock gave up because its context ended (then joined with
	// ctx.Err()).
	ErrNotObtained = errors.New("locker: lock not obtained")

	// ErrUnreachable means a blocking acquisition (Lock, RLock, Acquire,
	// ...) whose context has no deadline gave up because the server could
	// not be reached for Options.UnreachableTimeout: connections were
	// refused or broke, a name did not resolve, calls timed out. The error
	// also wraps the last connection failure, so errors.Is matches it too
	// (syscall.ECONNREFUSED, a *net.OpError, ...). It does not match
	// ErrNotObtained: nobody was found holding the lock.
	ErrUnreachable = errors.New("locker: server unreachable")

	// ErrExpired means the lease is no longer held by anyone: its TTL ran
	// out (or the key was deleted) before Unlock, Extend or TTL ran.
	ErrExpired = errors.New("locker: lease expired")

	// ErrHeldByOther means the lease expired and another owner holds the
	// lock now; the call changed nothing.
	ErrHeldByOther = errors.New("locker: lock held by another owner")

	// ErrClosed is returned by every operation of a Client, and of its locks
	// and leases, after Client.Close.
	ErrClosed = errors.New("locker: client closed")

	// ErrInvalidName is returned for an empty or oversized lock name or
	// claim key.
	ErrInvalidName = errors.New("locker: invalid name")

	// ErrInvalidTTL is returned for a TTL below MinTTL or above MaxTTL.
	ErrInvalidTTL = errors.New("locker: invalid ttl")

	// ErrNilScripter is returned by New when given a nil Scripter.
	ErrNilScripter = errors.New("locker: nil scripter")

	// ErrNilContext is returned by every operation given a nil context.
	ErrNilContext = errors.New("locker: nil context")

	// ErrInvalidOption is returned for an option out of its documented range.
	ErrInvalidOption = errors.New("locker: invalid option")

	// ErrNotAcknowledged means a call's script ran but its writes were not
	// acknowledged as Options.Ack asks (see AckError, which matches it).
	ErrNotAcknowledged = errors.New("locker: not acknowledged")

	// ErrUnexpectedReply means a script reply did not have the shape the
	// core expects: a driver broke the reply vocabulary of Scripter.
	ErrUnexpectedReply = errors.New("locker: unexpected script reply")
)

// unreachable is the error of a blocking acquisition of the lock name
// that gave up after the server had not answered for down; err is the
// last connection failure.
func unreachable(name string, down time.Duration, err error) error {
	return fmt.Errorf("%w: %q: no answer for %v: %w", ErrUnreachable, name, down.Round(time.Millisecond), err)
}
