package intree_test

import (
	"flag"
	"fmt"
	"os"
	"slices"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/scriptlock/scriptlock/conformance"
	"github.com/scriptlock/scriptlock/conformance/internal/hooks"
	"github.com/scriptlock/scriptlock/conformance/internal/intree/testdrivers"
	"github.com/scriptlock/scriptlock/internal/leak"
	"github.com/scriptlock/scriptlock/internal/redislog"
	"github.com/scriptlock/scriptlock/internal/redisserver"
)

// ownTests are the rule groups with a top-level test of their own, so that
// `go test ./conformance/... -run RW` (or Chaos, BadInput, ACL) selects
// them; TestConformance runs every other group.
var ownTests = []string{"RW", "Chaos", "BadInput", "ACL", "Outcome", "Stall", "Migrate", "Semaphore", "Multi", "Quorum", "Failover", "Ack"}

// TestConformance certifies every in-tree driver, standalone and Cluster.
// On servers the suite starts, it runs every rule group except those in
// ownTests (and the quiet rules, which TestQuiet runs). On a deployment
// you name (SCRIPTLOCK_REDIS_URL, SCRIPTLOCK_REDIS_ADDR,
// SCRIPTLOCK_CLUSTER_URLS, SCRIPTLOCK_CLUSTER_ADDRS) it certifies that
// deployment with every rule group at once, in the profile
// SCRIPTLOCK_SUITE selects (safe by default there), and the other tests
// skip:
//
//	SCRIPTLOCK_REDIS_URL=redis://app:pw@host:6379 go test ./conformance/ -run 'TestConformance/driver=goredis'
func TestConformance(t *testing.T) {
	if len(redisserver.ExternalEnv()) > 0 {
		forDrivers(t, func(t *testing.T, d conformance.Driver) { conformance.RunGroups(t, d, conformance.Groups()...) })
		return
	}
	var groups []string
	for _, g := range conformance.Groups() {
		if !slices.Contains(ownTests, g) {
			groups = append(groups, g)
		}
	}
	runDrivers(t, groups...)
}

// TestRW runs the read-write lock rules for every in-tree driver.
func TestRW(t *testing.T) { runDrivers(t, "RW") }

// TestChaos runs the fault-injection rules for every in-tree driver.
func TestChaos(t *testing.T) { runDrivers(t, "Chaos") }

// TestBadInput runs the bad-input rules for every in-tree driver.
func TestBadInput(t *testing.T) { runDrivers(t, "BadInput") }

// TestACL runs the least-privilege rules for every in-tree driver.
func TestACL(t *testing.T) { runDrivers(t, "ACL") }

// TestOutcome runs the unknown-outcome rules for every in-tree driver.
func TestOutcome(t *testing.T) { runDrivers(t, "Outcome") }

// TestStall runs the stalled-server rules for every in-tree driver.
func TestStall(t *testing.T) { runDrivers(t, "Stall") }

// TestMigrate runs the slot-migration rules for every in-tree driver.
func TestMigrate(t *testing.T) { runDrivers(t, "Migrate") }

// TestSemaphore runs the counting-semaphore rules for every in-tree driver.
func TestSemaphore(t *testing.T) { runDrivers(t, "Semaphore") }

// TestMulti runs the multi-lock rules for every in-tree driver.
func TestMulti(t *testing.T) { runDrivers(t, "Multi") }

// TestAck runs the replica-acknowledgement rules for every in-tree driver.
func TestAck(t *testing.T) { runDrivers(t, "Ack") }

// TestFailover runs the Failover rules (Cluster only: replicas take over).
func TestFailover(t *testing.T) { runDrivers(t, "Failover") }

// TestQuorum runs the Quorum rules (each starts two servers of its own).
func TestQuorum(t *testing.T) { runDrivers(t, "Quorum") }

