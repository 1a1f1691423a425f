package conformance

import (
	"context"
	"crypto/tls"
	"fmt"
	"os"
	"runtime/pprof"
	"slices"
	"strconv"
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

	// Connect returns a Scripter connected as c says (addresses, Cluster
	// or not, user, password, database, TLS), the way an application
	// connects: the suite calls it for every deployment, with the
	// settings of SCRIPTLOCK_REDIS_URL or SCRIPTLOCK_CLUSTER_URLS when
	// those name it, and for the ACL rules with a user of their own. It
	// registers the client's Close with t.Cleanup and fails t if it cannot
	// connect. When set, Standalone, Cluster and Authenticated are not
	// used; when nil, the suite uses them, and fails a deployment that
	// needs a login, a database or TLS, saying that Connect is missing.
	Connect func(t testing.TB, c Conn) locker.Scripter

	// NoCluster, with Connect set, declares that the driver lacks Cluster
	// support: the Cluster cases are then skipped with a message saying
	// so. (Without Connect, a nil Cluster declares it.)
	NoCluster bool

	// Standalone returns a Scripter talking to the standalone server at
	// addr (host:port). It registers the client's Close with t.Cleanup and
	// fails t if it cannot connect. Required unless Connect is set.
	Standalone func(t testing.TB, addr string) locker.Scripter

	// Cluster returns a Scripter talking to the Redis Cluster whose masters
	// are at addrs. It registers the client's Close with t.Cleanup. Nil
	// (and Connect nil) declares that the driver lacks Cluster support:
	// the Cluster cases are then skipped with a message saying so.
	Cluster func(t testing.TB, addrs []string) locker.Scripter

	// Authenticated returns a Scripter like Standalone (cluster false, one
	// address) or Cluster (cluster true) that logs in as the Redis ACL user
	// with password. The ACL rules run only when it or Connect is set;
	// both nil declares that the driver cannot authenticate, and they are
	// skipped saying so.
	Authenticated func(t testing.TB, addrs []string, cluster bool, user, password string) locker.Scripter
}

// Conn says how to connect to a deployment, as an application does: what
// a redis:// or rediss:// URL says, and whether it is a Cluster.
type Conn struct {
	// Addrs are host:port addresses: the standalone server's (one), or
	// seed masters of the Cluster.
	Addrs []string
	// Cluster is set for a Redis Cluster.
	Cluster bool
	// Username and Password log in (AUTH) when Password is set; Username
	// "" means the default user.
	Username, Password string
	// DB is the database to select (standalone only; 0 by default).
	DB int
	// TLS, when set, is the TLS configuration to connect with (ServerName
	// empty: the host of the address dialled); nil means plain TCP.
	TLS *tls.Config
}

// plain reports whether c needs nothing beyond an address: no login, no
// database, no TLS.
func (c Conn) plain() bool { return c.Password == "" && c.Username == "" && c.DB == 0 && c.TLS == nil }

// connFor returns the Conn of a server the suite reaches through
// redisserver: its addresses and the Dial settings it was named with.
func connFor(addrs []string, cluster bool, dl redisserver.Dial) Conn {
	return Conn{Addrs: addrs, Cluster: cluster, Username: dl.Username, Password: dl.Password, DB: dl.DB, TLS: dl.TLS}
}

// connect returns a new Scripter of d connected as c says, failing t when
// d cannot connect that way.
func (d Driver) connect(t testing.TB, c Conn) locker.Scripter {
	t.Helper()
	if d.Connect != nil {
		return d.Connect(t, c)
	}
	if !c.plain() {
		if c.Password != "" && c.DB == 0 && c.TLS == nil && d.Authenticated != nil {
			return d.Authenticated(t, c.Addrs, c.Cluster, c.Username, c.Password)
		}
		t.Fatalf("conformance: driver %s has no Driver.Connect, so it cannot connect with a login, a database or TLS as the deployment needs (user %q, db %d, TLS %v): set Driver.Connect", d.Name, c.Username, c.DB, c.TLS != nil)
	}
	if c.Cluster {
		return d.Cluster(t, c.Addrs)
	}
	return d.Standalone(t, c.Addrs[0])
}

