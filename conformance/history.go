package conformance

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/scriptlock/scriptlock/locker"
)

// history records every grant of a run so that the checker can assert,
// over the whole run, what no single call can show: exclusion and fence
// order.
type history struct {
	mu     sync.Mutex
	grants []*grant
}

// held is a lease of any lock kind as the checker uses it.
type held interface {
	ValidUntil() time.Time
	Valid() bool
	Unlock(ctx context.Context) error
}

// grant is one lease as the checker sees it: valid from the moment its
// acquire call returned until the start of a successful Unlock, or else
// until the lease's latest validity deadline.
type grant struct {
	l      held
	name   string
	kind   string // "mutex", "read", "write" or "quorum"
	owner  string
	fence  int64
	fences []int64 // a quorum grant's fence per deployment
	epoch  int     // fences are compared within one epoch
	start  time.Time
	end    time.Time // set by release
	closed bool
}

// add records l, granted just now, and returns its grant for release.
func (h *history) add(l *locker.Lease, kind string, epoch int) *grant {
	g := &grant{l: l, name: l.Name(), kind: kind, owner: l.Token(), fence: l.Fence(), epoch: epoch, start: time.Now()}
	h.mu.Lock()
	h.grants = append(h.grants, g)
	h.mu.Unlock()
	return g
}

// addQuorum records q, granted just now, and returns its grant for
// release. Quorum grants are checked for exclusion and, instead of one
// fence order, for the per-deployment rule QuorumLease documents.
func (h *history) addQuorum(q *locker.QuorumLease, name string, epoch int) *grant {
	g := &grant{l: q, name: name, kind: "quorum", owner: q.Parts()[0].Token(), fences: q.Fences(), epoch: epoch, start: time.Now()}
	h.mu.Lock()
	h.grants = append(h.grants, g)
	h.mu.Unlock()
	return g
}

// unlock unlocks l and closes g: at the start of the Unlock when the lease
// is over afterwards (released, found gone, or ended at once by an Unlock
// whose outcome is unknown: its holder stopped using it then), at the
// validity deadline when Unlock failed and left the lease unchanged (the
// lock may still be held until then). It returns Unlock's error.
func (h *history) unlock(ctx context.Context, g *grant) error {
	vu := g.l.ValidUntil()
	end := time.Now()
	err := g.l.Unlock(ctx)
	if err != nil && !errors.Is(err, locker.ErrExpired) && !errors.Is(err, locker.ErrHeldByOther) && g.l.Valid() {
		end = vu
	}
	if vu.Before(end) {
		end = vu
	}
	h.closeAt(g, end)
	return err
}

// closeAt closes g at end: its holder stopped relying on it then (a
// Downgrade whose outcome is unknown ended the write lease, say).
func (h *history) closeAt(g *grant, end time.Time) {
	h.mu.Lock()
	g.end, g.closed = end, true
	h.mu.Unlock()
}

// endOf is g's validity end as known at check time.
func (g *grant) endOf() time.Time {
	if g.closed {
		return g.end
	}
	return g.l.ValidUntil()
}

// historyReport is what the checker found.
type historyReport struct {
	grants, overlaps, inversions int
	first                        string // the first violation, described
}

// check asserts that no two grants of one name by different owners are
// valid at once (readers may share with readers, never with a writer or a
// mutex holder), and that within each epoch a grant that starts after
// another (by a different owner) has a larger fence. It logs the summary
// line and returns the report.
func (h *history) check(t *testing.T) historyReport {
	t.Helper()
	h.mu.Lock()
	gs := append([]*grant(nil), h.grants...)
	for _, g := range gs {
		g.end = g.endOf()
	}
	h.mu.Unlock()
	sort.Slice(gs, func(i, j int) bool { return gs[i].start.Before(gs[j].start) })
	var r historyReport
	r.grants = len(gs)
	for i, a := range gs {
		if !a.end.After(a.start) {
			continue // never valid: its reply came after its deadline
		}
		for _, b := range gs[i+1:] {
			if b.name != a.name || b.owner == a.owner {
				continue
			}
			if b.start.Before(a.end) && b.end.After(b.start) && !(a.kind == "read" && b.kind == "read") {
				r.overlaps++
				if r.first == "" {
					r.first = describe("overlap", a, b)
				}
			}
			if a.kind == "quorum" || b.kind == "quorum" {
				if a.kind == b.kind && !quorumOrdered(a.fences, b.fences) {
					r.inversions++
					if r.first == "" {
						r.first = describe("quorum fence inversion (no shared deployment, or one where the later fence is not larger)", a, b)
					}
				}
				continue
			}
			if b.epoch == a.epoch && b.kind != "read" && a.kind != "read" && b.fence <= a.fence {
				r.inversions++
				if r.first == "" {
					r.first = describe("fence inversion", a, b)
				}
			}
		}
	}
	t.Logf("history checker: %d grants checked, overlaps found = %d, fence inversions = %d", r.grants, r.overlaps, r.inversions)
	if r.overlaps != 0 || r.inversions != 0 {
		t.Errorf("history checker: %s", r.first)
	}
	return r
}

// quorumOrdered reports whether quorum grant b, later than a, is ordered
// after it as QuorumLease documents: they share a deployment, and on every
// deployment both hold, b's fence is the larger.
func quorumOrdered(a, b []int64) bool {
	shared := false
	for i := range a {
		if a[i] != 0 && b[i] != 0 {
			shared = true
			if b[i] <= a[i] {
				return false
			}
		}
	}
	return shared
}

func describe(what string, a, b *grant) string {
	return what + ": " + a.String() + " and " + b.String()
}

func (g *grant) String() string {
	f := fmt.Sprint(g.fence)
	if g.kind == "quorum" {
		f = fmt.Sprint(g.fences)
	}
	return fmt.Sprintf("%s %q owner %.8s fence %s valid %s..%s", g.kind, g.name, g.owner, f,
		g.start.Format("15:04:05.000000"), g.end.Format("15:04:05.000000"))
}
