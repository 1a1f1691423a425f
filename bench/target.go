package bench

import (
	"context"
	"crypto/rand"
	"fmt"
	"testing"
	"time"

	"github.com/scriptlock/scriptlock/internal/redisserver"
)

// Target is one library on one driver, with the scenarios it runs.
type Target struct {
	// Lib names the library: "lib=<Lib>" in benchmark names, such as
	// "scriptlock", "raw", "redsync-tuned".
	Lib string

	// Driver names the Redis client it runs on: "driver=<Driver>"; empty
	// leaves the level out (an in-process reference has no driver).
	Driver string

	// Mode, when set, is one more level after the driver, key=value, that
	// tells apart rows of one library and driver built differently in the
	// same benchmark, such as "ack=1" (Options.Ack) or "lock=quorum"; empty
	// leaves the level out.
	Mode string

	// Scenarios lists what the target runs, in order.
	Scenarios []Scenario

	// New builds the Locker under test and a second, independent instance
	// (its own client, playing another process) that holds keys for
	// trylock-held, both on fresh clients for the Redis at addr. It
	// registers their Close with tb.Cleanup and fails tb when it cannot
	// build them.
	New func(tb testing.TB, addr string) (l, other Locker)
}

// Name returns the target's part of a benchmark name:
// "lib=<Lib>/driver=<Driver>", or "lib=<Lib>" without a driver, followed
// by "/<Mode>" when Mode is set.
func (t Target) Name() string {
	n := "lib=" + t.Lib
	if t.Driver != "" {
		n += "/driver=" + t.Driver
	}
	if t.Mode != "" {
		n += "/" + t.Mode
	}
	return n
}

// Benchmark runs every scenario of every target against the Redis at addr,
// as sub-benchmarks "<target name>/<scenario name>" of b. Each target is
// built once, on fresh clients, when the first of its scenarios matches
// -test.bench; each leaf calls b.ReportAllocs. A scenario error fails the
// leaf.
//
// Each leaf also reports the server's cost per operation, read from INFO
// before and after it: server-cpu-us/op (the server process's CPU time),
// script-us/op (time in script calls, from commandstats) and scripts/op
// (script calls); and the client's: client-cpu-us/op (the benchmark
// process's CPU time, every goroutine's, over the timed part, where the
// platform tells it). Work a library does in the background (a clean-up, a
// renewal) counts in the leaf it happens in.
func Benchmark(b *testing.B, addr string, targets []Target) {
	benchmark(b, addr, newServerStats(b, []string{addr}), targets, nil)
}

// BenchmarkOverNetwork runs targets as Benchmark does, with their clients
// connected through a delay proxy to the Redis at addr that adds oneWay in
// each direction. Each leaf also reports net-rtt-us, the median round trip
// of 50 PINGs through the proxy measured before it.
func BenchmarkOverNetwork(b *testing.B, addr string, oneWay time.Duration, targets []Target) {
	p := redisserver.StartDelayProxy(b, addr, oneWay)
	benchmark(b, p.Addr, newServerStats(b, []string{addr}), targets, func(b *testing.B) func() {
		rtt, err := MeasureRTT(context.Background(), p.Addr, 50)
		if err != nil {
			b.Fatalf("round trip through the delay proxy: %v", err)
		}
		return func() { b.ReportMetric(float64(rtt)/float64(time.Microsecond), "net-rtt-us") }
	})
}

// benchmark runs the leaves with clients on addr and reads the server's
// cost with stats over each scenario's timed part; before, if set, runs
// before each leaf, and what it returns after it.
func benchmark(b *testing.B, addr string, stats *serverStats, targets []Target, before func(*testing.B) func()) {
	budget, err := rowBudget()
	if err != nil {
		b.Fatal(err)
	}
	for _, t := range targets {
		b.Run(t.Name(), func(b *testing.B) {
			l, other := t.New(b, addr)
			prefix := keyPrefix(t)
			for _, s := range t.Scenarios {
				b.Run(s.Name, func(b *testing.B) {
					b.ReportAllocs()
					if before != nil {
						defer before(b)()
					}
					r := &run{b: b, n: b.N, l: l, other: other, addr: addr, prefix: prefix, stats: stats}
					rw, _ := l.(Rewaiter)
					var rewaits0 int64
					if rw != nil {
						rewaits0 = rw.Rewaits()
					}
					if err := runBounded(context.Background(), budget+s.extraTime(b.N), func(ctx context.Context) error {
						return s.run(ctx, r)
					}); err != nil {
						r.abandon()
						b.Fatalf("%s/%s: %v", t.Name(), s.Name, err)
					}
					if rw != nil {
						b.ReportMetric(float64(rw.Rewaits()-rewaits0), "rewaits")
					}
					if r.costOK[0] && r.costOK[1] {
						stats.report(b, r.cost[0], r.cost[1])
					}
					if r.cpuOK[0] && r.cpuOK[1] && b.N > 0 {
						b.ReportMetric(float64(r.cpu[1]-r.cpu[0])/float64(time.Microsecond)/float64(b.N), "client-cpu-us/op")
					}
				})
			}
		})
	}
}

// SmokeTimeout bounds one scenario of a Smoke run.
const SmokeTimeout = 60 * time.Second

// Smoke runs every scenario of every target once against the Redis at addr,
// with a tiny iteration count (two to eight per client; op=refresh: 50
// leases for 4 rounds, 1.3 s), as subtests of t named like the benchmarks.
// It checks that each scenario runs to the end without error within
// SmokeTimeout (a scenario that does not fails as "did not finish",
// naming what it was waiting in) (so exclusion held, no lease was lost) and logs its custom
// figures; it asserts no timing.
func Smoke(t *testing.T, addr string, targets []Target) {
	for _, tg := range targets {
		t.Run(tg.Name(), func(t *testing.T) {
			l, other := tg.New(t, addr)
			prefix := keyPrefix(tg)
			for _, s := range tg.Scenarios {
				t.Run(s.Name, func(t *testing.T) {
					r := &run{n: s.smokeN, l: l, other: other, addr: addr, prefix: prefix}
					if err := runBounded(t.Context(), SmokeTimeout, func(ctx context.Context) error {
						return s.run(ctx, r)
					}); err != nil {
						r.abandon()
						t.Fatalf("%s/%s with n=%d: %v", tg.Name(), s.Name, r.n, err)
					}
					if len(r.metrics) > 0 {
						t.Logf("n=%d %v", r.n, r.metrics)
					}
				})
			}
		})
	}
}

// keyPrefix returns a key prefix unique to this process and target, so that
// runs never meet each other's keys (nor leftovers of a crashed run) and
// one process writes a bounded set of keys.
func keyPrefix(t Target) string {
	if t.Mode != "" {
		return fmt.Sprintf("bench:%s:%s:%s:%s:", runID, t.Lib, t.Driver, t.Mode)
	}
	return fmt.Sprintf("bench:%s:%s:%s:", runID, t.Lib, t.Driver)
}

// runID tells this process's keys apart from any other's.
var runID = rand.Text()[:8]
