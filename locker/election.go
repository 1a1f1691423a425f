package locker

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"
)

// ErrNoLeader is returned by Election.Leader when no candidate leads: the
// lock is free.
var ErrNoLeader = errors.New("locker: no leader")

// electOps act on terms: a term's extend keeps its leader record alive,
// its release drops it, or records the candidate it hands the name to.
var electOps = &leaseOps{release: scriptElectRelease, extend: scriptElectExtend, pttl: scriptPTTL, keys: 4}

// Election elects one leader per name among the candidates of every
// Client: the candidate holding the name's FIFO, auto-refreshed Mutex
// leads, and its term is that lease. A term's number is the lock's fence:
// it increases with every term of the name, across expiries.
//
// The leader's value lives in a record beside the lock
// (<prefix>{<name>}:leader), which lives exactly as long as the term, and
// the call that grants the lock writes it: Campaign's acquire when it is
// granted, and, when a Resign hands the lock to the next candidate in line,
// that Resign, from the value the candidate left when it queued (the lock
// goes to a waiter in the same call, see Mutex). Either call tells the
// observers, on the channel named like the record, so a new leader is known
// the moment it leads, and a hand-over costs one round trip. Leader reads
// the lock and the record together and ignores a record of an earlier term,
// so a deposed leader is never reported. A Campaign whose outcome is
// unknown is cleaned up as Mutex.Lock's is: until then Leader may report
// the term its call was granted.
//
// An Election campaigns for one term at a time; its methods are safe for
// concurrent use.
type Election struct {
	m       *Mutex
	ttl     time.Duration
	keys    []string // lock hash, leader record, candidates' values
	acquire []string // elect_acquire.lua's keys
	channel string   // the observers' channel

	mu   sync.Mutex
	term *Term // the current term of this Election, or nil
}

// campaign is what one Campaign's attempts add to the acquire's: the keys
// and the candidate's value (see elect_acquire.lua).
type campaign struct {
	keys           []string
	value, channel string
}

// Term is one candidate's time as leader: what Campaign returns. Its
// methods are safe for concurrent use.
type Term struct {
	e *Election
	l *Lease

	mu    sync.Mutex // serializes Proclaim; guards value and n
	value string
	n     int64 // the last proclaim number sent
}

// Leader is what Election.Leader and Observe report: the leader's value,
// its term number and when the term began (server time).
type Leader struct {
	Value string
	Term  int64
	Since time.Time
	n     int64 // the proclaim number, ordering the values of one term
}

// ElectionOptions configure an Election; the zero value (or nil) is the
// default.
type ElectionOptions struct {
	// Barging lets candidates race for leadership, as a Mutex's default
	// mode does (a candidate that waits past DefaultStarvationThreshold is
	// handed it), instead of being served in arrival order.
	Barging bool
}

// NewElection returns the election called name, whose terms last ttl and
// are refreshed while the leader lives. It does not contact Redis. It fails
// with ErrClosed, ErrInvalidName or ErrInvalidTTL, as NewMutex.
func (c *Client) NewElection(name string, ttl time.Duration, opts *ElectionOptions) (*Election, error) {
	o := orZero(opts)
	m, err := c.NewMutex(name, ttl, &MutexOptions{FIFO: !o.Barging, AutoRefresh: true})
	if err != nil {
		return nil, err
	}
	k := c.Key(name)
	m.ops, m.leaseKeys = electOps, []string{k, k + ":q", k + ":qx", k + ":leader", k + ":cand"}
	return &Election{
		m: m, ttl: ttl, channel: k + ":leader",
		keys:    []string{k, k + ":leader", k + ":cand"},
		acquire: append(m.keys[:4:4], k+":leader", k+":cand"),
	}, nil
}

// Name returns the election's name.
func (e *Election) Name() string { return e.m.name }

// Campaign blocks until this candidate leads, in arrival order, with value
// as the leader's value, and returns the term. While this Election leads
// it returns the current term. It fails as Mutex.Lock.
func (e *Election) Campaign(ctx context.Context, value string) (*Term, error) {
	e.mu.Lock()
	if t := e.term; t != nil && t.l.Valid() {
		e.mu.Unlock()
		return t, nil
	}
	e.mu.Unlock()
	m := *e.m
	m.campaign = &campaign{keys: e.acquire, value: value, channel: e.channel}
	l, err := m.Lock(ctx)
	if err != nil {
		return nil, err
	}
	t := &Term{e: e, l: l, value: value}
	e.mu.Lock()
	e.term = t
	e.mu.Unlock()
	return t, nil
}

// Proclaim changes the current leader's value without a new election. It
// fails with ErrExpired when this Election does not lead (or its term
// ended), with ErrHeldByOther when another candidate leads now, or with
// the Scripter's error (the outcome is then unknown).
func (e *Election) Proclaim(ctx context.Context, value string) error {
	if err := e.m.c.check(ctx); err != nil {
		return err
	}
	e.mu.Lock()
	t := e.term
	e.mu.Unlock()
	if t == nil {
		return fmt.Errorf("%w: %q: this candidate does not lead", ErrExpired, e.m.name)
	}
	return t.proclaim(ctx, value)
}

