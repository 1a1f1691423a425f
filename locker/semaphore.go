package locker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"
)

// semOps act on semaphore leases.
var semOps = &leaseOps{release: scriptSemRelease, extend: scriptSemExtend, pttl: scriptSemPTTL, keys: 2, wake: true}

// MaxPermits is the largest permit limit of a Semaphore.
const MaxPermits = 1 << 30

// DefaultSemaphoreStarvation is the default of
// SemaphoreOptions.StarvationThreshold: chosen by the bench package's
// op=semaphore row (16 goroutines on 4 permits, holding 1 ms), where it
// keeps the p99 wait within a few times the threshold while most grants
// still barge (fewer script calls per grant than strict arrival order).
const DefaultSemaphoreStarvation = 10 * time.Millisecond

// SemaphoreOptions configures one Semaphore. A nil *SemaphoreOptions, and
// every zero field, means the default written at the end of the field's
// doc.
type SemaphoreOptions struct {
	// FIFO grants permits in arrival order: Acquire queues the caller, only
	// the queue's head is granted (so a request for many permits is never
	// overtaken by later requests for few), and a release wakes only the
	// head, on its own channel, when its permits are free. TryAcquire is
	// refused while anyone is queued. Every client of one semaphore must
	// agree on FIFO. Default false: any caller that fits may take free
	// permits (barging), except those kept for the oldest waiter once it
	// starves (see StarvationThreshold); a release wakes, oldest first, as
	// many waiting Acquires as its freed permits fit (one wake-up per
	// permit, each on the waiter's own channel), never all of them.
	FIFO bool

	// AutoRefresh keeps every lease alive until Unlock, as
	// MutexOptions.AutoRefresh does. Default false.
	AutoRefresh bool

	// StarvationThreshold bounds how long a waiting Acquire of a
	// semaphore without FIFO lets others barge past it. Until then, any
	// caller that fits may take free permits, and one that releases and
	// acquires again at once usually wins (what keeps throughput high).
	// Once the oldest waiting Acquire has waited this long (counted by
	// the server from its first refusal), it starves: the permits it asks
	// for are kept for it (no other caller is granted permits it would
	// need; callers that fit beside it still are), and it is woken when
	// they are free. A starving waiter that crashed stops starving when
	// its entry expires (the TTL within [200ms, 5s]); one whose ctx ends
	// leaves at once. Each Acquire carries its own threshold, so clients
	// may differ. Ignored with FIFO. Negative: never (pure barging).
	// Default DefaultSemaphoreStarvation.
	StarvationThreshold time.Duration
}

// Semaphore is a distributed counting semaphore on one name: at most
// Permits permits are held at once, by any number of holders, each taking
// one or more. It holds no state in Redis until acquired. Every grant is
// its own *Lease, with its own expiry in server time (a crashed holder's
// permits come back after its TTL, never leak), its own fence (increasing
// per name across grants), and the usual Unlock, Extend, TTL, Lost,
// Context and auto-refresh. A Semaphore is safe for concurrent use.
//
// The semaphore lives in the hash "<prefix>{<name>}:sem" with the sorted
// set "<prefix>{<name>}:semz" (the holds', abandoned calls' and waiters'
// expiries, and the waiters in arrival order), both in one Cluster slot.
// No call scans the holders: a call costs O(log H) with H holders, plus
// the expired entries it deletes (each once). An uncontended TryAcquire
// or Acquire and its Unlock touch the hash and one member of the sorted
// set only.
//
// Every waiting Acquire is listed, with the permits it asks for, and
// woken on a channel of its own: a release (or an expiry, or a raised
// limit) wakes, oldest first, the waiters whose permits fit in those free
// and not yet promised to a woken waiter. A woken waiter that tries (and
// does not fit, say because a barging caller took the permits), gives up
// or crashes hands its wake-up on to the next one that fits, at the next
// call on the semaphore; every waiter also retries on its own at least
// every third of its entry's lifetime (the TTL, within [200 ms, 5 s]) and
// when the next hold expires. While other Acquires of the name wait on the
// same Client, or as many of this Semaphore run as there are permits, an
// Acquire subscribes to its channel before its first try, so that the
// retry after a refusal needs no call unless a wake-up came.
//
// Every client of one name should pass the same permits to NewSemaphore:
// each acquire is checked against its caller's limit, unless SetPermits
// stored one for every client.
type Semaphore struct {
	c       *Client
	name    string
	permits int
	ttlMS   int64
	queueMS int64
	fifo    bool
	refresh bool
	starve  string       // StarvationThreshold in ms, as sem_acquire.lua takes it ('': never)
	keys    []string     // the hash and the expiries
	wake    string       // the wake channel
	running atomic.Int32 // Acquires of this Semaphore in progress (see Acquire)
}

