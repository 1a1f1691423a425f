package bench_test

import (
	"testing"

	"github.com/scriptlock/scriptlock/bench"
	"github.com/scriptlock/scriptlock/internal/redisserver"
)

// BenchmarkLock runs every main-module row (scriptlock and raw on each
// driver, and sync.Mutex) against one redis-server it starts, or the one
// named by SCRIPTLOCK_REDIS_ADDR. scripts/bench.sh runs it interleaved
// with the peers' binary.
func BenchmarkLock(b *testing.B) {
	srv := redisserver.StartStandalone(b)
	bench.Benchmark(b, srv.Addr, bench.Targets())
}

// BenchmarkLockStarve runs the rows that chose the default Mutex's
// starvation threshold (bench.StarveTargets: contended, 8 clients, 1 ms
// and 100 µs holds, per threshold, barging alone and FIFO) against one
// redis-server it starts, or the one named by SCRIPTLOCK_REDIS_ADDR.
func BenchmarkLockStarve(b *testing.B) {
	srv := redisserver.StartStandalone(b)
	bench.Benchmark(b, srv.Addr, bench.StarveTargets())
}

// BenchmarkLockRTT runs the uncontended rows of scriptlock and raw with
// their clients behind a proxy that delays each direction by
// bench.OneWayDelay: a network round trip like two hosts of one zone,
// rather than loopback. Each row reports the round trip it measured.
func BenchmarkLockRTT(b *testing.B) {
	srv := redisserver.StartStandalone(b)
	bench.BenchmarkOverNetwork(b, srv.Addr, bench.OneWayDelay, bench.NetworkTargets())
}

// BenchmarkLockCluster runs scriptlock's uncontended rows on each driver
// against a 3-master Redis Cluster it starts (or the one named by
// SCRIPTLOCK_CLUSTER_ADDRS); the 64-client row spreads its lock names over
// the masters. The server's cost is summed over the masters.
func BenchmarkLockCluster(b *testing.B) {
	cl := redisserver.StartCluster(b)
	bench.BenchmarkCluster(b, cl.Addrs, masterAddrs(cl), bench.ClusterTargets(cl.Addrs))
}

// BenchmarkLockAck runs scriptlock's uncontended rows on each driver with
// and without Options.Ack (bench.AckTargets: WAIT for one replica after
// every writing script call) against a 3-master Redis Cluster with a
// replica per master that it starts (or the one named by
// SCRIPTLOCK_CLUSTER_ADDRS, which needs a replica per master). The
// server's cost, WAIT included, is summed over the masters.
func BenchmarkLockAck(b *testing.B) {
	cl := redisserver.StartClusterWithReplicas(b)
	bench.BenchmarkAck(b, cl.Addrs, masterAddrs(cl), bench.AckTargets(cl.Addrs))
}

// BenchmarkLockQuorum runs scriptlock's uncontended rows on each driver as
// a Quorum over three standalone servers and, beside them, as a plain
// Mutex on the first (bench.QuorumTargets). It always starts its three
// servers, whatever SCRIPTLOCK_REDIS_ADDR names: a quorum needs
// independent deployments, and three Clients on one server would count
// as three. The server's cost is summed over the three.
func BenchmarkLockQuorum(b *testing.B) {
	addrs := startQuorumServers(b)
	bench.BenchmarkQuorum(b, addrs, bench.QuorumTargets(addrs))
}

// masterAddrs returns the addresses of cl's masters.
func masterAddrs(cl *redisserver.Cluster) []string {
	var masters []string
	for _, m := range cl.Masters() {
		masters = append(masters, m.Addr)
	}
	return masters
}

// startQuorumServers starts bench.QuorumDeployments standalone servers of
// its own, even when SCRIPTLOCK_REDIS_ADDR names one (it is cleared for
// tb's duration), and returns their addresses.
func startQuorumServers(tb testing.TB) []string {
	tb.Setenv(redisserver.EnvRedisAddr, "")
	addrs := make([]string, bench.QuorumDeployments)
	for i := range addrs {
		addrs[i] = redisserver.StartStandalone(tb).Addr
	}
	return addrs
}

// BenchmarkLockHold runs the long auto-refresh row (bench.HoldTargets):
// 50,000 leases of 2 s kept alive by scriptlock, b.N rounds of 667 ms; one
// lost lease fails it.
func BenchmarkLockHold(b *testing.B) {
	srv := redisserver.StartStandalone(b)
	bench.Benchmark(b, srv.Addr, bench.HoldTargets())
}

// TestSmoke runs every row of the benchmarks on a standalone server
// (BenchmarkLock, BenchmarkLockStarve, BenchmarkLockHold shrunk to 50
// leases and 4 rounds, BenchmarkLockElect) once with a tiny iteration
// count, so `go test ./...` proves each still runs to the end (no error,
// no hang, exclusion held); it asserts no timing.
func TestSmoke(t *testing.T) {
	for _, set := range []struct {
		name    string
		targets []bench.Target
	}{
		{"Lock", bench.Targets()},
		{"Starve", bench.StarveTargets()},
		{"Hold", bench.HoldTargets()},
		{"Elect", bench.ElectTargets()},
	} {
		t.Run(set.name, func(t *testing.T) {
			srv := redisserver.StartStandalone(t)
			bench.Smoke(t, srv.Addr, set.targets)
		})
	}
}

// TestNetworkSmoke runs the rows of BenchmarkLockRTT once through the
// delay proxy, and checks the proxy adds about the round trip it should.
func TestNetworkSmoke(t *testing.T) {
	srv := redisserver.StartStandalone(t)
	p := redisserver.StartDelayProxy(t, srv.Addr, bench.OneWayDelay)
	rtt, err := bench.MeasureRTT(t.Context(), p.Addr, 20)
	if err != nil {
		t.Fatalf("MeasureRTT: %v", err)
	}
	if rtt < 2*bench.OneWayDelay {
		t.Errorf("round trip through the proxy %v, want at least %v", rtt, 2*bench.OneWayDelay)
	}
	t.Logf("round trip through the proxy: %v", rtt)
	bench.Smoke(t, p.Addr, bench.NetworkTargets())
}

// TestClusterSmoke runs the rows of BenchmarkLockCluster once.
func TestClusterSmoke(t *testing.T) {
	cl := redisserver.StartCluster(t)
	bench.Smoke(t, cl.Addrs[0], bench.ClusterTargets(cl.Addrs))
}

// TestAckSmoke runs the rows of BenchmarkLockAck once.
func TestAckSmoke(t *testing.T) {
	cl := redisserver.StartClusterWithReplicas(t)
	bench.Smoke(t, cl.Addrs[0], bench.AckTargets(cl.Addrs))
}

// TestQuorumSmoke runs the rows of BenchmarkLockQuorum once.
func TestQuorumSmoke(t *testing.T) {
	addrs := startQuorumServers(t)
	bench.Smoke(t, addrs[0], bench.QuorumTargets(addrs))
}

// BenchmarkLockElect runs the election rows (bench.ElectTargets:
// scriptlock's Election on each driver, op=resign and op=crash) against
// one redis-server it starts, or the one named by SCRIPTLOCK_REDIS_ADDR.
func BenchmarkLockElect(b *testing.B) {
	srv := redisserver.StartStandalone(b)
	bench.Benchmark(b, srv.Addr, bench.ElectTargets())
}
