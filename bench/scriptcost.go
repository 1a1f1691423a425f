package bench

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	goredisdriver "github.com/scriptlock/scriptlock/drivers/goredis"
	"github.com/scriptlock/scriptlock/locker"
)

// ScriptCost measures the server's side of an uncontended Lock and Unlock,
// command by command, against the standalone server at addr (which must
// run nothing else meanwhile: INFO commandstats is server-wide). Two
// leaves, each b.N cycles on fresh names, in chunks of costChunk locks then
// their unlocks, so the keyspace stays as small as in a lock-unlock loop
// (a growing one makes every write pay for rehashing):
//
//   - lib=scriptlock: Mutex.Lock (default options, acquire.lua's fast
//     path) and Lease.Unlock (release.lua's);
//   - lib=raw: the raw reference's SET NX PX and compare-and-delete
//     script (see raw.go), the floor.
//
// Each reports, from INFO commandstats read around every chunk's locks and
// around its unlocks: lock-us/call and unlock-us/call, the server's time
// in the top-level command (EVALSHA, or SET) per call, including the
// commands a script calls; cycle-us/op, their sum; and lock-calls/op and
// unlock-calls/op, the commands a script called per call (redis.call()s).
// Client figures (ns/op, allocs) are those of the go-redis driver, INFO
// reads included.
func ScriptCost(b *testing.B, addr string) {
	ctx := context.Background()
	rc := NewGoRedis(b, addr)
	c, err := locker.New(goredisdriver.New(rc), nil)
	if err != nil {
		b.Fatalf("locker.New: %v", err)
	}
	b.Cleanup(func() { _ = c.Close() })
	stats := goredis.NewClient(&goredis.Options{Addr: addr, PoolSize: 1})
	b.Cleanup(func() { _ = stats.Close() })
	prefix := "bench:cost:" + strconv.FormatInt(time.Now().UnixNano(), 36) + ":"
	seq := 0
	name := func() string {
		seq++
		return prefix + strconv.Itoa(seq)
	}
	sl := func(b *testing.B) (Unlocker, error) {
		m, err := c.NewMutex(name(), TTL, nil)
		if err != nil {
			return nil, err
		}
		return m.Lock(ctx)
	}
	// Load the scripts first: a NOSCRIPT round is not part of the cost.
	if u, err := sl(b); err != nil || u.Unlock(ctx) != nil {
		b.Fatalf("Lock and Unlock: %v", err)
	}
	raw, err := RawGoRedis(ctx, rc)
	if err != nil {
		b.Fatalf("%v", err)
	}
	b.Run("lib=scriptlock", func(b *testing.B) { costCycles(b, stats, "evalsha", sl) })
	b.Run("lib=raw", func(b *testing.B) {
		costCycles(b, stats, "set", func(*testing.B) (Unlocker, error) { return raw.Lock(ctx, name()) })
	})
}

// costChunk is how many locks ScriptCost takes before releasing them.
const costChunk = 200

// costCycles runs b.N cycles of lock (whose top-level command is top) and
// Unlock, in chunks, and reports the server's figures (see ScriptCost).
func costCycles(b *testing.B, stats *goredis.Client, top string, lock func(*testing.B) (Unlocker, error)) {
	ctx := context.Background()
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
				b.Fatalf("lock: %v", err)
			}
			us = append(us, u)
		}
		mid := commandStats(b, stats)
		for _, u := range us {
			if err := u.Unlock(ctx); err != nil {
				b.Fatalf("unlock: %v", err)
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
// the calls of every other command but INFO (those a script called).
func statsDelta(before, after map[string][2]float64, top string) (usec, inner float64, topCalls float64) {
	for cmd, a := range after {
		p := before[cmd]
		switch cmd {
		case top:
			usec, topCalls = a[1]-p[1], a[0]-p[0]
		case "info":
		default:
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