// runDrivers runs the groups' rules but the quiet ones (TestQuiet runs
// those) for every in-tree driver on servers the suite starts; with a
// deployment named, TestConformance runs every group there instead, at
// once. The group tests run in parallel with each
// other: each starts servers of its own, so one group's exclusive cases
// (which must have a deployment to themselves) run beside another's, and
// the suite's bounds on cases running at once (runCases) keep the load
// what it is with one group.
func runDrivers(t *testing.T, groups ...string) {
	if set := redisserver.ExternalEnv(); len(set) > 0 {
		t.Skipf("%v names a deployment: TestConformance certifies it with every rule group (-run 'TestConformance/driver=<name>/deployment=<kind>/%s/')", set, groups[0])
	}
	t.Parallel()
	groupSlots <- struct{}{}
	defer func() { <-groupSlots }()
	forDrivers(t, func(t *testing.T, d conformance.Driver) { hooks.RunGroupsQuiet(t, d, false, groups...) })
}

// groupSlots bounds how many group tests run at once under the race
// detector. Each starts a standalone server and a six-node Cluster per
// driver; all thirteen at once, under -race on a 2-core machine, starved
// new servers past their readiness bound. Without it (scripts/compat.sh)
// they all run at once.
var groupSlots = make(chan struct{}, map[bool]int{true: 3, false: len(ownTests) + 1}[raceDetector])

// TestQuiet runs the quiet rules of every group (those that must have the
// process to themselves: they count its goroutines, or bound how long
// calls take) for every in-tree driver, before the group tests, which
// leave them out, start in parallel: among them, each quiet rule would
// stop every other case for its turn.
func TestQuiet(t *testing.T) {
	if set := redisserver.ExternalEnv(); len(set) > 0 {
		t.Skipf("%v names a deployment: TestConformance certifies it with every rule", set)
	}
	forDrivers(t, func(t *testing.T, d conformance.Driver) {
		hooks.RunGroupsQuiet(t, d, true, conformance.Groups()...)
	})
}

// forDrivers calls run for every in-tree driver, each in a subtest
// "driver=<name>", the drivers at the same time: each runs on servers of
// its own, and the suite bounds how many cases run at once and runs each
// exclusive case alone.
func forDrivers(t *testing.T, run func(t *testing.T, d conformance.Driver)) {
	var wg sync.WaitGroup
	for _, d := range testdrivers.All() {
		wg.Go(func() {
			t.Run("driver="+d.Name, func(t *testing.T) { run(t, d) })
		})
	}
	wg.Wait()
}

// TestEveryGroupRuns guards the split above: every group is either run by
// TestConformance or has a test of its own.
func TestEveryGroupRuns(t *testing.T) {
	for _, g := range ownTests {
		if !slices.Contains(conformance.Groups(), g) {
			t.Errorf("ownTests names %q, which is not a rule group (groups: %v)", g, conformance.Groups())
		}
	}
}

// TestMain fails the run if any goroutine outlives the tests: every client
// the suite opened must have been closed, and nothing in the core may keep
// running after its calls return. After the tests it prints the verdict
// (conformance.WriteVerdict): a table of every rule, driver and deployment.
//
// Every group test runs in parallel (runDrivers), and go test's -parallel
// defaults to GOMAXPROCS, which on a 2-core machine runs two at a time:
// unless -parallel is given, TestMain lets them all start at once. The
// suite bounds its own load (caseSlots, aloneSlots in runCases).
func TestMain(m *testing.M) {
	flag.Parse()
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		_ = flag.Set("test.parallel", "64")
	}
	// go-redis's log messages are counted, not shown: one line at the end.
	logs := new(redislog.Counter)
	redis.SetLogger(logs)
	leak.VerifyTestMain(logs.After(verdictM{m}),
		// rueidis v1.0.79's cluster client leaves a 5 s sleep behind after
		// a slot refresh, even after Close (upstream; it ends by itself).
		leak.IgnoreAnyFunction("github.com/redis/rueidis.(*clusterClient)._refresh.func2"),
		// valkey-go, a fork of rueidis, does the same.
		leak.IgnoreAnyFunction("github.com/valkey-io/valkey-go.(*clusterClient)._refresh.func2"),
	)
}

// verdictM runs the tests, then prints the verdict.
type verdictM struct{ m *testing.M }

func (v verdictM) Run() int {
	code := v.m.Run()
	if err := conformance.WriteVerdict(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "conformance: writing the verdict:", err)
		code = 1
	}
	return code
}
