package bench

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/scriptlock/scriptlock/locker"
)

// ScriptCost measures the server's side of an uncontended Lock and Unlock,
// command by command, against the standalone server at addr (which must
// run nothing else meanwhile: INFO commandstats is server-wide). Four
// leaves per driver (in the order of Drivers), each b.N cycles on fresh
// names, in chunks of costChunk locks then their unlocks, so the keyspace
// stays as small as in a lock-unlock loop (a growing one makes every write
// pay for rehashing):
//
//   - lib=scriptlock/driver=<d>: Mutex.Lock (default options, acquire.lua's
//     fast path) and Lease.Unlock (release.lua's) on driver d;
//   - lib=raw/driver=<d>: the raw reference's SET NX PX and
//     compare-and-delete script (see raw.go) on driver d's client, the
//     floor of any lock;
//   - lib=scriptlock-semaphore/driver=<d>: Semaphore.Acquire of one of 4
//     permits (sem_acquire.lua's fast path) and Lease.Unlock
//     (sem_release.lua's), measured beside the Mutex's leaves, so the two
//     pairs' script times compare within seconds of each other;
//   - lib=empty-scripts/driver=<d>: two scripts that only return 1, called
//     with the keys and arguments of the Mutex's uncontended acquire and
//     release (see floor): what any lock made of two scripts pays before
//     its first redis.call().
//
// Each reports, from INFO commandstats read around every chunk's locks and
// around its unlocks: lock-us/call and unlock-us/call, the server's time
// in the top-level command (EVALSHA, or SET) per call, including the
// commands a script calls; cycle-us/op, their sum; and lock-calls/op and
// unlock-calls/op, the commands a script called per call (redis.call()s;
// the clients' own PING, HELLO, CLIENT and AUTH, which no script calls,
// are left out). The server's figures are the same scripts' whatever the
// driver; the client's (ns/op, allocs) are the driver's, INFO reads (on a
// go-redis connection of their own) included.
func ScriptCost(b *testing.B, addr string) {
	// Every call runs under the row budget, one per driver (see
	// DefaultRowBudget); explain says why a call failed once it passed.
	budget, err := rowBudget()
	if err != nil {
		b.Fatal(err)
	}
	ctx, explain, cancel := budgetContext(context.Background(), budget*time.Duration(len(Drivers)-1))
	b.Cleanup(cancel)
	stats := goredis.NewClient(&goredis.Options{Addr: addr, PoolSize: 1})
	b.Cleanup(func() { _ = stats.Close() })
	prefix := "bench:cost:" + strconv.FormatInt(time.Now().UnixNano(), 36) + ":"
	seq := 0
	name := func() string {
		seq++
		return prefix + strconv.Itoa(seq)
	}
	for _, d := range Drivers {
		c := newClient(b, standaloneScripter(b, d, addr), nil)
		sl := func(b *testing.B) (Unlocker, error) {
			m, err := c.NewMutex(name(), TTL, nil)
			if err != nil {
				return nil, err
			}
			return m.Lock(ctx)
		}
		sem := func(b *testing.B) (Unlocker, error) {
			s, err := c.NewSemaphore(name(), 4, TTL, nil)
			if err != nil {
				return nil, err
			}
			return s.Acquire(ctx, 1)
		}
		floor := newFloor(b, standaloneScripter(b, d, addr))
		raw := newRaw(b, d, addr)
		// Load the scripts and open the clients' connections first (a
		// pipelining client dials its connections as keys hash to them): a
		// NOSCRIPT round or a handshake is not part of the cost.
		for range costWarmUp {
			u, err := sl(b)
			if err == nil {
				err = u.Unlock(ctx)
			}
			if err != nil {
				b.Fatalf("driver=%s: scriptlock Lock and Unlock: %v", d, explain(err))
			}
			if err := lockUnlockOnce(ctx, raw, name()); err != nil {
				b.Fatalf("driver=%s: raw Lock and Unlock: %v", d, explain(err))
			}
			u, err = sem(b)
			if err == nil {
				err = u.Unlock(ctx)
			}
			if err != nil {
				b.Fatalf("driver=%s: scriptlock Semaphore Acquire and Unlock: %v", d, explain(err))
			}
			if u, err = floor.lock(ctx, name()); err == nil {
				err = u.Unlock(ctx)
			}
			if err != nil {
				b.Fatalf("driver=%s: the empty scripts: %v", d, explain(err))
			}
		}
		b.Run("lib=scriptlock/driver="+d, func(b *testing.B) { costCycles(ctx, b, stats, "evalsha", sl, explain) })
		b.Run("lib=raw/driver="+d, func(b *testing.B) {
			costCycles(ctx, b, stats, "set", func(*testing.B) (Unlocker, error) { return raw.Lock(ctx, name()) }, explain)
		})
		b.Run("lib=scriptlock-semaphore/driver="+d, func(b *testing.B) { costCycles(ctx, b, stats, "evalsha", sem, explain) })
		b.Run("lib=empty-scripts/driver="+d, func(b *testing.B) {
			costCycles(ctx, b, stats, "evalsha", func(*testing.B) (Unlocker, error) { return floor.lock(ctx, name()) }, explain)
		})
	}
}

