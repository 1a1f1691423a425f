package locker

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// FingerprintLen is the length, in hex digits, of the owner fingerprints
// that Inspect reports.
const FingerprintLen = 8

// Fingerprint returns the short, non-reversible fingerprint of an owner
// token (or waiter id) that Inspect reports in its place: the first
// FingerprintLen hex digits of the token's SHA-1. Tokens are secrets (they
// allow a release), so Inspect never returns them; Redis computes the
// fingerprint, so they never leave the server either. A holder can log
// Fingerprint(lease.Token()) to be recognised in Inspect's output.
func Fingerprint(token string) string {
	sum := sha1.Sum([]byte(token))
	return hex.EncodeToString(sum[:])[:FingerprintLen]
}

// LockState is a snapshot of one lock name as Inspect read it in one script
// call: its mutex, its read-write lock and its semaphore (three different
// locks that share the name and its Cluster slot). Holds, queue entries,
// waiters and intents whose expiry had passed are not counted.
type LockState struct {
	// Name is the lock's name.
	Name string
	// ServerTime is the server's clock (TIME, µs precision) when the state
	// was read. ForceRelease takes it to drop only what was seen.
	ServerTime time.Time
	// Mutex is the state of the Mutex of this name.
	Mutex MutexState
	// RW is the state of the RWMutex of this name.
	RW RWState
	// Semaphore is the state of the Semaphore of this name.
	Semaphore SemaphoreState
	// Election is the leader of the Election of this name.
	Election ElectionState
}

// ElectionState is the leader of an Election: its term is the Mutex's
// grant, and the candidates waiting are the Mutex's Queue.
type ElectionState struct {
	// Term is the leader's term number (Mutex.Fence), 0 when nobody
	// leads (see Election.Leader).
	Term int64
	// Leader is the leader's value.
	Leader string
	// Since is when the term began (server time).
	Since time.Time
}

// MutexState is the state of a Mutex.
type MutexState struct {
	// Held reports whether an owner holds the mutex.
	Held bool
	// Fence is the current grant's fence (the one its leases report); 0
	// when free.
	Fence int64
	// TTL is the time the mutex has left before it expires; 0 when free.
	TTL time.Duration
	// Holds counts the owner's holds: 1, or more for a reentrant Owner (or
	// a hand-over that has not unlocked yet); 0 when free.
	Holds int
	// Owner is the Fingerprint of the owner token; "" when free.
	Owner string
	// Queue counts the FIFO waiters whose queue entry is live.
	Queue int
	// QueueHead is the Fingerprint of the first live waiter's id (the one
	// that takes the lock next), "" when none is queued.
	QueueHead string
	// Starving counts the default-mode waiters kept as starving (they
	// waited past MutexOptions.StarvationThreshold) whose entry is live:
	// while one is, a release hands the lock to the first of them.
	Starving int
	// StarvingHead is the Fingerprint of the first live starving waiter's
	// id (the one the next release hands the lock to), "" when none.
	StarvingHead string
}

// RWState is the state of an RWMutex.
type RWState struct {
	// Readers counts the live read holds (one per read lease).
	Readers int
	// ReaderOwners counts the distinct owners of the live read holds.
	ReaderOwners int
	// ReadTTL is the longest remaining time of a live read hold.
	ReadTTL time.Duration
	// Writer reports whether a write hold lives.
	Writer bool
	// WriterHolds counts the writer's live write holds (more than one for
	// a reentrant Owner).
	WriterHolds int
	// WriterFence is the fence of the write grant when Writer is set (the
	// last write fence), 0 otherwise.
	WriterFence int64
	// WriterTTL is the longest remaining time of a live write hold.
	WriterTTL time.Duration
	// WriterOwner is the Fingerprint of the writer's owner token.
	WriterOwner string
	// WaitingWriters counts the live intents of writers waiting in Lock
	// (while one lives, new readers are refused).
	WaitingWriters int
	// LastWriteFence is the fence of the last write grant still recorded
	// in the lock's hash, 0 when none is.
	LastWriteFence int64
}

