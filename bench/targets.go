package bench

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	goredisdriver "github.com/scriptlock/scriptlock/drivers/goredis"
	redigodriver "github.com/scriptlock/scriptlock/drivers/redigo"
	rueidisdriver "github.com/scriptlock/scriptlock/drivers/rueidis"
	valkeygodriver "github.com/scriptlock/scriptlock/drivers/valkeygo"
	"github.com/scriptlock/scriptlock/locker"
)

// Drivers lists the in-tree drivers' names in the order their rows run.
var Drivers = []string{"goredis", "redigo", "rueidis", "valkeygo"}

// Scenarios of the read-write and auto-refresh rows.
const (
	// RWClients and RWReadPct make op=rw/clients=16/reads=90pct.
	RWClients = 16
	RWReadPct = 90
	// SemClients and SemPermits make op=semaphore/clients=16/permits=4
	// (holding 1 ms) and its uncontended row, clients=1.
	SemClients = 16
	SemPermits = 4
	// MultiNames makes op=multi/names=3: a MultiLock over three keys.
	MultiNames = 3
	// RefreshLeases makes op=refresh/leases=10000.
	RefreshLeases = 10000
	// ManyWaiters and LongQueue are the growth rows, on go-redis only:
	// op=contended/clients=256 in default mode (one wake-up per release
	// whatever the number of waiters) and op=contended/clients=500 in FIFO
	// mode (a hand-over costs the same whatever the queue's length).
	ManyWaiters = 256
	LongQueue   = 500
	// FewReaders and ManyReaders make the growth rows of the read-write
	// lock and the semaphore, on go-redis only: op=rw-readers/readers=10
	// and =1000, op=sem-holders/holders=10 and =1000 (a call's cost
	// whatever the number of readers or holders).
	FewReaders  = 10
	ManyReaders = 1000
)

// HoldLeases and HoldTTL make the long auto-refresh row of
// BenchmarkLockHold: op=refresh/leases=50000/ttl=2s.
const (
	HoldLeases = 50000
	HoldTTL    = 2 * time.Second
)

// HoldTargets returns the long auto-refresh row: scriptlock on go-redis
// keeping HoldLeases leases of HoldTTL alive (scripts/bench.sh runs it once,
// for 90 rounds: a minute).
func HoldTargets() []Target {
	return []Target{{Lib: "scriptlock", Driver: "goredis", Scenarios: []Scenario{RefreshScale(HoldLeases, HoldTTL)}, New: scriptlockNew("goredis")}}
}

// NetworkTargets returns the rows run over a simulated network round trip:
// scriptlock and the raw reference on each driver, lock-unlock with one
// client (the delay proxy spins while a chunk is in flight, so it serves
// one client at a time faithfully).
func NetworkTargets() []Target {
	var ts []Target
	for _, lib := range []string{"scriptlock", "raw"} {
		for _, d := range Drivers {
			newFn := scriptlockNew(d)
			if lib == "raw" {
				newFn = rawNew(d)
			}
			ts = append(ts, Target{Lib: lib, Driver: d, Scenarios: []Scenario{LockUnlock(1)}, New: newFn})
		}
	}
	return ts
}

// Targets returns the main module's rows, in order: scriptlock on each
// driver (every scenario: Standard, then RW, Refresh and the semaphore
// rows; on go-redis also
// contended with ManyWaiters and rw-readers with FewReaders and
// ManyReaders), scriptlock in FIFO mode on each driver
// (contended only; on go-redis also with LongQueue), the raw reference on each driver
// (lock-unlock and trylock-held), and the in-process reference, lib=syncmutex
// (contended on sync.Mutex, rw on sync.RWMutex, semaphore on a buffered
// channel).
func Targets() []Target {
	var ts []Target
	for _, d := range Drivers {
		sc := append(Standard(), RW(RWClients, RWReadPct), Refresh(RefreshLeases), Semaphore(1, SemPermits, 0), Semaphore(SemClients, SemPermits, time.Millisecond), Multi(MultiNames))
		if d == "goredis" {
			sc = append(sc, Contended(ManyWaiters, time.Millisecond), RWReaders(FewReaders), RWReaders(ManyReaders), SemHolders(FewReaders), SemHolders(ManyReaders))
		}
		ts = append(ts, Target{Lib: "scriptlock", Driver: d, Scenarios: sc, New: scriptlockNew(d)})
	}
	for _, d := range Drivers {
		sc := []Scenario{Contended(8, time.Millisecond), Contended(8, ShortHold)}
		if d == "goredis" {
			sc = append(sc, Contended(LongQueue, time.Millisecond))
		}
		ts = append(ts, Target{Lib: "scriptlock-fifo", Driver: d, Scenarios: sc, New: scriptlockNewWith(d, ScriptlockFIFO)})
	}
	for _, d := range Drivers {
		ts = append(ts, Target{Lib: "raw", Driver: d, Scenarios: append(Uncontended(), TryLockHeld()), New: rawNew(d)})
	}
	ts = append(ts, Target{
		Lib:       "syncmutex",
		Scenarios: []Scenario{Contended(8, time.Millisecond), Contended(8, ShortHold), RW(RWClients, RWReadPct), Semaphore(1, SemPermits, 0), Semaphore(SemClients, SemPermits, time.Millisecond)},
		New: func(testing.TB, string) (Locker, Locker) {
			l := SyncMutex()
			return l, l
		},
	})
	return ts
}

