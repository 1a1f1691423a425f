package bench

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"
)

// Scenario is one benchmark scenario, runnable on any Locker (RW and
// Refresh need an optional interface of it, see RWLocker and
// AutoRefresher). Build one with LockUnlock, Contended, TryLockHeld, RW or
// Refresh.
type Scenario struct {
	// Name is the scenario's part of the benchmark name, key=value per
	// level, such as "op=lock-unlock/clients=64".
	Name string

	// smokeN is the iteration count of a smoke run.
	smokeN int
	// run does n iterations on r; it controls r's timer itself.
	run func(ctx context.Context, r *run) error
	// extra, when set, is the time a run of n iterations takes by
	// construction (op=refresh's window), added to the row budget.
	extra func(n int) time.Duration
}

// extraTime returns the time a run of n iterations takes by construction.
func (s Scenario) extraTime(n int) time.Duration {
	if s.extra == nil {
		return 0
	}
	return s.extra(n)
}

// Standard returns the scenarios every Redis lock library runs, in order:
// lock-unlock with 1 and with 64 clients, contended with 8 clients holding
// 1 ms and holding 100 µs (short holds: where barging pays most and
// starvation hurts least), and trylock-held.
func Standard() []Scenario {
	return append(Uncontended(), Contended(8, time.Millisecond), Contended(8, ShortHold), TryLockHeld())
}

// ShortHold is the hold of the short contended row,
// op=contended/clients=8/hold=100us.
const ShortHold = 100 * time.Microsecond

// Uncontended returns the lock-unlock scenarios with 1 and with 64 clients.
func Uncontended() []Scenario {
	return []Scenario{LockUnlock(1), LockUnlock(64)}
}

// run is one execution of a scenario: a benchmark leaf (b set, n = b.N) or
// a smoke run (b nil).
type run struct {
	b       *testing.B
	n       int
	l       Locker
	other   Locker
	addr    string // the Redis the target runs on
	prefix  string
	metrics map[string]float64

	// stats, when set, reads the server's cost at resetTimer (cost[0]) and
	// stopTimer (cost[1]), so a scenario's set-up is not counted.
	stats  *serverStats
	cost   [2]cost
	costOK [2]bool
	// cpu is this process's CPU time at resetTimer and stopTimer (the
	// client's cost: every goroutine of the benchmark process), cpuOK
	// whether both were read.
	cpu   [2]time.Duration
	cpuOK [2]bool

	// mu guards abandoned, which detaches a run stopped at its budget
	// from its benchmark (see abandon).
	mu        sync.Mutex
	abandoned bool
}

// key returns the i-th key of scenario op under the target's prefix.
func (r *run) key(op string, i int) string {
	return fmt.Sprintf("%s%s:%d", r.prefix, op, i)
}

// smoke reports whether this is a smoke run rather than a benchmark.
func (r *run) smoke() bool { return r.b == nil }

// both returns the run's Locker and its other Locker as an I, or an error
// when either is not one.
func both[I any](r *run) (I, I, error) {
	l, ok := r.l.(I)
	other, ok2 := r.other.(I)
	if !ok || !ok2 {
		return l, other, fmt.Errorf("%T or %T does not implement %v", r.l, r.other, reflect.TypeFor[I]())
	}
	return l, other, nil
}

// abandon detaches r from its benchmark: a run stopped at its budget may
// still be running on goroutines that ignored their context, and must not
// touch the benchmark once its leaf has ended.
func (r *run) abandon() {
	r.mu.Lock()
	r.abandoned = true
	r.mu.Unlock()
}

func (r *run) resetTimer() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.abandoned {
		return
	}
	if r.stats != nil {
		r.cost[0], r.costOK[0] = r.stats.read()
	}
	if r.b != nil {
		r.b.ResetTimer()
		r.cpu[0], r.cpuOK[0] = processCPU()
	}
}

func (r *run) stopTimer() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.abandoned {
		return
	}
	if r.b != nil {
		r.cpu[1], r.cpuOK[1] = processCPU()
		r.b.StopTimer()
	}
	if r.stats != nil {
		r.cost[1], r.costOK[1] = r.stats.read()
	}
}

// report records a custom figure, and reports it to the benchmark.
func (r *run) report(v float64, unit string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.abandoned {
		return
	}
	if r.metrics == nil {
		r.metrics = map[string]float64{}
	}
	r.metrics[unit] = v
	if r.b != nil {
		r.b.ReportMetric(v, unit)
	}
}
