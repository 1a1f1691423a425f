package bench

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// serverStats reads the server's cost of a benchmark leaf: its CPU time
// (INFO cpu: used_cpu_user plus used_cpu_sys, which covers reading,
// parsing, running and replying), and from INFO commandstats the script
// calls (EVAL, EVALSHA, FCALL and their _RO forms) and the microseconds
// spent in them (a script counts with the commands it calls; those are
// counted again under their own names, so commandstats cannot be summed
// over all commands).
type serverStats struct {
	cs []*goredis.Client // one per server whose cost is summed
}

// newServerStats opens a client per server for the reads, closed by
// tb.Cleanup.
func newServerStats(tb testing.TB, addrs []string) *serverStats {
	s := &serverStats{}
	for _, addr := range addrs {
		c := goredis.NewClient(&goredis.Options{Addr: addr, PoolSize: 1})
		tb.Cleanup(func() { _ = c.Close() })
		s.cs = append(s.cs, c)
	}
	return s
}

// cost is a reading since the server started (commandstats: or since
// CONFIG RESETSTAT).
type cost struct {
	cpuUsec    float64 // server process CPU time
	scriptUsec float64 // time in script calls
	scripts    float64 // script calls
}

// read returns the current reading, summed over the servers; ok is false
// when an INFO failed (the figures are then not reported).
func (s *serverStats) read() (cost, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var sum cost
	for _, c := range s.cs {
		txt, err := c.Info(ctx, "commandstats", "cpu").Result()
		if err != nil {
			return cost{}, false
		}
		v := parseInfo(txt)
		sum.cpuUsec += v.cpuUsec
		sum.scriptUsec += v.scriptUsec
		sum.scripts += v.scripts
	}
	return sum, true
}

// parseInfo reads INFO cpu ("used_cpu_sys:1.234567") and sums INFO
// commandstats lines of script commands, such as
// "cmdstat_evalsha:calls=10,usec=153,usec_per_call=15.30,...".
func parseInfo(txt string) cost {
	var c cost
	for _, line := range strings.Split(txt, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok {
			continue
		}
		if name == "used_cpu_sys" || name == "used_cpu_user" {
			sec, _ := strconv.ParseFloat(rest, 64)
			c.cpuUsec += sec * 1e6
			continue
		}
		switch cmd, _ := strings.CutPrefix(name, "cmdstat_"); cmd {
		case "eval", "evalsha", "eval_ro", "evalsha_ro", "fcall", "fcall_ro":
			for _, kv := range strings.Split(rest, ",") {
				k, v, _ := strings.Cut(kv, "=")
				f, _ := strconv.ParseFloat(v, 64)
				switch k {
				case "calls":
					c.scripts += f
				case "usec":
					c.scriptUsec += f
				}
			}
		}
	}
	return c
}

// reportServerCost reports the server's cost per operation between two
// readings: server-cpu-us/op, script-us/op and scripts/op.
func reportServerCost(b *testing.B, before, after cost) {
	if b.N == 0 {
		return
	}
	n := float64(b.N)
	b.ReportMetric((after.cpuUsec-before.cpuUsec)/n, "server-cpu-us/op")
	b.ReportMetric((after.scriptUsec-before.scriptUsec)/n, "script-us/op")
	b.ReportMetric((after.scripts-before.scripts)/n, "scripts/op")
}
