// Package conformance is the exported test suite every scriptlock driver
// must pass: it certifies a locker.Scripter implementation, and the locks
// built on it, against a real Redis, standalone and Cluster.
//
// A driver's test calls Run with a Driver that says how to connect:
//
//	func TestConformance(t *testing.T) {
//		conformance.Run(t, conformance.Driver{
//			Name:       "mydriver",
//			Standalone: func(t testing.TB, addr string) locker.Scripter { ... },
//			Cluster:    func(t testing.TB, addrs []string) locker.Scripter { ... },
//		})
//	}
//
// Run starts its own throwaway redis-server processes (a standalone server
// and a 3-master Cluster, on free loopback ports) and stops them at the end.
// Set SCRIPTLOCK_REDIS_ADDR (host:port) and SCRIPTLOCK_CLUSTER_ADDRS
// (comma-separated host:port of the masters) to run against an existing
// deployment instead. The suite is then a guest there: it writes only keys
// under the prefix "sltest:" (deleted, or expiring within about 30 s);
// every setting a rule changes (appendonly, with CONFIG SET) is read first
// and set back after the rule, whatever happened; the ACL user a rule
// creates has a random name and password and is deleted after it; and a
// rule that needs a deployment the suite owns (it restarts or kills a
// node, fails a master over or moves a slot) or a command the server
// refuses (DEBUG, tried once with DEBUG SLEEP 0; CONFIG) reports itself
// not applicable (skipped, with the reason) instead of failing. It still
// runs SCRIPT FLUSH, CLIENT PAUSE and CLIENT KILL there, which reach every
// client of the server, so never point it at production.
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
// `go test ./conformance/... -v` lists every rule for every in-tree driver.
package conformance