// Resign ends this Election's term, if any, and hands leadership to the
// next candidate in the same round trip. It fails as Lease.Unlock.
func (e *Election) Resign(ctx context.Context) error {
	if ctx == nil {
		return ErrNilContext
	}
	e.mu.Lock()
	t := e.term
	e.term = nil
	e.mu.Unlock()
	if t == nil {
		return nil
	}
	return t.l.Unlock(ctx)
}

// Leader reads the current leader. It blocks for one round trip and fails
// with ErrNoLeader when nobody leads, or with ErrClosed or the Scripter's
// error.
func (e *Election) Leader(ctx context.Context) (Leader, error) {
	c := e.m.c
	if err := c.check(ctx); err != nil {
		return Leader{}, err
	}
	r, _, err := c.retryTransient(ctx, scriptElectLeader, func() (any, error) { return c.run(ctx, scriptElectLeader, e.keys, nil) })
	if err != nil {
		return Leader{}, err
	}
	return e.leader(r)
}

// leader decodes elect_leader.lua's reply.
func (e *Election) leader(r any) (Leader, error) {
	v, ok := r.([]any)
	if !ok || len(v) == 0 {
		return Leader{}, fmt.Errorf("%w: %s: got %#v", ErrUnexpectedReply, scriptElectLeader.name, r)
	}
	if st, _ := v[0].(int64); st == 0 && len(v) == 1 {
		return Leader{}, fmt.Errorf("%w: %q", ErrNoLeader, e.m.name)
	}
	if len(v) != 4 {
		return Leader{}, fmt.Errorf("%w: %s: got %#v", ErrUnexpectedReply, scriptElectLeader.name, r)
	}
	term, ok1 := v[1].(int64)
	value, ok2 := v[2].(string)
	n, ok3 := v[3].(int64)
	if !ok1 || !ok2 || !ok3 {
		return Leader{}, fmt.Errorf("%w: %s: got %#v", ErrUnexpectedReply, scriptElectLeader.name, r)
	}
	return Leader{Value: value, Term: term, Since: time.UnixMicro(term), n: n}, nil
}

// Observe streams the leader: the current one first, then each change (a
// new term, or a Proclaim) in term order, until ctx ends, when the channel
// is closed. It never blocks the election: a reader that falls behind
// misses intermediate leaders but always gets the latest. A lost message
// is healed by reading the leader at least every third of the TTL.
func (e *Election) Observe(ctx context.Context) <-chan Leader {
	out := make(chan Leader, 1)
	c := e.m.c
	if c.check(ctx) != nil {
		close(out)
		return out
	}
	go e.observe(ctx, out)
	return out
}

// observe feeds out (see Observe).
func (e *Election) observe(ctx context.Context, out chan Leader) {
	defer close(out)
	c := e.m.c
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-c.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	wake, leave := c.joinWake(ctx, e.channel, false)
	defer leave(false)
	every := max(e.ttl/3, 10*time.Millisecond)
	t := time.NewTimer(0)
	defer t.Stop()
	var last Leader
	for {
		select {
		case <-ctx.Done():
			return
		case <-wake:
		case <-t.C:
		}
		if l, err := e.Leader(ctx); err == nil && (l.Term > last.Term || l.Term == last.Term && l.n > last.n) {
			last = l
			select { // the latest wins: drop an unread older value
			case <-out:
			default:
			}
			out <- l
		}
		t.Reset(every)
	}
}

// proclaim records value as the term's leader value (see Proclaim).
func (t *Term) proclaim(ctx context.Context, value string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	l, c := t.l, t.e.m.c
	if err := l.usable(ctx); err != nil {
		return err
	}
	t.n++
	args := []string{l.owner, l.hold, value, strconv.FormatInt(t.n, 10), t.e.channel}
	r, _, err := c.retryTransient(ctx, scriptElectProclaim, func() (any, error) {
		return c.run(ctx, scriptElectProclaim, t.e.keys, args)
	})
	var st int64
	if err == nil {
		st, err = replyInt(scriptElectProclaim, r)
	}
	if err != nil {
		return err
	}
	if st == 1 || st == 2 {
		if st == 1 {
			t.value = value
		}
		return nil
	}
	err = l.outcome(st)
	l.lose(err)
	return err
}

// Value returns the leader value this term last proclaimed.
func (t *Term) Value() string {
	if t == nil {
		return ""
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.value
}

// Fence returns the term number: it increases with every term of the name.
func (t *Term) Fence() int64 { return t.lease().Fence() }

// Valid reports whether the term is still held by its local deadline.
func (t *Term) Valid() bool { return t.lease().Valid() }

// ValidUntil returns the term's local validity deadline (see Lease).
func (t *Term) ValidUntil() time.Time { return t.lease().ValidUntil() }

// Lost returns a channel closed when the term is lost (see Lease.Lost).
func (t *Term) Lost() <-chan struct{} { return t.lease().Lost() }

// Context returns a context cancelled when the term is lost or resigned:
// run the leader's work under it.
func (t *Term) Context() context.Context { return t.lease().Context() }

// Err returns why the term was lost, or nil (see Lease.Err).
func (t *Term) Err() error { return t.lease().Err() }

// lease returns the term's lease; nil for a nil term (a nil Lease's
// methods report an expired lease).
func (t *Term) lease() *Lease {
	if t == nil {
		return nil
	}
	return t.l
}