// clusterSupport reports whether d declares Cluster support.
func (d Driver) clusterSupport() bool {
	if d.Connect != nil {
		return !d.NoCluster
	}
	return d.Cluster != nil
}

// authSupport reports whether d can log in as an ACL user.
func (d Driver) authSupport() bool { return d.Connect != nil || d.Authenticated != nil }

// authenticated returns a new Scripter of d logged in as user with
// password, otherwise connected as c says.
func (d Driver) authenticated(t testing.TB, c Conn, user, password string) locker.Scripter {
	t.Helper()
	if d.Connect != nil {
		c.Username, c.Password = user, password
		return d.Connect(t, c)
	}
	return d.Authenticated(t, c.Addrs, c.Cluster, user, password)
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
// of its own; on servers named by SCRIPTLOCK_REDIS_URL,
// SCRIPTLOCK_REDIS_ADDR, SCRIPTLOCK_CLUSTER_URLS or
// SCRIPTLOCK_CLUSTER_ADDRS they take turns); the bound and the rules that
// run alone in the process hold across them.
//
// When a variable names an existing deployment, Run certifies it (and
// not the other kind, which it then leaves out), in the profile EnvSuite
// selects: safe by default there, full on the servers it starts. Every
// rule's outcome is kept for WriteVerdict.
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
	runGroups(t, d, func(testCase) bool { return true }, groups...)
}

// runGroups is RunGroups of the cases of the groups that also pass only.
func runGroups(t *testing.T, d Driver, only func(testCase) bool, groups ...string) {
	t.Helper()
	if u := unknownEnv(os.Environ()); len(u) > 0 {
		t.Fatalf("conformance: unknown variable(s) %v set; the suite knows %v", u, knownEnv)
	}
	all := Groups()
	for _, g := range groups {
		if !slices.Contains(all, g) {
			t.Fatalf("conformance: no rule group %q (groups: %v)", g, all)
		}
	}
	if d.Standalone == nil && d.Connect == nil {
		t.Fatal("conformance: Driver.Standalone and Driver.Connect are nil: set one")
	}
	inGroups := func(c testCase) bool {
		g, _, _ := strings.Cut(c.name, "/")
		return slices.Contains(groups, g) && only(c)
	}
	// The two deployments run at the same time: each has servers of its
	// own, and its own key-leak check.
	var wg sync.WaitGroup
	wg.Go(func() { runStandalone(t, d, inGroups, standaloneRun{}) })
	wg.Go(func() {
		runShared(t, "deployment=cluster", func(t *testing.T) {
			if !d.clusterSupport() {
				t.Skipf("driver %s declares no Cluster support", d.Name)
			}
			if why := unnamed(redisserver.EnvClusterURLs, redisserver.EnvClusterAddrs); why != "" {
				t.Skip(why)
			}
			var c *redisserver.Cluster
			shared(func() { c = redisserver.StartClusterWithReplicas(t) })
			if c.External() {
				defer lockExternal(strings.Join(c.Addrs, ","))()
			}
			conn := connFor(c.Addrs, true, c.Nodes[0].Dial())
			connect := func(t testing.TB) locker.Scripter { return d.connect(t, conn) }
			own := c
			if u, p, set := suiteUserOf(t); set && c.External() {
				own = c.As(u, p)
			}
			dep := newDeployment(t, &deployment{name: "cluster", connect: connect, conn: conn, admin: clusterAdmin{own}, app: clusterAdmin{c}, driver: d, addrs: c.Addrs, owned: !c.External()})
			runCases(t, dep, inGroups)
			w := watchKeys(dep)
			runShared(t, "Leak/NoKeysLeft", func(t *testing.T) { dep.report(t, "Leak/NoKeysLeft", w.report) })
			w.stop()
		})
	})
	wg.Wait()
}

