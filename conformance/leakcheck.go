package conformance

import (
	"bytes"
	"fmt"
	"runtime/pprof"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/scriptlock/scriptlock/internal/leak"
	"github.com/scriptlock/scriptlock/locker"
	"github.com/stretchr/testify/require"
)

// ownPackages are the packages whose goroutines must not outlive a case:
// the core and the drivers (their pub/sub loops). The clients' own
// goroutines (connection pools, background refreshes) are theirs to manage.
var ownPackages = []string{
	"github.com/scriptlock/scriptlock/locker.",
	"github.com/scriptlock/scriptlock/drivers/",
}

// checkGoroutines fails t if, after a grace period of up to 3s, a goroutine
// other than the caller's still runs code of ownPackages. With label set,
// it looks only at the goroutines labelled with it (caseLabel): those a
// case started, directly or not, while other cases run beside it; with
// label "" at every goroutine. It runs at the end of every case, after the
// case's clients were closed, and once more when all of a deployment's
// cases have ended. With e set, goroutines that end within leakBound
// after all are judged as timing (see timely): a call the caller
// abandoned ends by its client's read timeout, later on a machine running
// late.
func checkGoroutines(t *testing.T, label string, e *env) {
	t.Helper()
	start := time.Now()
	leaked := awaitOwnGoroutines(label, 3*time.Second)
	if len(leaked) > 0 && e != nil {
		n := len(leaked)
		if leaked = awaitOwnGoroutines(label, leakBound-time.Since(start)); len(leaked) == 0 {
			e.timely(t, false, fmt.Sprintf("%d goroutine(s) of scriptlock ended only %v after the case", n, time.Since(start).Round(time.Millisecond)))
			return
		}
	}
	if len(leaked) > 0 {
		what := "after the case"
		if label == "" {
			what = "after every case of the deployment (a goroutine that carries no case's label: started by a timer, say)"
		}
		t.Errorf("goroutine leak: %d goroutine(s) of scriptlock still running %s:\n%s", len(leaked), what, strings.Join(leaked, "\n\n"))
	}
}

// leakBound bounds how long after a case its goroutines may still end:
// beyond the 10 s read timeout the suite's Cluster clients dial with
// (docs/guide.md), which bounds a redisc call the caller abandoned.
const leakBound = 15 * time.Second

// awaitOwnGoroutines polls ownGoroutines(label) for up to within and
// returns what is left.
func awaitOwnGoroutines(label string, within time.Duration) []string {
	for deadline := time.Now().Add(within); ; time.Sleep(20 * time.Millisecond) {
		if leaked := ownGoroutines(label); len(leaked) == 0 || time.Now().After(deadline) {
			return leaked
		}
	}
}

