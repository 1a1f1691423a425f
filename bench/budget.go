package bench

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// DefaultRowBudget bounds one run of a benchmark leaf (set-up, timed part
// and clean-up; the testing package runs a leaf a few times while it
// sizes b.N, and each run gets the budget), on top of any time the
// scenario asks for itself (op=refresh: its window of b.N rounds). Every
// acquisition a scenario makes carries the run's context, whose deadline
// is the budget: a row that does not finish in it is stopped and fails as
// "did not finish", naming what its goroutines were waiting in, and the
// benchmark binary goes on with the next row. The environment variable
// BENCH_ROW_BUDGET (a time.Duration, such as 2m) replaces it.
const DefaultRowBudget = 30 * time.Second

// EnvRowBudget names the environment variable that replaces
// DefaultRowBudget.
const EnvRowBudget = "BENCH_ROW_BUDGET"

// rowGrace is how long a stopped row may take to return once its context
// ended, before it is abandoned (its goroutines are left behind, stuck in
// whatever ignored the context).
const rowGrace = 10 * time.Second

// rowBudget returns the budget of one run of a leaf: BENCH_ROW_BUDGET or
// DefaultRowBudget.
func rowBudget() (time.Duration, error) {
	v := os.Getenv(EnvRowBudget)
	if v == "" {
		return DefaultRowBudget, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%s=%q: want a positive duration such as 30s or 2m", EnvRowBudget, v)
	}
	return d, nil
}

// DidNotFinishError is the error of a scenario run stopped at its budget.
type DidNotFinishError struct {
	// Budget is the time the run was given.
	Budget time.Duration
	// WaitingIn summarizes where the run's goroutines were when the budget
	// passed: the most common places first, each with its count.
	WaitingIn string
	// Abandoned reports that the run had not returned rowGrace after its
	// context ended: its goroutines were left behind.
	Abandoned bool
	// Err is what the run returned once stopped (nil when abandoned).
	Err error
}

func (e *DidNotFinishError) Error() string {
	s := fmt.Sprintf("did not finish within its budget of %v; waiting in: %s", e.Budget.Round(time.Millisecond), e.WaitingIn)
	if e.Abandoned {
		return s + fmt.Sprintf("; still running %v after its context ended (abandoned)", rowGrace)
	}
	if e.Err != nil {
		s += "; stopped with: " + e.Err.Error()
	}
	return s
}

func (e *DidNotFinishError) Unwrap() error { return e.Err }

// runBounded calls f with a context derived from ctx that ends after
// budget. When the budget passes first, it records where the goroutines
// of f are waiting, ends the context, waits up to rowGrace for f to
// return, and returns a *DidNotFinishError; otherwise it returns f's
// error. f runs on another goroutine, so it must not call t.FailNow or
// b.FailNow.
func runBounded(ctx context.Context, budget time.Duration, f func(ctx context.Context) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- f(ctx) }()
	timer := time.NewTimer(budget)
	defer timer.Stop()
	select {
	case err := <-done:
		return err
	case <-timer.C:
	}
	dnf := &DidNotFinishError{Budget: budget, WaitingIn: waitingIn()}
	cancel()
	select {
	case dnf.Err = <-done:
	case <-time.After(rowGrace):
		dnf.Abandoned = true
	}
	return dnf
}

// budgetContext returns a context that ends after the row budget, for a
// benchmark that runs its loop on the benchmark's goroutine (Paired,
// ScriptCost), and a func that reports, once the loop returned an error,
// whether the budget had passed and where the goroutines were waiting.
func budgetContext(ctx context.Context, extra time.Duration) (context.Context, func(error) error, context.CancelFunc) {
	budget, err := rowBudget()
	if err != nil {
		budget = DefaultRowBudget
	}
	budget += extra
	ctx, cancel := context.WithCancel(ctx)
	var (
		mu  sync.Mutex
		dnf *DidNotFinishError
	)
	t := time.AfterFunc(budget, func() {
		d := &DidNotFinishError{Budget: budget, WaitingIn: waitingIn()}
		mu.Lock()
		dnf = d
		mu.Unlock()
		cancel()
	})
	explain := func(err error) error {
		mu.Lock()
		defer mu.Unlock()
		if dnf == nil || err == nil {
			return err
		}
		dnf.Err = err
		return dnf
	}
	return ctx, explain, func() { t.Stop(); cancel() }
}