// standaloneRun holds what tests of the suite itself may set for
// runStandalone; its zero value is a run as Run does it.
type standaloneRun struct {
	// record, when set, is told each case's outcome (see deployment.record).
	record func(rule string, skipped bool, reason string)
	// srv, when set, is the server to run on, instead of the one the
	// variables name or StartStandalone starts.
	srv *redisserver.Server
	// profile, when set, is the profile to run instead of EnvSuite's.
	profile string
	// prefix, when set, is the application's prefix instead of EnvPrefix's.
	prefix string
	// suite, when set, is srv as the user of the suite's own connections
	// (instead of EnvSuiteUser's).
	suite *redisserver.Server
}

// runStandalone runs the rules keep selects on the standalone server
// (started, or named by SCRIPTLOCK_REDIS_URL or SCRIPTLOCK_REDIS_ADDR, or
// o.srv) as subtests "deployment=standalone/<rule>", followed by its
// key-leak check "deployment=standalone/Leak/NoKeysLeft". On a server the
// suite did not start, it first waits for any other run there to end.
func runStandalone(t *testing.T, d Driver, keep func(testCase) bool, o standaloneRun) {
	t.Helper()
	runShared(t, "deployment=standalone", func(t *testing.T) {
		srv := o.srv
		if srv == nil {
			if why := unnamed(redisserver.EnvRedisURL, redisserver.EnvRedisAddr); why != "" {
				t.Skip(why)
			}
			shared(func() { srv = redisserver.StartStandalone(t) })
		}
		if srv.External() {
			defer lockExternal(srv.Addr)()
		}
		conn := connFor([]string{srv.Addr}, false, srv.Dial())
		connect := func(t testing.TB) locker.Scripter { return d.connect(t, conn) }
		own := o.suite
		if own == nil && srv.External() {
			if u, p, set := suiteUserOf(t); set {
				own = srv.As(u, p)
			}
		}
		if own == nil {
			own = srv
		}
		dep := newDeployment(t, &deployment{name: "standalone", connect: connect, conn: conn, admin: standaloneAdmin{own}, app: standaloneAdmin{srv}, driver: d, addrs: []string{srv.Addr}, owned: !srv.External(), record: o.record, profile: o.profile, names: o.prefix})
		runCases(t, dep, keep)
		w := watchKeys(dep)
		runShared(t, "Leak/NoKeysLeft", func(t *testing.T) { dep.report(t, "Leak/NoKeysLeft", w.report) })
		w.stop()
	})
}

// unnamed returns why a deployment is left out, or "": when the variables
// name an existing deployment of the other kind and none of this one
// (envs), the run certifies the deployment named, and starts no server.
func unnamed(envs ...string) string {
	set := redisserver.ExternalEnv()
	if len(set) == 0 {
		return ""
	}
	for _, e := range envs {
		if slices.Contains(set, e) {
			return ""
		}
	}
	return fmt.Sprintf("not certified here: %v names an existing deployment of the other kind; set %s to certify one of this kind", set, strings.Join(envs, " or "))
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

// EnvCases names the variable that sets how many cases run at once in the
// test binary, and how many deployments run their exclusive cases at once
// (each bound on its own): a positive integer, 8 when unset.
const EnvCases = "SCRIPTLOCK_SUITE_CASES"

// caseConcurrency bounds how many cases run at once in the process
// (those of every deployment and driver the tests run at the same time):
// most of them wait (TTLs, stalls, delayed calls), but some are CPU-heavy
// under -race, on machines with few cores. EnvCases sets it; a value that
// is not a positive integer is reported on stderr and the default kept.
var caseConcurrency = casesFromEnv()

func casesFromEnv() int {
	const def = 8
	v := os.Getenv(EnvCases)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		fmt.Fprintf(os.Stderr, "conformance: %s=%q is not a positive integer: running %d cases at once\n", EnvCases, v, def)
		return def
	}
	return n
}

// caseSlots holds a token for each case running concurrently.
var caseSlots = make(chan struct{}, caseConcurrency)