// NewSemaphore returns the semaphore called name with permits permits,
// whose leases last ttl unless extended. It does not contact Redis. It
// fails with ErrClosed, ErrInvalidName (empty, or longer than MaxNameLen),
// ErrInvalidTTL (outside [MinTTL, MaxTTL]) or ErrInvalidOption (permits
// outside [1, MaxPermits]).
func (c *Client) NewSemaphore(name string, permits int, ttl time.Duration, opts *SemaphoreOptions) (*Semaphore, error) {
	o := orZero(opts)
	ms, err := c.validLock(name, ttl, "", false)
	if err != nil {
		return nil, err
	}
	if permits < 1 || permits > MaxPermits {
		return nil, fmt.Errorf("%w: permits %d outside [1, %d]", ErrInvalidOption, permits, MaxPermits)
	}
	k := c.Key(name)
	var starve string
	if st := cmp.Or(o.StarvationThreshold, DefaultSemaphoreStarvation); st > 0 && !o.FIFO {
		starve = strconv.FormatInt(int64((st+time.Millisecond-1)/time.Millisecond), 10)
	}
	return &Semaphore{
		c: c, name: name, permits: permits, ttlMS: ms, queueMS: queueTTL(ms), fifo: o.FIFO, refresh: o.AutoRefresh, starve: starve,
		keys: []string{k + ":sem", k + ":semz"}, wake: k + ":wake",
	}, nil
}

// Name returns the semaphore's name.
func (s *Semaphore) Name() string { return s.name }

// Permits returns the permit limit this Semaphore was made with (SetPermits
// may have stored another one for every client).
func (s *Semaphore) Permits() int { return s.permits }

// TryAcquire makes one attempt to take n permits and does not wait. It
// blocks for one round trip. It returns the lease, or ErrNotObtained when
// fewer than n permits are free (or, FIFO, someone is queued), or
// ErrInvalidOption when n is outside [1, Permits] or above the limit
// SetPermits stored, or ErrClosed, ErrNilContext or the Scripter's error;
// on any error nothing is held.
func (s *Semaphore) TryAcquire(ctx context.Context, n int) (*Lease, error) {
	valid := func() error { return s.validN(n) }
	return s.c.tryOnce(ctx, s.name, modeSemaphore, valid, func(ctx context.Context, _ time.Time) (*Lease, error) {
		l, _, err := s.try(ctx, n, "")
		return l, err
	})
}

