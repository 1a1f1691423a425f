package conformance

import (
	"slices"
	"strings"
	"testing"

	"github.com/scriptlock/scriptlock/internal/redisserver"
	"github.com/scriptlock/scriptlock/locker"
)

// Driver describes how the suite connects a driver to Redis.
type Driver struct {
	// Name names the driver in subtest names: "driver=<Name>" is up to the
	// caller; Run adds "deployment=standalone" and "deployment=cluster".
	Name string

	// Standalone returns a Scripter talking to the standalone server at
	// addr (host:port). It registers the client's Close with t.Cleanup and
	// fails t if it cannot connect. Required.
	Standalone func(t testing.TB, addr string) locker.Scripter

	// Cluster returns a Scripter talking to the Redis Cluster whose masters
	// are at addrs. It registers the client's Close with t.Cleanup. Nil
	// declares that the driver lacks Cluster support: the Cluster cases are
	// then skipped with a message saying so.
	Cluster func(t testing.TB, addrs []string) locker.Scripter

	// Authenticated returns a Scripter like Standalone (cluster false, one
	// address) or Cluster (cluster true) that logs in as the Redis ACL user
	// with password. The ACL rules run only when it is set; nil declares
	// that the driver cannot authenticate, and they are skipped saying so.
	Authenticated func(t testing.TB, addrs []string, cluster bool, user, password string) locker.Scripter
}

// Run runs every rule of the suite for d, first on a standalone server and
// then on a Cluster of 3 masters with one replica each, as subtests
// "deployment=standalone/<rule>" and "deployment=cluster/<rule>", each
// deployment ending with "Leak/NoKeysLeft": once its cases ran, no key is
// left under the suite's prefixes after the abandoned-call window (~30 s;
// the standalone check waits while the Cluster cases run). It blocks
// until all rules have run; cases run one after another, since some inject
// faults into the server.
func Run(t *testing.T, d Driver) {
	t.Helper()
	RunGroups(t, d, Groups()...)
}

// Groups returns the names of the suite's rule groups (the part of a rule's
// name before '/': "Scripter", "Mutex", "RW", "Chaos", ...) in run order.
func Groups() []string {
	var gs []string
	for _, c := range allCases() {
		g, _, _ := strings.Cut(c.name, "/")
		if !slices.Contains(gs, g) {
			gs = append(gs, g)
		}
	}
	return gs
}

// RunGroups is Run restricted to the rules of the named groups (see
// Groups), so a test can run, say, only the "RW" rules under a top-level
// test of its own. It fails t when a name is not a group.
func RunGroups(t *testing.T, d Driver, groups ...string) {
	t.Helper()
	all := Groups()
	for _, g := range groups {
		if !slices.Contains(all, g) {
			t.Fatalf("conformance: no rule group %q (groups: %v)", g, all)
		}
	}
	if d.Standalone == nil {
		t.Fatal("conformance: Driver.Standalone is nil")
	}
	inGroups := func(c testCase) bool {
		g, _, _ := strings.Cut(c.name, "/")
		return slices.Contains(groups, g)
	}
	// The standalone server outlives its subtest: its key-leak check
	// (which may wait for keys to expire) runs while the Cluster cases do.
	watch := runStandalone(t, d, inGroups, nil)
	t.Run("deployment=cluster", func(t *testing.T) {
		if d.Cluster == nil {
			t.Skipf("driver %s declares no Cluster support", d.Name)
		}
		c := redisserver.StartClusterWithReplicas(t)
		s := d.Cluster(t, c.Addrs)
		dep := &deployment{name: "cluster", scripter: s, admin: clusterAdmin{c}, driver: d, addrs: c.Addrs, owned: !c.External()}
		logServer(t, dep.admin, "")
		runCases(t, dep, inGroups)
		w := watchKeys(dep)
		t.Run("Leak/NoKeysLeft", w.report)
		w.stop()
	})
	reportStandalone(t, watch)
}

// runStandalone runs the rules keep selects on the standalone server
// (started, or named by SCRIPTLOCK_REDIS_ADDR) as subtests
// "deployment=standalone/<rule>", and returns its key-leak check, started
// once they ran (nil when the subtest failed before), for
// reportStandalone.
func runStandalone(t *testing.T, d Driver, keep func(testCase) bool, record func(rule string, skipped bool, reason string)) *keyWatch {
	t.Helper()
	srv := redisserver.StartStandalone(t)
	var watch *keyWatch
	t.Run("deployment=standalone", func(t *testing.T) {
		s := d.Standalone(t, srv.Addr)
		dep := &deployment{name: "standalone", scripter: s, admin: standaloneAdmin{srv}, driver: d, addrs: []string{srv.Addr}, owned: !srv.External(), record: record}
		logServer(t, dep.admin, "")
		runCases(t, dep, keep)
		watch = watchKeys(dep)
	})
	return watch
}

// reportStandalone reports the standalone key-leak check as
// "deployment=standalone/Leak/NoKeysLeft" (named as if nested: -run
// patterns select it with the standalone cases).
func reportStandalone(t *testing.T, watch *keyWatch) {
	if watch != nil {
		t.Run("deployment=standalone/Leak/NoKeysLeft", watch.report)
		watch.stop()
	}
}

func runCases(t *testing.T, d *deployment, keep func(testCase) bool) {
	for _, c := range allCases() {
		if !keep(c) || c.clusterOnly && d.admin.cluster() == nil {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			t.Cleanup(func() { checkGoroutines(t) }) // runs last, after the case's clients closed
			t.Logf("rule: %s", c.rule)
			e := newEnv(t, d)
			if d.record != nil {
				t.Cleanup(func() { d.record(c.name, t.Skipped(), e.naReason) })
			}
			c.check(t, e)
		})
	}
}

// allCases lists the suite's rules in the order they run.
func allCases() []testCase {
	var cs []testCase
	cs = append(cs, scripterCases...)
	cs = append(cs, batchCases...)
	cs = append(cs, mutexCases...)
	cs = append(cs, waitCases...)
	cs = append(cs, fifoCases...)
	cs = append(cs, handoverCases...)
	cs = append(cs, refreshCases...)
	cs = append(cs, faultCases...)
	cs = append(cs, chaosCases...)
	cs = append(cs, clusterChaosCases...)
	cs = append(cs, badInputCases...)
	cs = append(cs, aclCases...)
	cs = append(cs, claimCases...)
	cs = append(cs, rwCases...)
	cs = append(cs, outcomeCases...)
	cs = append(cs, stallCases...)
	cs = append(cs, migrateCases...)
	cs = append(cs, inspectCases...)
	cs = append(cs, semaphoreCases...)
	cs = append(cs, multiCases...)
	cs = append(cs, ackCases...)
	cs = append(cs, quorumCases...)
	cs = append(cs, failoverCases...)
	return cs
}

// The unknown-outcome groups: each file that defines rules appends to its
// group's slice in an init function.
var (
	// outcomeCases: every script call site under the three fates of a call
	// whose outcome the caller cannot know (reply lost, run late, delayed).
	outcomeCases []testCase
	// stallCases: a server stalled by DEBUG SLEEP while calls time out.
	stallCases []testCase
	// migrateCases: lease operations during a slow slot migration.
	migrateCases []testCase
)
