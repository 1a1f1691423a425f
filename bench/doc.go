// Package bench holds scriptlock's benchmark scenarios, shared by every
// in-tree driver, the hand-written references and the peer libraries (in the
// separate module bench/peers), so that every row of the results runs the
// very same code.
//
// A library enters through the small [Locker] interface: Lock (wait until
// acquired or ctx is done), TryLock (one attempt) and the returned
// [Unlocker]. Adapters for scriptlock ([Scriptlock]), the raw
// SET NX PX + compare-and-delete reference ([RawGoRedis], [RawRedigo],
// [RawRueidis]) and an in-process sync.Mutex ([SyncMutex]) live here; the
// peers' adapters live in bench/peers.
//
// A [Target] names one library on one driver and says how to build it on
// fresh clients; [Benchmark] runs its scenarios as sub-benchmarks named
// key=value per level, so benchstat can pivot on any level:
//
//	BenchmarkLock/lib=scriptlock/driver=rueidis/op=lock-unlock/clients=64
//
// and [Smoke] runs the same scenarios once with a tiny iteration count as a
// plain test, so `go test` proves every scenario still runs to the end.
//
// # Scenarios and what b.N counts
//
//   - op=lock-unlock/clients=1: one goroutine, Lock then Unlock on its own
//     key; b.N acquire-release pairs. The floor is two round trips.
//   - op=lock-unlock/clients=64: 64 goroutines, each on its own key, share
//     b.N acquire-release pairs; 1e9/(ns/op) is the throughput in pairs/s.
//   - op=contended/clients=8/hold=1ms: 8 goroutines on one key, each
//     holding it for 1 ms per grant, until b.N grants were made in total.
//     When the b.N-th grant is made the waiters' context is cancelled, so the
//     run ends at once with no goroutine left behind. It reports
//     wait-p50-ns, wait-p99-ns and wait-max-ns (Lock call to grant),
//     handoffs/s (grants per second of wall time), fairness (fewest grants
//     of a goroutine divided by the most), pending (waits still open when
//     the b.N-th grant was made; each counts in the wait figures with the
//     time it had waited so far, a lower bound) and giveups (times a
//     library's Lock gave up on its own and the scenario had to call it
//     again; the wait spans all such calls).
//   - op=trylock-held: TryLock on a key another instance holds; b.N refusals.
//
// Every leaf calls b.ReportAllocs. All locks use the same lease [TTL].
// Scenarios check exclusion as they go (two holders of one key at once
// fail the run); timings are never asserted.
package bench
