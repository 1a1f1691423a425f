package bench

import (
	"strconv"
	"testing"

	goredisdriver "github.com/scriptlock/scriptlock/drivers/goredis"
	redigodriver "github.com/scriptlock/scriptlock/drivers/redigo"
	rueidisdriver "github.com/scriptlock/scriptlock/drivers/rueidis"
	valkeygodriver "github.com/scriptlock/scriptlock/drivers/valkeygo"
	"github.com/scriptlock/scriptlock/locker"
)

// AckReplicas is the Ack.Replicas of the acknowledged rows: every writing
// script call waits for one replica (WAIT 1 <timeout>).
const AckReplicas = 1

// AckTargets returns the rows run on a Redis Cluster with a replica per
// master, whose seed addresses are addrs: scriptlock on each driver,
// lock-unlock with 1 and with 64 clients (64 lock names over the
// masters), twice per driver: first with default Options (Mode "ack=0"),
// then with Options.Ack = &locker.Ack{Replicas: AckReplicas} (Mode
// "ack=1": every writing script call is followed, on its connection, by
// WAIT through the driver's locker.Acknowledger). The two run side by
// side, so their ratio comes from one run. A driver whose Scripter does
// not implement locker.Acknowledger has no rows (locker.New would refuse
// the option), as a Target lists a scenario only when its Locker has the
// feature.
func AckTargets(addrs []string) []Target {
	var ts []Target
	for _, d := range Drivers {
		if !acknowledges(d) {
			continue
		}
		for _, replicas := range []int{0, AckReplicas} {
			var opts *locker.Options
			if replicas > 0 {
				opts = &locker.Options{Ack: &locker.Ack{Replicas: replicas}}
			}
			one := func(tb testing.TB) Locker {
				return Scriptlock(newClient(tb, clusterScripter(tb, d, addrs), opts))
			}
			ts = append(ts, Target{Lib: "scriptlock", Driver: d, Mode: "ack=" + strconv.Itoa(replicas), Scenarios: Uncontended(),
				New: func(tb testing.TB, _ string) (Locker, Locker) { return one(tb), one(tb) }})
		}
	}
	return ts
}

// acknowledges reports whether driver d's Scripter implements
// locker.Acknowledger.
func acknowledges(d string) bool {
	var s locker.Scripter
	switch d {
	case "goredis":
		s = (*goredisdriver.Scripter)(nil)
	case "redigo":
		s = (*redigodriver.Scripter)(nil)
	case "rueidis":
		s = (*rueidisdriver.Scripter)(nil)
	case "valkeygo":
		s = (*valkeygodriver.Scripter)(nil)
	}
	_, ok := s.(locker.Acknowledger)
	return ok
}

// BenchmarkAck runs targets as BenchmarkCluster does, against the Cluster
// whose seed addresses are addrs, with the server's cost summed over
// masters; each leaf also reports waits/op (WAIT and WAITAOF calls, INFO
// commandstats) and wait-us/op (the time the masters spent in them). The
// replicas' cost (applying the writes, answering REPLCONF GETACK) is not
// counted.
func BenchmarkAck(b *testing.B, addrs, masters []string, targets []Target) {
	stats := newServerStats(b, masters)
	stats.waits = true
	benchmark(b, addrs[0], stats, targets, nil)
}
