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

// ScriptCost measures the server's side of one uncontended grant and one
// release, script by script, against the standalone server at addr (it
// must run nothing else meanwhile: INFO commandstats is server-wide):
//
//   - op=acquire: Mutex.Lock (default options) of a name nobody holds,
//     a fresh name per call: acquire.lua's fast path;
//   - op=release: Lease.Unlock of such a lease: release.lua's fast path;
//   - op=raw-set and op=raw-release: the raw reference's SET NX PX and
//     its compare-and-delete script (see raw.go), the floor.
//
// Each reports, from INFO commandstats read before and after the timed
// calls: cmd-us/call, the server's time in the top-level command (EVALSHA,
// or SET) per call, which includes the commands a script calls;
// redis-calls/op, the commands a script called per call (redis.call()s);
// and inner-us/op, their time per call (part of cmd-us/call). Client
// figures (ns/op, allocs) are those of the go-redis driver.
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
	lock := func(b *testing.B) *locker.Lease {
		m, err := c.NewMutex(name(), TTL, nil)
		if err != nil {
			b.Fatalf("NewMutex: %v", err)
		}
		l, err := m.Lock(ctx)
		if err != nil {
			b.Fatalf("Lock: %v", err)
		}
		return l
	}
	// Load the scripts first: a NOSCRIPT round is not part of the cost.
	if err := lock(b).Unlock(ctx); err != nil {
		b.Fatalf("Unlock: %v", err)
	}
	raw, err := RawGoRedis(ctx, rc)
	if err != nil {
		b.Fatalf("%v", err)
	}

	b.Run("op=acquire", func(b *testing.B) {
		leases := make([]*locker.Lease, 0, b.N)
		measure(b, stats, "evalsha", func() {
			for range b.N {
				leases = append(leases, lock(b))
			}
		})
		for _, l := range leases {
			_ = l.Unlock(ctx)
		}
	})
	b.Run("op=release", func(b *testing.B) {
		leases := make([]*locker.Lease, b.N)
		for i := range leases {
			leases[i] = lock(b)
		}
		measure(b, stats, "evalsha", func() {
			for _, l := range leases {
				if err := l.Unlock(ctx); err != nil {
					b.Fatalf("Unlock: %v", err)
				}
			}
		})
	})
	b.Run("op=raw-set", func(b *testing.B) {
		us := make([]Unlocker, 0, b.N)
		measure(b, stats, "set", func() {
			for range b.N {
				u, err := raw.Lock(ctx, name())
				if err != nil {
					b.Fatalf("raw Lock: %v", err)
				}
				us = append(us, u)
			}
		})
		for _, u := range us {
			_ = u.Unlock(ctx)
		}
	})
	b.Run("op=raw-release", func(b *testing.B) {
		us := make([]Unlocker, b.N)
		for i := range us {
			u, err := raw.Lock(ctx, name())
			if err != nil {
				b.Fatalf("raw Lock: %v", err)
			}
			us[i] = u
		}
		measure(b, stats, "evalsha", func() {
			for _, u := range us {
				if err := u.Unlock(ctx); err != nil {
					b.Fatalf("raw Unlock: %v", err)
				}
			}
		})
	})
}

// measure times run (b.N calls of top) and reports the server's figures
// for them (see ScriptCost).
func measure(b *testing.B, stats *goredis.Client, top string, run func()) {
	b.ReportAllocs()
	before := commandStats(b, stats)
	b.ResetTimer()
	run()
	b.StopTimer()
	after := commandStats(b, stats)
	n := float64(b.N)
	var calls, usec float64
	for cmd, a := range after {
		d := a
		if p, ok := before[cmd]; ok {
			d = [2]float64{a[0] - p[0], a[1] - p[1]}
		}
		switch {
		case cmd == top:
			b.ReportMetric(d[1]/d[0], "cmd-us/call")
		case cmd == "info" || cmd == "script|load" || cmd == "set" || cmd == "evalsha":
			// the readings, script loads, and the other top-level command
		default:
			calls += d[0]
			usec += d[1]
		}
	}
	b.ReportMetric(calls/n, "redis-calls/op")
	b.ReportMetric(usec/n, "inner-us/op")
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
