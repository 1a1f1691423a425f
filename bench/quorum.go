package bench

import (
	"context"
	"sync"
	"testing"

	"github.com/scriptlock/scriptlock/locker"
)

// QuorumDeployments is how many standalone servers the quorum rows span
// (BenchmarkLockQuorum starts them): a grant needs two of the three.
const QuorumDeployments = 3

// ScriptlockQuorum returns a Locker over a *locker.Quorum per key, across
// the deployments of clients (one Client each), made on first use (TTL,
// default options) and reused as Scriptlock reuses its mutexes. Lock is
// Quorum.Lock and TryLock Quorum.TryLock; the returned Unlocker is the
// *locker.QuorumLease.
func ScriptlockQuorum(clients []*locker.Client) Locker {
	return &quorumLocker{clients: clients}
}

type quorumLocker struct {
	clients []*locker.Client
	quorums sync.Map // key -> *locker.Quorum
}

func (s *quorumLocker) quorum(key string) (*locker.Quorum, error) {
	return cached(&s.quorums, key, func() (*locker.Quorum, error) {
		return locker.NewQuorum(s.clients, key, TTL, nil)
	})
}

func (s *quorumLocker) Lock(ctx context.Context, key string) (Unlocker, error) {
	q, err := s.quorum(key)
	if err != nil {
		return nil, err
	}
	return unlocker(q.Lock(ctx))
}

func (s *quorumLocker) TryLock(ctx context.Context, key string) (Unlocker, bool, error) {
	q, err := s.quorum(key)
	if err != nil {
		return nil, false, err
	}
	return tried(q.TryLock(ctx))
}

// QuorumTargets returns the rows over the standalone servers at addrs, one
// deployment each: scriptlock on each driver, lock-unlock with 1 and with
// 64 clients, twice per driver: first a plain Mutex on the server the
// benchmark names (Mode "lock=mutex"; BenchmarkQuorum names addrs[0]),
// then a Quorum over all of addrs, one Client per server (Mode
// "lock=quorum"). The two run side by side, so their ratio comes from one
// run.
func QuorumTargets(addrs []string) []Target {
	var ts []Target
	for _, d := range Drivers {
		mutex := func(tb testing.TB, addr string) Locker {
			return Scriptlock(newClient(tb, standaloneScripter(tb, d, addr), nil))
		}
		quorum := func(tb testing.TB) Locker {
			clients := make([]*locker.Client, len(addrs))
			for i, a := range addrs {
				clients[i] = newClient(tb, standaloneScripter(tb, d, a), nil)
			}
			return ScriptlockQuorum(clients)
		}
		ts = append(ts,
			Target{Lib: "scriptlock", Driver: d, Mode: "lock=mutex", Scenarios: Uncontended(),
				New: func(tb testing.TB, addr string) (Locker, Locker) { return mutex(tb, addr), mutex(tb, addr) }},
			Target{Lib: "scriptlock", Driver: d, Mode: "lock=quorum", Scenarios: Uncontended(),
				New: func(tb testing.TB, _ string) (Locker, Locker) { return quorum(tb), quorum(tb) }},
		)
	}
	return ts
}

// BenchmarkQuorum runs targets as Benchmark does, with addrs[0] as the
// server a single-server row runs on, and the server's cost summed over
// all of addrs (a quorum row's calls go to every server).
func BenchmarkQuorum(b *testing.B, addrs []string, targets []Target) {
	benchmark(b, addrs[0], newServerStats(b, addrs), targets, nil)
}
