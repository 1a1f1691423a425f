package locker

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Auto-refresh timing: a lease is refreshed every RefreshFraction of its TTL;
// after a failed refresh (a network error; the lease is not known lost) it
// is retried after RetryFraction of its TTL, until its validity deadline.
const (
	RefreshFraction = 1.0 / 3
	RetryFraction   = 1.0 / 10
)

// maxRefreshes bounds concurrent refresh calls (or batches) of one Client.
const maxRefreshes = 32

// Refresh batching, when the Scripter implements Batcher: leases due within
// refreshCoalesce of each other are refreshed together (a little early), in
// batches of at most maxBatch calls.
const (
	refreshCoalesce = 5 * time.Millisecond
	maxBatch        = 256
)

// refresher keeps the auto-refreshed leases of one Client alive. Its loop
// goroutine runs only while it has leases (or refreshes in flight) and exits
// when the last one goes, or at Client.Close. Leases wait in a heap by next
// refresh time, so scheduling costs O(log n) per refresh, however many
// leases are kept.
type refresher struct {
	c *Client

	mu      sync.Mutex
	leases  map[*Lease]*refreshEntry
	due     refreshHeap
	running bool
	closed  bool
	kick    chan struct{}
	ctx     context.Context // cancelled by Close
	cancel  context.CancelFunc
	wg      sync.WaitGroup // the loop and refresh calls
	sem     chan struct{}
}

// refresh is one lease's place in the refresher's heap.
type refreshEntry struct {
	l   *Lease
	at  time.Time // next refresh
	idx int       // index in the heap
}

// refreshHeap orders refreshes by time (container/heap).
type refreshHeap []*refreshEntry

func (h refreshHeap) Len() int           { return len(h) }
func (h refreshHeap) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h refreshHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].idx, h[j].idx = i, j
}
func (h *refreshHeap) Push(x any) {
	e := x.(*refreshEntry)
	e.idx = len(*h)
	*h = append(*h, e)
}
func (h *refreshHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return e
}

func newRefresher(c *Client) *refresher {
	ctx, cancel := context.WithCancel(context.Background())
	return &refresher{c: c, leases: map[*Lease]*refreshEntry{}, kick: make(chan struct{}, 1), ctx: ctx, cancel: cancel, sem: make(chan struct{}, maxRefreshes)}
}

// add starts refreshing l; it reports false after Close.
func (r *refresher) add(l *Lease) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return false
	}
	e := &refreshEntry{l: l, at: time.Now().Add(fraction(l.ttlMS, RefreshFraction))}
	r.leases[l] = e
	heap.Push(&r.due, e)
	if !r.running {
		r.running = true
		r.wg.Add(1)
		go r.loop()
	}
	r.poke()
	return true
}