// floor runs ScriptCost's empty scripts: a script that only returns 1,
// called as acquire.lua is on an uncontended Lock (4 keys, 7 arguments of
// the same sizes) and as release.lua is on its Unlock (1 key, 4
// arguments).
type floor struct {
	s   locker.Scripter
	sha string
}

// newFloor loads the empty script through s.
func newFloor(b *testing.B, s locker.Scripter) *floor {
	sha, err := s.ScriptLoad(context.Background(), "return 1")
	if err != nil {
		b.Fatalf("SCRIPT LOAD of the empty script: %v", err)
	}
	return &floor{s: s, sha: sha}
}

// lock runs the empty script with acquire.lua's keys and arguments for
// name and returns the Unlocker that runs it with release.lua's.
func (f *floor) lock(ctx context.Context, name string) (Unlocker, error) {
	k, id := "{"+name+"}", rawToken()
	wake := k + ":wake"
	_, err := f.s.EvalSha(ctx, f.sha, []string{k, k + ":q", k + ":qx", k + ":x"}, []string{"", id, "10000", "", "", wake, ""})
	if err != nil {
		return nil, err
	}
	return floorLease(func(ctx context.Context) error {
		_, err := f.s.EvalSha(ctx, f.sha, []string{k}, []string{id, id, "", wake})
		return err
	}), nil
}

// floorLease is an empty script's Unlocker.
type floorLease func(ctx context.Context) error

// Unlock runs the empty script with release.lua's keys and arguments.
func (u floorLease) Unlock(ctx context.Context) error { return u(ctx) }

// costChunk is how many locks ScriptCost takes before releasing them.
const costChunk = 200

// costWarmUp is how many lock-unlock cycles of each library ScriptCost runs
// on a driver before measuring it.
const costWarmUp = 20

// costCycles runs b.N cycles of lock (whose top-level command is top) and
// Unlock, in chunks, and reports the server's figures (see ScriptCost).
// ctx bounds the calls; explain says why one failed.
func costCycles(ctx context.Context, b *testing.B, stats *goredis.Client, top string, lock func(*testing.B) (Unlocker, error), explain func(error) error) {
	b.ReportAllocs()
	var lockUS, lockCalls, lockInner, unlockUS, unlockCalls, unlockInner float64
	us := make([]Unlocker, 0, costChunk)
	for done := 0; done < b.N; {
		n := min(costChunk, b.N-done)
		us = us[:0]
		before := commandStats(b, stats)
		for range n {
			u, err := lock(b)
			if err != nil {
				b.Fatalf("lock: %v", explain(err))
			}
			us = append(us, u)
		}
		mid := commandStats(b, stats)
		for _, u := range us {
			if err := u.Unlock(ctx); err != nil {
				b.Fatalf("unlock: %v", explain(err))
			}
		}
		after := commandStats(b, stats)
		t, calls, _ := statsDelta(before, mid, top)
		lockUS += t
		lockCalls += calls
		lockInner += float64(n)
		t, calls, _ = statsDelta(mid, after, "evalsha")
		unlockUS += t
		unlockCalls += calls
		unlockInner += float64(n)
		done += n
	}
	b.ReportMetric(lockUS/lockInner, "lock-us/call")
	b.ReportMetric(unlockUS/unlockInner, "unlock-us/call")
	b.ReportMetric((lockUS+unlockUS)/float64(b.N), "cycle-us/op")
	b.ReportMetric(lockCalls/lockInner, "lock-calls/op")
	b.ReportMetric(unlockCalls/unlockInner, "unlock-calls/op")
}

// statsDelta returns, between two readings, the time in command top and
// the calls of every other command (those a script called) but INFO and
// the clients' own PING, HELLO, AUTH and CLIENT.
func statsDelta(before, after map[string][2]float64, top string) (usec, inner float64, topCalls float64) {
	for cmd, a := range after {
		p := before[cmd]
		switch cmd {
		case top:
			usec, topCalls = a[1]-p[1], a[0]-p[0]
		case "info", "ping", "hello", "auth":
		default:
			if strings.HasPrefix(cmd, "client|") {
				continue
			}
			inner += a[0] - p[0]
		}
	}
	return usec, inner, topCalls
}

// commandStats returns INFO commandstats as command -> {calls, usec}.
func commandStats(b *testing.B, c *goredis.Client) map[string][2]float64 {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	txt, err := c.Info(ctx, "commandstats").Result()
	if err != nil {
		b.Fatalf("INFO commandstats: %v", err)
	}
	out := map[string][2]float64{}
	for _, line := range strings.Split(txt, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		cmd, isCmd := strings.CutPrefix(name, "cmdstat_")
		if !ok || !isCmd {
			continue
		}
		var calls, usec float64
		addCalls(rest, &calls, &usec)
		out[cmd] = [2]float64{calls, usec}
	}
	return out
}