// SemaphoreState is the state of a Semaphore.
type SemaphoreState struct {
	// Limit is the permit limit in force: the one SetPermits stored, else
	// the one the last acquire passed; 0 when the name has no semaphore
	// state (nothing held, nobody waits, no stored limit).
	Limit int
	// LimitSet reports whether SetPermits stored Limit (it then holds for
	// every client until SetPermits(ctx, 0)).
	LimitSet bool
	// Held counts the permits of the live holds.
	Held int
	// Holds counts the live holds (one per lease).
	Holds int
	// Holders lists live holds, oldest grant first: all of them, or the
	// first MaxInspectHolders when there are more (Holds counts them all).
	Holders []SemaphoreHolder
	// Waiting counts the Acquire calls waiting for permits.
	Waiting int
	// WaitingHead is the Fingerprint of the oldest waiter's id, "" when
	// nobody waits.
	WaitingHead string
}

// SemaphoreHolder is one hold of a Semaphore.
type SemaphoreHolder struct {
	// Owner is the Fingerprint of the hold's owner token (the lease's
	// Token).
	Owner string
	// Permits counts the permits the hold took.
	Permits int
	// TTL is the time the hold has left.
	TTL time.Duration
	// Fence is the hold's fence.
	Fence int64
}

// MaxInspectHolders bounds the semaphore holders Inspect lists.
const MaxInspectHolders = 100

// Free reports whether nothing holds or waits for any lock of the name.
func (s LockState) Free() bool {
	return !s.Mutex.Held && s.Mutex.Queue == 0 && s.RW.Readers == 0 && !s.RW.Writer && s.RW.WaitingWriters == 0 &&
		s.Semaphore.Holds == 0 && s.Semaphore.Waiting == 0
}

// Inspect reads the state of the Mutex, the RWMutex, the Semaphore and the
// Election called name in one round trip (one read-only script on the name's
// Cluster slot). It blocks
// for that round trip, retrying a passing server state (TRYAGAIN during a
// slot migration, LOADING, ...) a few times while ctx lives. It changes
// nothing in Redis, not even expired fields; its server cost grows with
// the FIFO queue, the number of read holds and the semaphore's holds and
// waiters (it lists at most MaxInspectHolders). Owner tokens and waiter ids
// are reported only as their Fingerprint. It fails with ErrClosed,
// ErrNilContext, ErrInvalidName (empty, or longer than MaxNameLen), ctx's
// error, the Scripter's error, or ErrUnexpectedReply. Inspect is safe for
// concurrent use.
func (c *Client) Inspect(ctx context.Context, name string) (LockState, error) {
	if err := c.check(ctx); err != nil {
		return LockState{}, err
	}
	if err := validName(name); err != nil {
		return LockState{}, err
	}
	if err := ctx.Err(); err != nil {
		return LockState{}, fmt.Errorf("locker: inspect %q: %w", name, err)
	}
	k := c.Key(name)
	keys := []string{k, k + ":q", k + ":qx", k + ":rw", k + ":sem", k + ":semz", k + ":leader", k + ":cand"}
	args := []string{strconv.Itoa(FingerprintLen), strconv.Itoa(MaxInspectHolders)}
	r, _, err := c.retryTransient(ctx, scriptInspect, func() (any, error) {
		return c.run(ctx, scriptInspect, keys, args)
	})
	if err != nil {
		return LockState{}, fmt.Errorf("locker: inspect %q: %w", name, err)
	}
	return decodeState(name, r)
}

// decodeState decodes inspect.lua's reply.
func decodeState(name string, r any) (LockState, error) {
	a, ok := r.([]any)
	if !ok || len(a) != 27 {
		return LockState{}, fmt.Errorf("%w: inspect: got %#v, want an array of 27", ErrUnexpectedReply, r)
	}
	var d stateReader
	n := func(i int) int64 { return d.num(a, i) }
	s := func(i int) string { return d.fp(a, i) }
	ms := func(i int) time.Duration { return time.Duration(n(i)) * time.Millisecond }
	st := LockState{
		Name:       name,
		ServerTime: time.UnixMicro(n(0)),
		Mutex: MutexState{
			Held: n(1) == 1, Fence: n(2), TTL: ms(3), Holds: int(n(4)), Owner: s(5),
			Queue: int(n(6)), QueueHead: s(7), Starving: int(n(23)), StarvingHead: s(24),
		},
		RW: RWState{
			Readers: int(n(8)), ReadTTL: ms(9),
			Writer: n(10) > 0, WriterHolds: int(n(10)), WriterTTL: ms(11), WriterOwner: s(12),
			WaitingWriters: int(n(13)), LastWriteFence: n(14), ReaderOwners: int(n(15)),
		},
		Semaphore: SemaphoreState{
			Limit: int(n(16)), LimitSet: n(17) == 1, Held: int(n(18)), Holds: int(n(19)),
			Waiting: int(n(20)), WaitingHead: s(21),
		},
	}
	if st.RW.Writer {
		st.RW.WriterFence = st.RW.LastWriteFence
	}
	if term := n(26); term != 0 {
		leader, _ := a[25].(string)
		st.Election = ElectionState{Term: term, Leader: leader, Since: time.UnixMicro(term)}
	}
	st.Semaphore.Holders = d.holders(a[22])
	if d.bad != nil {
		return LockState{}, d.bad
	}
	return st, nil
}