// aloneSlots bounds the deployments running their exclusive and quiet
// cases at once (one at a time on each): deployments of every group test
// run at the same time, and their exclusive cases, many of which bound how
// soon something happens, must not pile up beyond the load of one
// deployment per driver and kind.
var aloneSlots = newSlots(caseConcurrency)

// slots is a counting semaphore that serves the waiter with the most work
// first: a deployment with a long chain of exclusive cases (they run one
// after another) starts it early instead of ending the run alone.
type slots struct {
	mu      sync.Mutex
	free    int
	waiting []slotWaiter
}

type slotWaiter struct {
	left  int // the waiter's exclusive cases to run
	ready chan struct{}
}

func newSlots(n int) *slots { return &slots{free: n} }

// tryAcquire takes a slot if one is free and nobody waits, and reports
// whether it did.
func (s *slots) tryAcquire() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.free > 0 && len(s.waiting) == 0 {
		s.free--
		return true
	}
	return false
}

// acquire blocks until the caller, with left cases to run, holds a slot.
func (s *slots) acquire(left int) {
	s.mu.Lock()
	if s.free > 0 && len(s.waiting) == 0 {
		s.free--
		s.mu.Unlock()
		return
	}
	w := slotWaiter{left: left, ready: make(chan struct{})}
	s.waiting = append(s.waiting, w)
	s.mu.Unlock()
	<-w.ready
}

// release gives the slot to the waiter with the most cases left (the
// earliest of those), or frees it.
func (s *slots) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.waiting) == 0 {
		s.free++
		return
	}
	best := 0
	for i, w := range s.waiting {
		if w.left > s.waiting[best].left {
			best = i
		}
	}
	close(s.waiting[best].ready)
	s.waiting = slices.Delete(s.waiting, best, best+1)
}

