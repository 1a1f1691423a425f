// Package bench holds scriptlock's benchmark scenarios, shared by every
// in-tree driver, the hand-written references and the peer libraries (in the
// separate module bench/peers), so that every row of the results runs the
// very same code.
//
// A library enters through the small [Locker] interface: Lock (wait until
// acquired or ctx is done), TryLock (one attempt) and the returned
// [Unlocker]. Features only some libraries have are optional interfaces
// of a Locker, found by type assertion: [RWLocker] (a read-write lock) and
// [AutoRefresher] (leases the library keeps alive itself). Adapters for scriptlock ([Scriptlock]), the raw
// SET NX PX + compare-and-delete reference ([RawGoRedis], [RawRedigo],
// [RawRueidis], [RawValkeyGo]) and an in-process sync.Mutex ([SyncMutex])
// live here; the peers' adapters live in bench/peers. The drivers, in the
// order their rows run, are [Drivers]: goredis, redigo, rueidis and
// valkeygo (valkey-go, a fork of rueidis, whose clients get the same
// options as rueidis's).
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
//     again; the wait spans all such calls). scriptlock rows also report
//     handovers/op ([HandOverCounter]): the fraction of grants a release
//     handed straight to a waiter (FIFO, or a default-mode waiter past
//     MutexOptions.StarvationThreshold) rather than a free lock taken.
//   - op=contended/clients=8/hold=100us: the same with 100 µs holds
//     ([ShortHold]), where barging pays most and starvation hurts least.
//     Holds spin rather than sleep (an idle Go process oversleeps a short
//     time.Sleep by up to a millisecond, and by how idle the library
//     leaves it; see holdFor): sleeping holds would measure the 100 µs
//     rows at about a fifth of their rate, and every contended row with
//     holds longer than asked.
//     BenchmarkLockStarve runs both contended rows of scriptlock per
//     starvation threshold ([StarveTargets]), the figures that chose the
//     default.
//   - op=trylock-held: TryLock on a key another instance holds; b.N refusals.
//   - op=rw/clients=16/reads=90pct: 16 goroutines on one read-write lock
//     share b.N iterations, each a read lock (RLock + Unlock) with
//     probability 0.9, else a write lock, from a pseudo-random sequence
//     seeded per goroutine; ns/op is per lock+unlock pair. It reports
//     read-p50-ns, read-p99-ns, write-p50-ns, write-p99-ns (call to grant)
//     and writes/s. Rows: scriptlock on each driver and lib=syncmutex
//     (sync.RWMutex); the peers have no read-write lock and do not run it.
//     Needs [RWLocker].
//   - op=refresh/leases=10000: 10,000 leases on distinct keys with a
//     [RefreshTTL] of 1 s, kept alive by the library's auto-refresh (every
//     [RefreshInterval], 333 ms); b.N counts refresh rounds and the timed
//     part is a window of b.N rounds, so ns/op is RefreshInterval by
//     construction and allocs/op is the process's per round. It reports
//     cmds/s (script calls counted by the server, INFO commandstats),
//     cpu-ms/s (the process's user+system CPU per second, 1000 = one core)
//     and cpu-ns/refresh; a lease lost by the end fails the run, and the
//     run's keys are deleted afterwards. Rows: scriptlock
//     (MutexOptions.AutoRefresh) on each driver and rueidislock (which
//     extends held locks by itself); redsync and bsm/redislock have only a
//     manual extend and do not run it. Needs [AutoRefresher].
//   - op=resign/candidates=4 and op=crash/candidates=4/ttl=200ms, the
//     leader election rows (BenchmarkLockElect, [ElectTargets] and the
//     peers' ElectTargets): 4 candidates, each on clients of its own,
//     campaign for one name; b.N times the leader resigns ([Resign]) or
//     crashes, its clients closed without resigning ([Crash], terms of
//     [ElectCrashTTL]); it reports elect-p50-ns, elect-p99-ns and
//     elect-max-ns, from the resignation or the crash to the next
//     leader's Campaign returning. scriptlock runs its Election; each peer
//     runs an election the way its users write one ([HandWritten]: wait
//     in the library's Lock at its default retry, resign with Unlock).
//     Needs [Electorate].
//
// Every leaf also reports the server's cost per operation, read from INFO
// before and after it: server-cpu-us/op (the server process's CPU time),
// script-us/op (time in script calls, INFO commandstats) and scripts/op
// (script calls; for op=contended, per grant); and the client's,
// client-cpu-us/op (the benchmark process's CPU time over the timed part,
// every goroutine's, where the platform tells it).
//
// [ScriptCost] (BenchmarkScriptCost) splits the server's side of an
// uncontended lock-unlock by command, per driver: lock-us/call and
// unlock-us/call (scriptlock's acquire and release scripts, the raw
// reference's SET NX PX and compare-and-delete), cycle-us/op, and the
// redis.call()s of each. [Paired] (BenchmarkPaired, in bench/peers) runs
// the uncontended lock-unlock of scriptlock, raw and the driver's peer
// (none on redigo and valkeygo) interleaved in one
// process and reports their throughput ratios (xraw, xredislock,
// xrueidislock) as medians over rounds, steady where the separate rows'
// ns/op are not on a loaded machine.
//
// [BenchmarkOverNetwork] runs rows with their clients behind a
// delay proxy that adds a one-way delay ([OneWayDelay], 250 µs) in each
// direction, so the figures resemble two hosts of one zone rather than
// loopback; each leaf reports net-rtt-us, the round trip it measured
// through the proxy. Its rows ([NetworkTargets]) are lock-unlock with one
// client: the proxy spins while bytes are in flight (a sleep overshoots by
// a millisecond here), which serves one client at a time faithfully.
//
// [BenchmarkCluster] runs rows ([ClusterTargets]: scriptlock on each
// driver, lock-unlock with 1 and 64 clients) against a Redis Cluster; the
// 64-client row's lock names spread over the masters, and the server's
// cost is summed over them.
//
// Two safety modes run beside their baseline in the same benchmark, told
// apart by a level after the driver ([Target].Mode), so that benchstat
// gives their ratio from one run:
//
//	BenchmarkLockAck/lib=scriptlock/driver=goredis/ack=1/op=lock-unlock/clients=64
//	BenchmarkLockQuorum/lib=scriptlock/driver=rueidis/lock=quorum/op=lock-unlock/clients=1
//
// The two, each lock-unlock with 1 and with 64 clients per driver:
//
//   - [BenchmarkAck] ([AckTargets]) on a Cluster with a replica per
//     master: ack=0 (default Options) and ack=1 (Options.Ack with
//     [AckReplicas] replica: WAIT after every writing script call, on its
//     connection). Its leaves also report waits/op and wait-us/op (WAIT
//     and WAITAOF calls and the masters' time in them, INFO commandstats;
//     a waiting WAIT is blocked, not running, so the time is small).
//   - [BenchmarkQuorum] ([QuorumTargets]) over [QuorumDeployments]
//     standalone servers: lock=mutex (a plain Mutex on the first) and
//     lock=quorum (a *locker.Quorum, one Client per server, through
//     [ScriptlockQuorum]); the server's cost is summed over all of them.
//
// Every leaf calls b.ReportAllocs. All locks use the same lease [TTL]
// (op=refresh excepted). Scenarios check exclusion as they go (two holders
// of one key at once, or a reader beside a writer, fail the run); timings
// are never asserted.
//
// # Budgets
//
// Every run of a leaf has a budget ([DefaultRowBudget], BENCH_ROW_BUDGET),
// and every acquisition a scenario makes carries a context that ends with
// it. A run still going at its budget fails as "did not finish", with the
// places its goroutines were waiting in (from a goroutine profile taken at
// that moment), and the binary goes on with the next leaf; a library that
// ignores its context is abandoned after a grace period. [Paired] and
// [ScriptCost] run their calls under the same budget. A [Rewaiter] Locker
// (bench/peers' rueidislock rows) bounds each of its library's waits and
// reports how often it had to wait again (rewaits).
package bench