// stateReader reads inspect.lua's reply, noting the first element that is
// not what it should be.
type stateReader struct{ bad error }

// num reads element i of arr (the reply or a semaphore holder's array) as
// an integer.
func (d *stateReader) num(arr []any, i int) int64 {
	x, ok := arr[i].(int64)
	if !ok && d.bad == nil {
		d.bad = fmt.Errorf("%w: inspect: element %d is %#v, want an integer", ErrUnexpectedReply, i+1, arr[i])
	}
	return x
}

// fp reads element i of arr as a fingerprint ("" for nil).
func (d *stateReader) fp(arr []any, i int) string {
	switch x := arr[i].(type) {
	case string:
		if len(x) <= FingerprintLen && strings.Trim(x, "0123456789abcdef") == "" {
			return x
		}
	case nil:
		return ""
	}
	if d.bad == nil {
		d.bad = fmt.Errorf("%w: inspect: element %d is %#v, want a fingerprint", ErrUnexpectedReply, i+1, arr[i])
	}
	return ""
}

// holders reads the semaphore holders' array v.
func (d *stateReader) holders(v any) []SemaphoreHolder {
	hs, ok := v.([]any)
	if !ok && d.bad == nil {
		d.bad = fmt.Errorf("%w: inspect: element 23 is %#v, want an array", ErrUnexpectedReply, v)
	}
	var out []SemaphoreHolder
	for _, h := range hs {
		e, ok := h.([]any)
		if !ok || len(e) != 4 {
			if d.bad == nil {
				d.bad = fmt.Errorf("%w: inspect: a semaphore holder is %#v, want an array of 4", ErrUnexpectedReply, h)
			}
			break
		}
		out = append(out, SemaphoreHolder{
			Owner: d.fp(e, 0), Permits: int(d.num(e, 1)), TTL: time.Duration(d.num(e, 2)) * time.Millisecond, Fence: d.num(e, 3),
		})
	}
	return out
}

// keySuffixes are the suffixes, after "<prefix>{<name>}", of the keys a
// lock name may have: its mutex hash, FIFO queue, queue expiries, abandoned
// calls, read-write hash and read expiries, and semaphore hash and
// expiries (with its waiters).
var keySuffixes = []string{"", ":q", ":qx", ":x", ":rw", ":rwr", ":sem", ":semz"}

// nameUnescaper undoes nameEscaper.
var nameUnescaper = strings.NewReplacer("%25", "%", "%7B", "{", "%7D", "}")

// LockName returns the name of the lock that key belongs to, when key is
// one of the keys of a Mutex, RWMutex or Semaphore under this Client's
// prefix (its hash, "<key>:rw" or "<key>:rwr", the FIFO queue "<key>:q" or
// "<key>:qx", "<key>:x", or "<key>:sem" or "<key>:semz"),
// and reports whether it is; claim markers and other keys give false. It is
// the inverse of Key, for tools that find locks with SCAN (match
// "<prefix>{*", with the prefix's glob characters escaped). It does not
// contact Redis.
func (c *Client) LockName(key string) (name string, ok bool) {
	rest, ok := strings.CutPrefix(key, c.prefix+"{")
	if !ok {
		return "", false
	}
	esc, suffix, ok := strings.Cut(rest, "}")
	if !ok || esc == "" {
		return "", false
	}
	for _, s := range keySuffixes {
		if suffix == s {
			name = nameUnescaper.Replace(esc)
			return name, nameEscaper.Replace(name) == esc
		}
	}
	return "", false
}