// Acquire takes n permits, waiting until they are free (see Semaphore for
// the order waiters are served in and how they are woken). It blocks
// until the lease is granted or ctx is done. When ctx ends first it returns
// ErrNotObtained joined with ctx.Err(); ErrInvalidOption when n is outside
// [1, Permits] or above the limit SetPermits stored; connection failures
// are retried as Mutex.Lock retries them; another Scripter error is
// returned at once. On any error nothing is held, and a listed caller
// leaves the waiters in the background (handing on a wake-up it was given).
func (s *Semaphore) Acquire(ctx context.Context, n int) (*Lease, error) {
	if err := s.c.begin(ctx); err != nil {
		return nil, err
	}
	defer s.c.end()
	if err := s.validN(n); err != nil {
		return nil, err
	}
	// The waiter's own channel: a release whose freed permits fit wakes
	// it there (the shared wake channel carries no semaphore wake-ups).
	waiter := newToken()
	own := s.wake + ":" + waiter
	// While other Acquires of this name and Client wait, or as many of this
	// Semaphore run as there are permits (a burst), the first try will
	// likely be refused: subscribe to the own channel before it, so that
	// no wake-up sent after the try listed this waiter can be lost, and the
	// retry wait makes right after it subscribes needs no call unless a
	// wake-up came (see early).
	running := s.running.Add(1) - 1
	defer s.running.Add(-1)
	var early <-chan struct{}
	if s.c.hints.waiting(modeSemaphore, s.name) || int(running) >= s.permits {
		var leave func(bool)
		early, leave = s.c.joinWake(ctx, own, false)
		defer leave(false)
	}
	start, calls, refused := time.Now(), 0, false
	var (
		pttl    time.Duration
		waiting func() // leaves the waiting hint, once refused
	)
	l, err := s.c.wait(ctx, s.c.newWaiter(ctx, s.name, false, own), 0, func(ctx context.Context, _ bool) (*Lease, time.Duration, error) {
		if early != nil {
			select {
			case <-early:
			default:
				if refused {
					// wait's retry after its first refusal: nothing was
					// lost, since the waiter has been subscribed since
					// before it was listed, and no wake-up came.
					refused = false
					return nil, pttl, fmt.Errorf("%w: %q", ErrNotObtained, s.name)
				}
			}
		}
		calls++
		l, wait, err := s.try(ctx, n, waiter)
		if errors.Is(err, ErrNotObtained) {
			if calls == 1 {
				refused = true
			}
			pttl = wait
			if waiting == nil {
				waiting = s.c.hints.join(modeSemaphore, s.name)
			}
		}
		return l, wait, err
	})
	if waiting != nil {
		waiting()
	}
	s.c.acquired(ctx, s.name, modeSemaphore, start, calls, l, err)
	if err != nil && calls > 0 {
		s.cancel("", "", "0", waiter) // leave the waiters, handing on a wake-up
	}
	return l, err
}

