package conformance

import (
	"bytes"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/scriptlock/scriptlock/locker"
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
// cases have ended.
func checkGoroutines(t *testing.T, label string) {
	t.Helper()
	var leaked []string
	for deadline := time.Now().Add(3 * time.Second); ; {
		leaked = ownGoroutines(label)
		if len(leaked) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if len(leaked) > 0 {
		what := "after the case"
		if label == "" {
			what = "after every case of the deployment (a goroutine that carries no case's label: started by a timer, say)"
		}
		t.Errorf("goroutine leak: %d goroutine(s) of scriptlock still running %s:\n%s", len(leaked), what, strings.Join(leaked, "\n\n"))
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
		for _, p := range ownPackages {
			if strings.Contains(rec, p) {
				out = append(out, strings.TrimSpace(rec))
				break
			}
		}
	}
	return out
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

// warmUp readies the driver's clients in ss: it sends 64 scripts at once
// over each, on keys spread over every slot range, so that each client has
// learnt the deployment's layout and made its connections to every master
// (and started whatever goroutines of its own they run) before the case
// counts on it. Each case has a fresh client; a client that served earlier
// cases was warm already.
func (e *env) warmUp(ss ...locker.Scripter) {
	e.t.Helper()
	var wg sync.WaitGroup
	for _, s := range ss {
		for i := range 64 {
			k := e.prefix + "{warm" + strconv.Itoa(i) + "}" // never written
			wg.Go(func() {
				_, err := s.Eval(e.ctx, "return 1", []string{k}, nil)
				assert.NoError(e.t, err, "call: Eval(return 1) on %q (warming the driver's client up)", k)
			})
		}
	}
	wg.Wait()
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