// poke wakes the loop (it never blocks).
func (r *refresher) poke() {
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// remove stops refreshing l. It does not block; when l was the last lease
// the loop goroutine exits promptly.
func (r *refresher) remove(l *Lease) {
	r.mu.Lock()
	if e, ok := r.leases[l]; ok {
		delete(r.leases, l)
		heap.Remove(&r.due, e.idx)
	}
	empty := len(r.leases) == 0
	r.mu.Unlock()
	if empty {
		r.poke()
	}
}

// retrySoon moves l's next refresh to RetryFraction of its TTL from now.
func (r *refresher) retrySoon(l *Lease) {
	r.mu.Lock()
	if e, ok := r.leases[l]; ok {
		e.at = time.Now().Add(fraction(l.ttlMS, RetryFraction))
		heap.Fix(&r.due, e.idx)
	}
	r.mu.Unlock()
	r.poke()
}

// close stops the loop and waits for refresh calls in flight to end.
func (r *refresher) close() {
	r.mu.Lock()
	r.closed = true
	r.leases = map[*Lease]*refreshEntry{}
	r.due = nil
	r.mu.Unlock()
	r.cancel()
	r.wg.Wait()
}

func fraction(ttlMS int64, f float64) time.Duration {
	return time.Duration(float64(time.Duration(ttlMS)*time.Millisecond) * f)
}

func (r *refresher) loop() {
	defer r.wg.Done()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	batcher, _ := r.c.s.(Batcher)
	if r.c.acker != nil {
		batcher = nil // each refresh is acknowledged on its own connection
	}
	for {
		r.mu.Lock()
		if len(r.leases) == 0 || r.closed {
			r.running = false
			r.mu.Unlock()
			return
		}
		now := time.Now()
		horizon := now
		if batcher != nil {
			horizon = now.Add(refreshCoalesce) // refresh a little early, together
		}
		var due []*Lease
		for len(r.due) > 0 && !r.due[0].at.After(horizon) {
			e := r.due[0]
			due = append(due, e.l)
			// Not due again until this refresh reschedules it.
			e.at = now.Add(fraction(e.l.ttlMS, RefreshFraction))
			heap.Fix(&r.due, 0)
		}
		next := now.Add(time.Hour)
		if len(r.due) > 0 {
			next = r.due[0].at
		}
		r.mu.Unlock()
		for len(due) > 0 {
			select {
			case r.sem <- struct{}{}:
			case <-r.ctx.Done():
				return
			}
			r.wg.Add(1)
			if batcher == nil {
				go r.refresh(due[0])
				due = due[1:]
				continue
			}
			k := min(len(due), maxBatch)
			go r.refreshBatch(batcher, due[:k:k])
			due = due[k:]
		}
		timer.Reset(time.Until(next))
		select {
		case <-timer.C:
		case <-r.kick:
		case <-r.ctx.Done():
			return
		}
	}
}

// refresh extends l once, bounded by its validity deadline. Extend marks the
// lease lost when the lock expired or has another owner; after a network
// error the refresh is retried sooner, until the deadline timer declares
// the lease lost.
func (r *refresher) refresh(l *Lease) {
	defer func() { <-r.sem; r.wg.Done() }()
	deadline := l.ValidUntil()
	if deadline.IsZero() {
		r.remove(l)
		return
	}
	ctx, cancel := context.WithDeadline(r.ctx, deadline)
	defer cancel()
	r.settle(l, l.Extend(ctx, time.Duration(l.ttlMS)*time.Millisecond))
}

// settle reschedules l after a refresh that failed without deciding the
// lease's fate (a network error).
func (r *refresher) settle(l *Lease, err error) {
	if err == nil || errors.Is(err, ErrExpired) || errors.Is(err, ErrHeldByOther) || errors.Is(err, ErrClosed) {
		return
	}
	r.retrySoon(l)
}

// refreshBatch extends leases with one Batcher call, bounded by the earliest
// validity deadline among them; each result is applied as Extend applies
// its own. Calls the server did not know the script for (NOSCRIPT, after a
// restart or a flush) are refreshed one by one, which loads it.
func (r *refresher) refreshBatch(b Batcher, leases []*Lease) {
	defer func() { <-r.sem; r.wg.Done() }()
	type pending struct {
		l     *Lease
		n     int64
		start time.Time
	}
	var (
		ps       []pending
		calls    []ScriptCall
		deadline time.Time
	)
	for _, l := range leases {
		d := l.ValidUntil()
		if d.IsZero() || l.usable(r.ctx) != nil {
			r.remove(l)
			continue
		}
		if deadline.IsZero() || d.Before(deadline) {
			deadline = d
		}
		n, start, args := l.extendCall(l.ttlMS)
		ps = append(ps, pending{l, n, start})
		calls = append(calls, ScriptCall{SHA1: l.ops.extend.sha, Keys: l.keys[:l.ops.keys], Args: args})
	}
	if len(calls) == 0 {
		return
	}
	ctx, cancel := context.WithDeadline(r.ctx, deadline)
	defer cancel()
	res := b.EvalShaBatch(ctx, calls)
	for i, p := range ps {
		var reply any
		err := errBatchShort
		if i < len(res) {
			reply, err = res[i].Reply, res[i].Err
		}
		if errors.Is(err, ErrNoScript) {
			// the call did not run: refresh this one alone, loading the script
			ectx, ecancel := context.WithDeadline(r.ctx, p.l.ValidUntil())
			err = p.l.Extend(ectx, time.Duration(p.l.ttlMS)*time.Millisecond)
			ecancel()
			r.settle(p.l, err)
			continue
		}
		if err != nil {
			err = r.c.wrap(ctx, p.l.ops.extend, err)
		}
		err = p.l.extended(p.n, p.start, p.l.ttlMS, reply, err)
		if r.c.obs != nil {
			r.c.observe(ctx, Event{Kind: EventExtend, Lock: p.l.name, Mode: p.l.mode(), Fence: p.l.fence, Err: err})
		}
		r.settle(p.l, err)
	}
}

// errBatchShort stands for the result a Batcher failed to return.
var errBatchShort = fmt.Errorf("%w: batch returned fewer results than calls", ErrUnexpectedReply)

// startRefresh arms a new lease's loss signalling and hands it to the
// refresher when it is auto-refreshed; other leases are left untouched.
func (c *Client) startRefresh(l *Lease) {
	if !l.refresh {
		return
	}
	l.mu.Lock()
	l.armLocked()
	l.mu.Unlock()
	if !c.refresher.add(l) {
		l.refresh = false // the Client closed meanwhile: the deadline timer still fires
	}
}
