package conformance

import (
	"context"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
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

// Run runs every rule of the suite for d on a standalone server and on a
// Cluster of 3 masters with one replica each, the two at the same time, as
// subtests "deployment=standalone/<rule>" and "deployment=cluster/<rule>",
// each deployment ending with "Leak/NoKeysLeft": once its cases ran, no
// key is left under the suite's prefixes after the abandoned-call window
// (~30 s). It blocks until all rules have run.
//
// On each deployment the rules that disturb the whole server or
// deployment (CLIENT KILL, SCRIPT FLUSH, CLIENT PAUSE, DEBUG SLEEP,
// restarts, failovers, slot migrations, CONFIG SET, ACL users), read
// figures of the whole server, or bound how soon something happens run
// first, one at a time; a rule that counts the process's goroutines runs
// with no other rule of the process running. Then the other rules run
// concurrently, at most 8 at a time in the process, each with its own key
// prefix, its own client of the driver (Standalone or Cluster is called
// once per rule) and its own timeout. The Driver's functions must
// therefore be safe to call from several goroutines at once. Several Run
// calls may run at the same time in one test binary (each starts servers
// of its own; on servers named by SCRIPTLOCK_REDIS_ADDR or
// SCRIPTLOCK_CLUSTER_ADDRS they take turns); the bound and the rules that
// run alone in the process hold across them.
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
	// The two deployments run at the same time: each has servers of its
	// own, and its own key-leak check.
	var wg sync.WaitGroup
	wg.Go(func() { runStandalone(t, d, inGroups, nil) })
	wg.Go(func() {
		runShared(t, "deployment=cluster", func(t *testing.T) {
			if d.Cluster == nil {
				t.Skipf("driver %s declares no Cluster support", d.Name)
			}
			var c *redisserver.Cluster
			shared(func() { c = redisserver.StartClusterWithReplicas(t) })
			if c.External() {
				defer lockExternal(strings.Join(c.Addrs, ","))()
			}
			connect := func(t testing.TB) locker.Scripter { return d.Cluster(t, c.Addrs) }
			dep := &deployment{name: "cluster", connect: connect, admin: clusterAdmin{c}, driver: d, addrs: c.Addrs, owned: !c.External()}
			logServer(t, dep.admin, "")
			runCases(t, dep, inGroups)
			w := watchKeys(dep)
			runShared(t, "Leak/NoKeysLeft", w.report)
			w.stop()
		})
	})
	wg.Wait()
}

// runStandalone runs the rules keep selects on the standalone server
// (started, or named by SCRIPTLOCK_REDIS_ADDR) as subtests
// "deployment=standalone/<rule>", followed by its key-leak check
// "deployment=standalone/Leak/NoKeysLeft". On a server the suite did not
// start, it first waits for any other run there to end.
func runStandalone(t *testing.T, d Driver, keep func(testCase) bool, record func(rule string, skipped bool, reason string)) {
	t.Helper()
	runShared(t, "deployment=standalone", func(t *testing.T) {
		var srv *redisserver.Server
		shared(func() { srv = redisserver.StartStandalone(t) })
		if srv.External() {
			defer lockExternal(srv.Addr)()
		}
		connect := func(t testing.TB) locker.Scripter { return d.Standalone(t, srv.Addr) }
		dep := &deployment{name: "standalone", connect: connect, admin: standaloneAdmin{srv}, driver: d, addrs: []string{srv.Addr}, owned: !srv.External(), record: record}
		logServer(t, dep.admin, "")
		runCases(t, dep, keep)
		w := watchKeys(dep)
		runShared(t, "Leak/NoKeysLeft", w.report)
		w.stop()
	})
}

// externalLocks serializes the runs on one deployment the suite did not
// start (SCRIPTLOCK_REDIS_ADDR, SCRIPTLOCK_CLUSTER_ADDRS), by its
// addresses: several drivers, or RunGroups calls, running there at the
// same time would disturb each other's rules and see each other's keys in
// the key-leak check.
var externalLocks sync.Map // string -> *sync.Mutex

// lockExternal blocks until no other run holds the deployment at addrs,
// holds it, and returns the func that lets it go.
func lockExternal(addrs string) (unlock func()) {
	m, _ := externalLocks.LoadOrStore(addrs, new(sync.Mutex))
	mu := m.(*sync.Mutex)
	mu.Lock()
	return mu.Unlock
}

// caseConcurrency bounds how many cases run at once in the process
// (those of every deployment and driver the tests run at the same time):
// most of them wait (TTLs, stalls, delayed calls), but some are CPU-heavy
// under -race, on machines with few cores.
const caseConcurrency = 8

// caseSlots holds a token for each case running concurrently.
var caseSlots = make(chan struct{}, caseConcurrency)