// waitingIn summarizes the goroutines that run benchmark code (a frame of
// this module's packages on their stack, the runner itself left out), by
// the place each is blocked in: the innermost frame outside the runtime
// and the standard library, with the benchmark frame that called into it.
// The three most common places are listed, with their counts.
func waitingIn() string {
	var buf bytes.Buffer
	if err := pprof.Lookup("goroutine").WriteTo(&buf, 1); err != nil {
		return "(no goroutine profile: " + err.Error() + ")"
	}
	counts := map[string]int{}
	for _, g := range parseProfile(buf.Bytes()) {
		if place := blockedIn(g.frames); place != "" {
			counts[place] += g.count
		}
	}
	if len(counts) == 0 {
		return "(no goroutine of the scenario found)"
	}
	places := make([]string, 0, len(counts))
	for p := range counts {
		places = append(places, p)
	}
	slices.SortFunc(places, func(a, b string) int {
		return cmp.Or(counts[b]-counts[a], strings.Compare(a, b))
	})
	var parts []string
	for i, p := range places {
		if i == 3 {
			parts = append(parts, fmt.Sprintf("and %d other places", len(places)-3))
			break
		}
		parts = append(parts, fmt.Sprintf("%d goroutines in %s", counts[p], p))
	}
	return strings.Join(parts, "; ")
}

// profFrame is one frame of a goroutine profile record: the function and
// its file:line.
type profFrame struct{ fn, file string }

// profRecord is one record of a goroutine profile (debug=1): how many
// goroutines share the stack, and the stack, innermost first.
type profRecord struct {
	count  int
	frames []profFrame
}

// parseProfile reads a goroutine profile written with debug=1.
func parseProfile(p []byte) []profRecord {
	var recs []profRecord
	sc := bufio.NewScanner(bytes.NewReader(p))
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		if n, rest, ok := strings.Cut(line, " @ "); ok && rest != "" {
			if c, err := strconv.Atoi(n); err == nil {
				recs = append(recs, profRecord{count: c})
			}
			continue
		}
		// "#\t0x47e2d1\tpkg.fn+0x31\t\t/path/file.go:403"
		f := strings.Fields(line)
		if len(recs) == 0 || len(f) < 4 || f[0] != "#" {
			continue
		}
		fn, _, _ := strings.Cut(f[2], "+0x")
		recs[len(recs)-1].frames = append(recs[len(recs)-1].frames, profFrame{fn: fn, file: f[3]})
	}
	return recs
}

// modulePath prefixes the functions of this repository's packages.
const modulePath = "github.com/scriptlock/scriptlock/"

// blockedIn names where a goroutine of the scenario is blocked, or returns
// "" for a goroutine that runs no benchmark code (a client's own reader,
// the testing package) or is the runner.
func blockedIn(frames []profFrame) string {
	caller := -1
	for i, f := range frames {
		if strings.Contains(f.fn, "bench.runBounded") || strings.Contains(f.fn, "bench.waitingIn") || strings.Contains(f.fn, "bench.budgetContext") {
			return ""
		}
		if caller < 0 && strings.HasPrefix(f.fn, modulePath+"bench") {
			caller = i
		}
	}
	if caller < 0 {
		return ""
	}
	for _, f := range frames[:caller] {
		if strings.HasPrefix(f.fn, "testing.") {
			return "" // a parent benchmark or test, waiting for its subtests
		}
	}
	inner := -1
	for i := range caller + 1 {
		if !stdlib(frames[i].fn) {
			inner = i
			break
		}
	}
	if inner < 0 {
		inner = 0
	}
	place := fmt.Sprintf("%s (%s)", frames[inner].fn, filepath.Base(frames[inner].file))
	if inner != caller {
		place += fmt.Sprintf(", called from %s (%s)", strings.TrimPrefix(frames[caller].fn, modulePath), filepath.Base(frames[caller].file))
	}
	return place
}

// stdlib reports whether fn belongs to the runtime or the standard library
// (a first path element without a dot).
func stdlib(fn string) bool {
	first, _, ok := strings.Cut(fn, "/")
	if !ok {
		first, _, _ = strings.Cut(fn, ".")
	}
	return !strings.Contains(first, ".")
}