// newDeployment sets d's profile (see EnvSuite), failing t on a bad
// EnvSuite, puts its admin behind safeAdmin in the safe profile, logs its
// server and profile, and returns d.
func newDeployment(t *testing.T, d *deployment) *deployment {
	t.Helper()
	if d.profile != "" {
		d.profileWhy = "set by the test"
	} else {
		var err error
		if d.profile, d.profileWhy, err = profileOf(d.owned); err != nil {
			t.Fatal(err)
		}
	}
	p, err := appPrefix()
	if err != nil {
		t.Fatal(err)
	}
	if d.names == "" {
		d.names = p
	}
	d.names += runPrefix
	if d.profile == ProfileSafe {
		d.admin = safeAdmin{d.admin}
	}
	d.server = logServer(t, d.admin, "")
	t.Logf("profile: %s (%s); names under %s", d.profile, d.profileWhy, d.names)
	if !d.owned {
		if err := d.checkAccess(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	verdicts.deployment(d)
	return d
}

// report runs f as the rule named rule of d (its subtest t) and records
// how it ended in the verdict.
func (d *deployment) report(t *testing.T, rule string, f func(t *testing.T)) {
	t.Cleanup(func() { verdicts.add(d, rule, t, "", nil, t.Failed()) })
	f(t)
}

// runCases runs the cases keep selects on d, as subtests named by the
// case. Those that must have the deployment or the process to themselves
// (testCase.exclusive, testCase.quiet, testCase.timed) run one at a time,
// the quiet and timed ones first, each group in list order, once the
// deployment holds one of aloneSlots (shared with the other deployments),
// a quiet one with nothing else running in the process, a timed one
// beside other deployments' timed cases only (see processGate); the others run
// concurrently, within caseSlots (shared likewise), before or after them.
// It returns once every case has ended, and then checks that no goroutine
// of the core or the drivers is left.
func runCases(t *testing.T, d *deployment, keep func(testCase) bool) {
	var alone, concurrent []testCase
	for _, c := range allCases() {
		switch {
		case !keep(c) || c.clusterOnly && d.admin.cluster() == nil:
		case c.needs != "" && d.profile == ProfileSafe:
			runCase(t, d, c) // reported not applicable at once
		case c.exclusive != "" || c.quiet != "" || c.timed != "":
			alone = append(alone, c)
		default:
			concurrent = append(concurrent, c)
		}
	}
	// The quiet and timed ones first: the process drains for each quiet
	// case that comes while others run, and at the start a deployment's
	// quiet cases queue with those of the deployments starting beside it.
	loud := func(c testCase) int {
		if c.quiet != "" || c.timed != "" {
			return 0
		}
		return 1
	}
	slices.SortStableFunc(alone, func(a, b testCase) int { return loud(a) - loud(b) })
	// The deployment's own gate: its exclusive cases hold it alone, the
	// others shared. The exclusive cases run in order in one goroutine,
	// holding one of aloneSlots and the gate from the first to the last
	// (no wait for the others to drain between them); while they wait for
	// the slot, the deployment's other cases run.
	dep := newGate()
	first := len(alone) > 0 && aloneSlots.tryAcquire()
	if first {
		dep.Lock() // before any other case of the deployment starts
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		if len(alone) == 0 {
			return
		}
		if !first {
			aloneSlots.acquire(len(alone))
			dep.Lock()
		}
		for _, c := range alone {
			switch {
			case c.quiet != "":
				processGate.Lock()
				runCase(t, d, c)
				processGate.Unlock()
			case c.timed != "":
				processGate.TimedLock()
				runCase(t, d, c)
				processGate.TimedUnlock()
			default:
				processGate.RLock()
				runCase(t, d, c)
				processGate.RUnlock()
			}
		}
		dep.Unlock()
		aloneSlots.release()
	})
	for _, c := range concurrent {
		dep.RLock() // before a slot: an exclusive case may hold dep long
		caseSlots <- struct{}{}
		processGate.RLock() // released by the case's goroutine
		wg.Go(func() {
			defer dep.RUnlock()
			defer func() { <-caseSlots }()
			defer processGate.RUnlock()
			runCase(t, d, c)
		})
	}
	wg.Wait()
	// Goroutines that inherited no case's label (started by a timer, say)
	// are checked once no case runs. Most often there is none by now, so
	// the process is stopped for the check only when one is seen (it may
	// be another deployment's).
	if unlabelledLeft() {
		processGate.Lock()
		checkGoroutines(t, "", nil)
		processGate.Unlock()
	}
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
		t.Logf("rule: %s", c.rule)
		var reason string // why the case is not applicable, or ""
		var e *env
		// Registered first, so it runs last: the goroutine check and
		// every clean-up of the case have had their say. The exceeded
		// time bounds are reported here, after the rule's own checks.
		t.Cleanup(func() {
			var notes []timingNote
			safetyFailed := t.Failed()
			if e != nil {
				notes, safetyFailed = e.reportTiming(t)
			}
			if d.record != nil {
				// A rule a timing check stopped (t.SkipNow) ran: it is
				// not "not applicable".
				d.record(c.name, t.Skipped() && len(notes) == 0, reason)
			}
			verdicts.add(d, c.name, t, reason, notes, safetyFailed)
		})
		if c.needs != "" && d.profile == ProfileSafe {
			reason = "the safe profile leaves it out: it " + c.needs
			t.Skip("not applicable: " + reason + " (" + d.profileWhy + ")")
		}
		prefix := newPrefix(d.names)
		pprof.SetGoroutineLabels(pprof.WithLabels(context.Background(), pprof.Labels(caseLabel, prefix)))
		label := prefix
		if c.quiet != "" {
			label = "" // it runs alone: every goroutine of the process is its
		}
		t.Cleanup(func() { checkGoroutines(t, label, e) }) // runs after the case's clients closed
		switch {
		case c.quiet != "":
			t.Logf("runs alone in the process: %s", c.quiet)
		case c.timed != "":
			t.Logf("runs in the process beside only other deployments' timed cases (at most %d at once): %s", timedConcurrency, c.timed)
		case c.exclusive != "":
			t.Logf("runs alone on the deployment: %s", c.exclusive)
		}
		e = newEnv(t, d, prefix)
		t.Cleanup(func() { reason = e.naReason })
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
	cs = append(cs, electionCases...)
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