// runCases runs the cases keep selects on d, as subtests named by the
// case. Those that must have the deployment or the process to themselves
// (testCase.exclusive, testCase.quiet) run first, one at a time and in
// list order, a quiet one with nothing else running in the process (see
// processGate); then the others run concurrently, within caseConcurrency
// (shared with the other deployments running meanwhile).
// It returns once every case has ended, and then checks that no goroutine
// of the core or the drivers is left.
func runCases(t *testing.T, d *deployment, keep func(testCase) bool) {
	var alone, concurrent []testCase
	for _, c := range allCases() {
		switch {
		case !keep(c) || c.clusterOnly && d.admin.cluster() == nil:
		case c.exclusive != "" || c.quiet != "":
			alone = append(alone, c)
		default:
			concurrent = append(concurrent, c)
		}
	}
	for _, c := range alone {
		if c.quiet != "" {
			processGate.Lock()
			runCase(t, d, c)
			processGate.Unlock()
		} else {
			processGate.RLock()
			runCase(t, d, c)
			processGate.RUnlock()
		}
	}
	var wg sync.WaitGroup
	for _, c := range concurrent {
		caseSlots <- struct{}{}
		processGate.RLock() // released by the case's goroutine
		wg.Go(func() {
			defer func() { <-caseSlots }()
			defer processGate.RUnlock()
			runCase(t, d, c)
		})
	}
	wg.Wait()
	// Goroutines that inherited no case's label (started by a timer, say)
	// are checked once no case runs.
	processGate.Lock()
	checkGoroutines(t, "")
	processGate.Unlock()
}

// processGate gives a quiet case the process to itself: every other case
// holds it shared while it runs, a quiet one holds it alone, whichever
// deployment and driver they run on (drivers may run the suite at the
// same time in one process). Whatever else the suite starts that adds a
// goroutine which outlives the start (a server, a subtest, a key watch)
// holds it shared while starting, so that a quiet case that counts the
// process's goroutines sees only its own come and go.
var processGate = newGate()

// gate is a readers-writer lock that prefers writers, all of them: once a
// writer waits, no new reader gets in until no writer waits any more, so
// the quiet cases queued by several deployments share one wait for the
// running cases to drain.
type gate struct {
	mu      sync.Mutex
	changed *sync.Cond
	readers int
	waiting int // writers waiting
	writer  bool
}

func newGate() *gate {
	g := &gate{}
	g.changed = sync.NewCond(&g.mu)
	return g
}

// RLock blocks while a writer holds g or waits for it, then holds it
// shared.
func (g *gate) RLock() {
	g.mu.Lock()
	for g.writer || g.waiting > 0 {
		g.changed.Wait()
	}
	g.readers++
	g.mu.Unlock()
}

// RUnlock ends one RLock.
func (g *gate) RUnlock() {
	g.mu.Lock()
	g.readers--
	if g.readers == 0 {
		g.changed.Broadcast()
	}
	g.mu.Unlock()
}

// Lock blocks until nobody holds g, then holds it alone.
func (g *gate) Lock() {
	g.mu.Lock()
	g.waiting++
	for g.writer || g.readers > 0 {
		g.changed.Wait()
	}
	g.waiting--
	g.writer = true
	g.mu.Unlock()
}

// Unlock ends the Lock.
func (g *gate) Unlock() {
	g.mu.Lock()
	g.writer = false
	g.changed.Broadcast()
	g.mu.Unlock()
}

// shared runs f with processGate held shared (and released, even when f
// ends the test with t.Fatal).
func shared(f func()) {
	processGate.RLock()
	defer processGate.RUnlock()
	f()
}

// runShared is t.Run(name, f) with processGate held shared until f
// starts: the subtest's goroutine is not started while an exclusive case
// runs.
func runShared(t *testing.T, name string, f func(t *testing.T)) bool {
	t.Helper()
	processGate.RLock()
	var once sync.Once
	release := func() { once.Do(processGate.RUnlock) }
	ok := t.Run(name, func(t *testing.T) {
		release()
		f(t)
	})
	release() // when -run left the subtest out, f never ran
	return ok
}

// caseLabel is the pprof label that marks every goroutine a case started,
// directly or not, with the case's key prefix: checkGoroutines tells the
// case's own goroutines from those of the cases running beside it.
const caseLabel = "sltest-case"

// runCase runs c on d as the subtest c.name.
func runCase(t *testing.T, d *deployment, c testCase) {
	t.Run(c.name, func(t *testing.T) {
		prefix := newPrefix()
		pprof.SetGoroutineLabels(pprof.WithLabels(context.Background(), pprof.Labels(caseLabel, prefix)))
		label := prefix
		if c.quiet != "" {
			label = "" // it runs alone: every goroutine of the process is its
		}
		t.Cleanup(func() { checkGoroutines(t, label) }) // runs last, after the case's clients closed
		t.Logf("rule: %s", c.rule)
		switch {
		case c.quiet != "":
			t.Logf("runs alone in the process: %s", c.quiet)
		case c.exclusive != "":
			t.Logf("runs alone on the deployment: %s", c.exclusive)
		}
		e := newEnv(t, d, prefix)
		if d.record != nil {
			t.Cleanup(func() { d.record(c.name, t.Skipped(), e.naReason) })
		}
		c.check(t, e)
	})
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