// SetPermits stores permits as this semaphore's limit for every client,
// until SetPermits(ctx, 0) clears it. Holds above a lowered limit keep
// their permits until released or expired; raising it wakes waiters that
// now fit. It waits for the clean-ups of this Client's earlier SetPermits
// calls on the name, then blocks for one round trip. It fails with
// ErrInvalidOption (permits outside [0, MaxPermits]), ErrClosed,
// ErrNilContext, ctx's error or the Scripter's error. After an unknown
// outcome a clean-up undoes the call in the background: assume the larger
// of the two limits until it ends (docs/guide.md, "Semaphore").
func (s *Semaphore) SetPermits(ctx context.Context, permits int) error {
	if err := s.c.begin(ctx); err != nil {
		return err
	}
	defer s.c.end()
	if permits < 0 || permits > MaxPermits {
		return fmt.Errorf("%w: permits %d outside [0, %d]", ErrInvalidOption, permits, MaxPermits)
	}
	arg := ""
	if permits > 0 {
		arg = strconv.Itoa(permits)
	}
	// A clean-up still in flight may undo the limit this call is about to
	// store: wait for it, so that the calls of this Client apply in order.
	if err := s.c.awaitCleanup(ctx, s.permitsKey()); err != nil {
		return fmt.Errorf("locker: set permits of %q: %w", s.name, err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("locker: set permits of %q: %w", s.name, err) // nothing sent
	}
	id := newToken()
	args := []string{arg, s.wake, id, abandonedMS}
	r, _, err := s.c.retryTransient(ctx, scriptSemPermits, func() (any, error) {
		return s.c.run(ctx, scriptSemPermits, s.keys, args)
	})
	if err == nil {
		var n int64
		n, err = replyInt(scriptSemPermits, r)
		if err == nil && n < 0 {
			// Only a clean-up refuses a call, and none runs before the
			// call's caller gave up: a reused call id.
			err = fmt.Errorf("%w: %s refused the call as abandoned", ErrUnexpectedReply, scriptSemPermits.name)
		}
	}
	if err != nil {
		if !answered(err) {
			s.c.later(s.permitsKey(), time.Time{}, func(ctx context.Context) error {
				_, err := s.c.run(ctx, scriptSemCancel, s.keys, []string{"", id, abandonedMS, "", s.wake})
				return err
			})
		}
		return fmt.Errorf("locker: set permits of %q: %w", s.name, err)
	}
	return nil
}

// permitsKey names the clean-ups of SetPermits calls on this semaphore in
// the Client's janitor (awaitCleanup); acquire clean-ups use keys[0].
func (s *Semaphore) permitsKey() string { return s.keys[0] + " permits" }

// validN checks the permits asked for.
func (s *Semaphore) validN(n int) error {
	if n < 1 || n > s.permits {
		return fmt.Errorf("%w: %d permits asked of semaphore %q with %d", ErrInvalidOption, n, s.name, s.permits)
	}
	return nil
}

// try runs the acquire script once, as a call with a fresh id that names
// the hold it grants (and is its owner token). waiter (empty for
// TryAcquire) lists an Acquire among the waiters when refused. When refused it returns
// ErrNotObtained and the time to wait at most before retrying. When the
// call's outcome is unknown it is abandoned in the background.
func (s *Semaphore) try(ctx context.Context, n int, waiter string) (*Lease, time.Duration, error) {
	id := newToken()
	args := append(make([]string, 0, 9), id, strconv.FormatInt(s.ttlMS, 10), strconv.Itoa(n), strconv.Itoa(s.permits), s.wake)
	switch {
	case waiter != "" && s.fifo:
		args = append(args, waiter, strconv.FormatInt(s.queueMS, 10), "1")
	case waiter != "" && s.starve != "":
		args = append(args, waiter, strconv.FormatInt(s.queueMS, 10), "", s.starve)
	case waiter != "":
		args = append(args, waiter, strconv.FormatInt(s.queueMS, 10))
	case s.fifo:
		args = append(args, "", "", "1")
	}
	start := time.Now()
	r, err := s.c.run(ctx, scriptSemAcquire, s.keys, args)
	var v [2]int64
	if err == nil {
		v, err = replyInts(scriptSemAcquire, r)
		if err == nil && (v[0] < -2 || v[0] > 1 || v[0] == -1) {
			err = fmt.Errorf("%w: %s status %d", ErrUnexpectedReply, scriptSemAcquire.name, v[0])
		}
	}
	if err != nil {
		if !answered(err) {
			s.cancel(id, id, abandonedMS, "")
		}
		return nil, 0, err
	}
	switch v[0] {
	case 0:
		return nil, time.Duration(v[1]) * time.Millisecond, fmt.Errorf("%w: %q", ErrNotObtained, s.name)
	case -2:
		return nil, 0, fmt.Errorf("%w: %d permits asked of semaphore %q, whose limit is %d now", ErrInvalidOption, n, s.name, v[1])
	}
	l, err := s.c.newLease(grant{
		ops: semOps, name: s.name, keys: s.keys, wake: s.wake,
		owner: id, hold: "h:" + id, fence: v[1],
	}, start, s.ttlMS, s.refresh)
	return l, 0, err
}

// cancel runs sem_cancel.lua in the background: it drops the hold call id
// granted (owned by owner), has Redis refuse that call for refuseMS, and
// takes waiter out of the FIFO queue.
func (s *Semaphore) cancel(owner, id, refuseMS, waiter string) {
	args := []string{owner, id, refuseMS, waiter, s.wake}
	s.c.later(s.keys[0], time.Time{}, func(ctx context.Context) error {
		_, err := s.c.run(ctx, scriptSemCancel, s.keys, args)
		return err
	})
}