// StarveThresholds are the MutexOptions.StarvationThreshold values that
// StarveTargets compares (negative: never starve, pure barging).
var StarveThresholds = []time.Duration{-1, time.Millisecond, 2 * time.Millisecond, 5 * time.Millisecond, 10 * time.Millisecond, 50 * time.Millisecond}

// StarveTargets returns the rows that chose the default Mutex's starvation
// threshold: scriptlock on each driver with each of StarveThresholds
// (mode starve=<threshold>, starve=off for a negative one) and in FIFO
// mode (starve=fifo), contended with 8 clients holding 1 ms and
// ShortHold, and with 2 clients holding 1 ms (light contention, where
// barging should stay). Read them as ratios within one run.
func StarveTargets() []Target {
	sc := []Scenario{Contended(8, time.Millisecond), Contended(8, ShortHold), Contended(2, time.Millisecond)}
	var ts []Target
	for _, d := range Drivers {
		for _, th := range StarveThresholds {
			mode := "starve=" + th.String()
			if th < 0 {
				mode = "starve=off"
			}
			opts := &locker.MutexOptions{StarvationThreshold: th}
			ts = append(ts, Target{Lib: "scriptlock", Driver: d, Mode: mode, Scenarios: sc, New: scriptlockNewWith(d, func(c *locker.Client) Locker {
				return &scriptlockLocker{c: c, opts: opts}
			})})
		}
		ts = append(ts, Target{Lib: "scriptlock", Driver: d, Mode: "starve=fifo", Scenarios: sc, New: scriptlockNewWith(d, ScriptlockFIFO)})
	}
	return ts
}

// scriptlockNew builds scriptlock, with default Options, on driver d.
func scriptlockNew(d string) func(tb testing.TB, addr string) (Locker, Locker) {
	return scriptlockNewWith(d, Scriptlock)
}

// scriptlockNewWith builds scriptlock on driver d, wrapped by wrap.
func scriptlockNewWith(d string, wrap func(*locker.Client) Locker) func(tb testing.TB, addr string) (Locker, Locker) {
	one := func(tb testing.TB, addr string) Locker {
		n := new(atomic.Int64)
		l := wrap(newClient(tb, standaloneScripter(tb, d, addr), countHandOvers(n)))
		if s, ok := l.(*scriptlockLocker); ok {
			s.handed = n
		}
		return l
	}
	return func(tb testing.TB, addr string) (Locker, Locker) {
		return one(tb, addr), one(tb, addr)
	}
}

// standaloneScripter builds driver d's Scripter for the standalone server
// at addr, on a client from clients.go.
func standaloneScripter(tb testing.TB, d, addr string) locker.Scripter {
	switch d {
	case "goredis":
		return goredisdriver.New(NewGoRedis(tb, addr))
	case "redigo":
		return redigodriver.New(NewRedigoPool(tb, addr))
	case "rueidis":
		return rueidisdriver.New(NewRueidis(tb, addr))
	case "valkeygo":
		return valkeygodriver.New(NewValkeyGo(tb, addr))
	}
	tb.Fatalf("bench: unknown driver %q", d)
	return nil
}

// newClient returns a *locker.Client over s with opts, closed by
// tb.Cleanup; it fails tb when locker.New refuses.
func newClient(tb testing.TB, s locker.Scripter, opts *locker.Options) *locker.Client {
	c, err := locker.New(s, opts)
	if err != nil {
		tb.Fatalf("locker.New: %v", err)
	}
	tb.Cleanup(func() { _ = c.Close() })
	return c
}

// rawNew builds the raw reference on driver d.
func rawNew(d string) func(tb testing.TB, addr string) (Locker, Locker) {
	return func(tb testing.TB, addr string) (Locker, Locker) {
		return newRaw(tb, d, addr), newRaw(tb, d, addr)
	}
}

// newRaw builds one raw reference on driver d, on a client from
// clients.go for the server at addr.
func newRaw(tb testing.TB, d, addr string) Locker {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var (
		l   Locker
		err error
	)
	switch d {
	case "goredis":
		l, err = RawGoRedis(ctx, NewGoRedis(tb, addr))
	case "redigo":
		l, err = RawRedigo(ctx, NewRedigoPool(tb, addr))
	case "rueidis":
		l, err = RawRueidis(ctx, NewRueidis(tb, addr))
	case "valkeygo":
		l, err = RawValkeyGo(ctx, NewValkeyGo(tb, addr))
	default:
		tb.Fatalf("bench: unknown driver %q", d)
	}
	if err != nil {
		tb.Fatalf("%v", err)
	}
	return l
}
