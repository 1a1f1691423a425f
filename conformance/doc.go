// Package conformance is the exported test suite every scriptlock driver
// must pass: it certifies a locker.Scripter implementation, and the locks
// built on it, against a real Redis, standalone and Cluster.
//
// A driver's test calls Run with a Driver that says how to connect:
//
//	func TestConformance(t *testing.T) {
//		conformance.Run(t, conformance.Driver{
//			Name:    "mydriver",
//			Connect: func(t testing.TB, c conformance.Conn) locker.Scripter { ... },
//		})
//	}
//
// Connect receives a Conn: the addresses, whether it is a Cluster, and the
// user, password, database and *tls.Config to connect with, as an
// application would (the older Standalone, Cluster and Authenticated
// fields still work for plain connections).
//
// Run starts its own throwaway redis-server processes (a standalone server
// and a 3-master Cluster, on free loopback ports) and stops them at the end.
// To certify an existing deployment instead, name it: SCRIPTLOCK_REDIS_URL
// (redis://[user:password@]host:port[/db], or rediss:// for TLS, checked
// against the system roots or the PEM file in SCRIPTLOCK_TLS_CA) or
// SCRIPTLOCK_REDIS_ADDR (host:port) for a standalone server,
// SCRIPTLOCK_CLUSTER_URLS or SCRIPTLOCK_CLUSTER_ADDRS (comma-separated, the
// masters) for a Cluster; a run that names one kind certifies only that
// one.
//
// The suite has two profiles (EnvSuite, SCRIPTLOCK_SUITE=safe|full). The
// safe profile, the default on a deployment you name, runs every rule that
// needs only what an application's ACL user has (the scripts, pub/sub,
// TIME, reads and writes of its own keys under "sltest:<run>:", SCAN,
// HELLO): it sends no DEBUG, CLIENT PAUSE or KILL, SCRIPT FLUSH, CONFIG,
// INFO, KEYS, FLUSHALL, ACL or Cluster administration, and starts no
// server; every other rule is reported not applicable, with what it needs.
// To certify the application's own ACL user, set EnvPrefix to its prefix
// (the run's names go under it) and EnvSuiteUser to a second user for the
// suite's own checks; before its first rule on a deployment it did not
// start, the suite checks that both users may do what they must, and
// stops within seconds naming any refused command and the ACL line that
// grants it.
// The full profile, the default on servers the suite starts, runs every
// rule. On a deployment it did not start, the full profile is still a
// guest: every setting a rule changes (appendonly, with CONFIG SET) is read
// first and set back after the rule, whatever happened; the ACL user a
// rule creates has a random name and password and is deleted after it;
// and a rule that needs a deployment the suite owns (it restarts or kills
// a node, fails a master over or moves a slot) or a command the server
// refuses (DEBUG, tried once with DEBUG SLEEP 0; CONFIG) reports itself
// not applicable instead of failing. It still runs SCRIPT FLUSH, CLIENT
// PAUSE and CLIENT KILL there, which reach every client of the server, so
// never point the full profile at production.
//
// At the end, WriteVerdict writes one table of every rule, driver and
// deployment that ran: pass, FAIL, or not applicable with the reason,
// under each deployment's server version and profile.
//
// Every case is a rule: a name (the subtest name, "Group/Rule"), the rule
// sentence, and a check. Each case gets a fresh key prefix, a client of
// its own (the suite calls Driver.Standalone or Driver.Cluster for every
// rule) and a timeout, and its failures print the call, what it got and
// what the rule wants.
//
// Most rules only wait (for TTLs, wake-ups, delayed calls), so the suite
// runs them concurrently, at most 8 at a time in the process, and the
// standalone and Cluster deployments at the same time. The rules that
// disturb a whole server or deployment (CLIENT KILL, SCRIPT FLUSH, CLIENT
// PAUSE, DEBUG SLEEP, restarts, failovers, slot migrations, CONFIG SET,
// ACL users), read figures of the whole server (INFO commandstats) or
// bound how soon something happens run first on each deployment, one at a
// time (each logs "runs alone on the deployment: <why>"); the rules that
// count every goroutine of the process run with no other rule of the
// process running ("runs alone in the process: <why>"). Several drivers
// may run the suite at the same time in one test binary, each on servers
// of its own, as the in-tree drivers do; the bound and the rules that run
// alone in the process hold across all of them.
//
// In this repository, `go test ./conformance/internal/intree/ -v` lists
// every rule for every in-tree driver.
package conformance
