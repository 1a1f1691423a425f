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
//
// With waits set it also reports the WAIT and WAITAOF calls (the
// acknowledgements of Options.Ack, which the driver sends after a script
// on its connection) and the time in them; they are read either way.
type serverStats struct {
	cs    []*goredis.Client // one per server whose cost is summed
	waits bool              // report waits/op and wait-us/op
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
	waitUsec   float64 // time in WAIT and WAITAOF
	waits      float64 // WAIT and WAITAOF calls
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
		sum.waitUsec += v.waitUsec
		sum.waits += v.waits
	}
	return sum, true
}

// parseInfo reads INFO cpu ("used_cpu_sys:1.234567") and sums INFO
// commandstats lines of script commands, such as
// "cmdstat_evalsha:calls=10,usec=153,usec_per_call=15.30,...", and
// apart from them those of WAIT and WAITAOF.
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
			addCalls(rest, &c.scripts, &c.scriptUsec)
		case "wait", "waitaof":
			addCalls(rest, &c.waits, &c.waitUsec)
		}
	}
	return c
}

// addCalls adds the calls and usec of a commandstats line's figures
// ("calls=10,usec=153,...") to calls and usec.
func addCalls(figures string, calls, usec *float64) {
	for _, kv := range strings.Split(figures, ",") {
		k, v, _ := strings.Cut(kv, "=")
		f, _ := strconv.ParseFloat(v, 64)
		switch k {
		case "calls":
			*calls += f
		case "usec":
			*usec += f
		}
	}
}

// report reports the server's cost per operation between two readings:
// server-cpu-us/op, script-us/op and scripts/op, and with s.waits also
// waits/op and wait-us/op.
func (s *serverStats) report(b *testing.B, before, after cost) {
	if b.N == 0 {
		return
	}
	n := float64(b.N)
	b.ReportMetric((after.cpuUsec-before.cpuUsec)/n, "server-cpu-us/op")
	b.ReportMetric((after.scriptUsec-before.scriptUsec)/n, "script-us/op")
	b.ReportMetric((after.scripts-before.scripts)/n, "scripts/op")
	if s.waits {
		b.ReportMetric((after.waitUsec-before.waitUsec)/n, "wait-us/op")
		b.ReportMetric((after.waits-before.waits)/n, "waits/op")
	}
}