// unlabelledLeft reports whether goroutines that run code of ownPackages
// and carry no case's label are still running after a short wait (those
// of timers that fire as a case ends are gone by then).
func unlabelledLeft() bool {
	for deadline := time.Now().Add(500 * time.Millisecond); ; {
		n := 0
		for _, rec := range ownGoroutines("") {
			if !labelled(rec, `"`+caseLabel+`":`) {
				n++
			}
		}
		if n == 0 {
			return false
		}
		if time.Now().After(deadline) {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// ownGoroutines returns the stacks (as the goroutine profile prints them
// with debug=1: a count, the labels, one line per frame) of the other
// goroutines that run code of ownPackages and, when label is not "",
// carry the pprof label caseLabel=label.
func ownGoroutines(label string) []string {
	var buf bytes.Buffer
	_ = pprof.Lookup("goroutine").WriteTo(&buf, 1)
	want := `"` + caseLabel + `":` + strconv.Quote(label)
	var out []string
	for _, rec := range strings.Split(buf.String(), "\n\n") {
		if strings.Contains(rec, "runtime/pprof.writeGoroutine") {
			continue // the caller's
		}
		if label != "" && !labelled(rec, want) {
			continue
		}
		if runsOwnCode(rec) {
			out = append(out, strings.TrimSpace(rec))
		}
	}
	return out
}

// runsOwnCode reports whether a goroutine's stack (either format: the
// goroutine profile's or runtime.Stack's) has a frame, or was created by a
// function, of ownPackages that is not test code: a driver's package may
// run the suite from its own test (TestConformance in package
// drivers/<x>_test), whose frames are on the stack while the suite runs.
func runsOwnCode(rec string) bool {
	for _, line := range strings.Split(rec, "\n") {
		for _, p := range ownPackages {
			if i := strings.Index(line, p); i >= 0 && !testCode(line[i:]) {
				return true
			}
		}
	}
	return false
}

// testCode reports whether the function named at the start of s (an import
// path, then "pkg.Func...") is test code: in a _test package, or a Test,
// Example, Fuzz or Benchmark function (or a closure in one).
func testCode(s string) bool {
	if j := strings.IndexAny(s, " \t("); j >= 0 {
		s = s[:j]
	}
	pkg, fn, _ := strings.Cut(s[strings.LastIndex(s, "/")+1:], ".")
	if strings.HasSuffix(pkg, "_test") {
		return true
	}
	for _, pre := range []string{"Test", "Example", "Fuzz", "Benchmark"} {
		if strings.HasPrefix(fn, pre) {
			return true
		}
	}
	return false
}

// labelled reports whether rec, one record of the goroutine profile, has
// the label kv ("key":"value") on its "# labels: {...}" line.
func labelled(rec, kv string) bool {
	for _, line := range strings.Split(rec, "\n") {
		if l, ok := strings.CutPrefix(line, "# labels: "); ok {
			return strings.Contains(l, kv)
		}
	}
	return false
}

// warmUp readies the driver's clients in ss: it sends 64 scripts, one
// after another, over each, on keys spread over every slot range, so that
// each client has learnt the deployment's layout and made a connection to
// every master before the case counts on its calls being quick. Each case
// has a fresh client; one that had served earlier cases was warm. (One
// after another: a burst would grow a pool whose idle connections a
// client may probe, without a deadline, on a server the case silences.)
func (e *env) warmUp(ss ...locker.Scripter) {
	e.t.Helper()
	for _, s := range ss {
		for i := range 64 {
			k := e.prefix + "{warm" + strconv.Itoa(i) + "}" // never written
			_, err := s.Eval(e.ctx, "return 1", []string{k}, nil)
			require.NoError(e.t, err, "call: Eval(return 1) on %q (warming the driver's client up)", k)
		}
	}
}

// awaitCoreIdle waits, up to 3 s, until no goroutine of the core or the
// drivers runs in the process, and fails the case if one still does: a
// quiet case that counts every goroutine of the process (goleak) calls it
// before its count starts.
func (e *env) awaitCoreIdle() {
	e.t.Helper()
	var left []string
	for deadline := time.Now().Add(3 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if left = ownGoroutines(""); len(left) == 0 || time.Now().After(deadline) {
			break
		}
	}
	if len(left) > 0 {
		e.t.Errorf("goroutine leak: %d goroutine(s) of scriptlock still running before the goroutine count starts:\n%s", len(left), strings.Join(left, "\n\n"))
	}
}

// goroutineIDs returns the ids of the process's goroutines, for
// assertNoNewCoreGoroutines.
func goroutineIDs() map[string]bool {
	ids := map[string]bool{}
	for _, g := range leak.Stacks() {
		ids[goroutineID(g)] = true
	}
	return ids
}

// assertNoNewCoreGoroutines fails t if, after a grace period of up to 5 s,
// a goroutine that is not in before (goroutineIDs) runs code of the core or
// the drivers (ownPackages), or was started by it. A quiet case calls it:
// with the process to itself, every new goroutine is the case's. The
// goroutines a driver's client starts for itself (a connection's loops, a
// pool's), which its first calls bring, are the client's to manage: a
// fresh client grows its pools as the case's concurrency asks.
func assertNoNewCoreGoroutines(t *testing.T, before map[string]bool) {
	t.Helper()
	var leaked []string
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		leaked = leaked[:0]
		for _, g := range leak.Stacks()[1:] { // the first is the caller's
			if !before[goroutineID(g)] && runsOwnCode(g) {
				leaked = append(leaked, g)
			}
		}
		if len(leaked) == 0 || time.Now().After(deadline) {
			break
		}
	}
	if len(leaked) > 0 {
		t.Errorf("goroutine leak: %d new goroutine(s) of scriptlock still running (or started by it):\n%s", len(leaked), strings.Join(leaked, "\n\n"))
	}
}

// goroutineID returns N of a stack's first line, "goroutine N [state]:".
func goroutineID(stack string) string {
	id, _, _ := strings.Cut(strings.TrimPrefix(stack, "goroutine "), " ")
	return id
}
