// Package leak finds goroutines a test left running, on the standard
// library only (runtime.Stack of every goroutine): the subset of
// go.uber.org/goleak the repository's tests use, with its names. Like
// goleak, it retries for a while (up to two seconds) before it reports a
// leak, so goroutines that are on their way out are not counted, and it
// never counts the goroutines of the testing package or the runtime's
// signal handling.
package leak

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Stacks returns the stack of every goroutine, the caller's first, as
// runtime.Stack prints them ("goroutine N [state]:", the frames, and
// "created by F in goroutine M"). Each runtime.Stack call stops the world,
// and the conformance suite polls this while many goroutines run: the
// buffer starts at 1 MiB, so that one call is usually enough.
func Stacks() []string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return strings.Split(string(buf[:n]), "\n\n")
		}
		buf = make([]byte, 2*len(buf))
	}
}

// Option changes which goroutines count as leaked.
type Option func(*opts)

type opts struct {
	ignoreIDs   map[int]bool
	ignoreFuncs []string
	maxWait     time.Duration
}

// IgnoreAnyFunction ignores goroutines with f (a fully qualified function
// name, as a stack trace prints it: "pkg/path.(*T).method.func2") on
// their stack.
func IgnoreAnyFunction(f string) Option {
	return func(o *opts) { o.ignoreFuncs = append(o.ignoreFuncs, f) }
}

// IgnoreCurrent ignores every goroutine running when it is called.
func IgnoreCurrent() Option {
	ids := map[int]bool{}
	for _, g := range stacks() {
		ids[g.id] = true
	}
	return func(o *opts) {
		for id := range ids {
			o.ignoreIDs[id] = true
		}
	}
}

// TestingT is what VerifyNone needs of a *testing.T.
type TestingT interface {
	Error(args ...any)
}

// TestingM is what VerifyTestMain needs of a *testing.M.
type TestingM interface {
	Run() int
}

// Find returns an error naming every goroutine other than the caller's
// (and the ignored ones) that is still running after the retries, or nil.
func Find(options ...Option) error {
	o := &opts{ignoreIDs: map[int]bool{}, maxWait: 2 * time.Second}
	for _, opt := range options {
		opt(o)
	}
	self := currentID()
	deadline := time.Now().Add(o.maxWait)
	for delay := time.Microsecond; ; delay = min(2*delay, 100*time.Millisecond) {
		var leaked []goroutine
		for _, g := range stacks() {
			if g.id == self || o.ignoreIDs[g.id] || ignoredByDefault(g) || g.hasAny(o.ignoreFuncs) {
				continue
			}
			leaked = append(leaked, g)
		}
		if len(leaked) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			var b strings.Builder
			fmt.Fprintf(&b, "found unexpected goroutines:\n")
			for _, g := range leaked {
				fmt.Fprintf(&b, "\n%s\n", g.full)
			}
			return fmt.Errorf("%s", b.String())
		}
		time.Sleep(delay)
	}
}

// VerifyNone fails t if Find finds leaked goroutines.
func VerifyNone(t TestingT, options ...Option) {
	if h, ok := t.(interface{ Helper() }); ok {
		h.Helper()
	}
	if err := Find(options...); err != nil {
		t.Error(err)
	}
}

// VerifyTestMain runs the tests with m.Run, then, if they passed, exits
// with status 1 and the leaked goroutines on stderr if Find finds any; it
// exits with the tests' status otherwise. Call it from TestMain.
func VerifyTestMain(m TestingM, options ...Option) {
	code := m.Run()
	if code == 0 {
		if err := Find(options...); err != nil {
			fmt.Fprintf(os.Stderr, "leak: errors on successful test run: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// goroutine is one goroutine's record in runtime.Stack's output.
type goroutine struct {
	id    int
	state string
	funcs []string // the functions on its stack, innermost first, then its creator
	full  string
}

func (g goroutine) hasAny(funcs []string) bool {
	for _, f := range g.funcs {
		if slices.Contains(funcs, f) {
			return true
		}
	}
	return false
}

func (g goroutine) first() string {
	if len(g.funcs) == 0 {
		return ""
	}
	return g.funcs[0]
}

// ignoredByDefault: the testing package's own goroutines (a test's
// runner waiting for its subtests, parallel tests waiting to start) and
// the runtime's signal handling.
func ignoredByDefault(g goroutine) bool {
	f := g.first()
	switch {
	case strings.HasPrefix(f, "testing."):
		return true
	case f == "os/signal.signal_recv", f == "os/signal.loop", f == "runtime.ensureSigM", f == "runtime/trace.Start.func1":
		return true
	}
	return false
}

func currentID() int {
	buf := make([]byte, 64)
	buf = buf[:runtime.Stack(buf, false)]
	id, _ := parseHeader(string(buf))
	return id
}

// parseHeader parses "goroutine 12 [chan receive, 2 minutes]:".
func parseHeader(s string) (id int, state string) {
	line, _, _ := strings.Cut(s, "\n")
	rest, ok := strings.CutPrefix(line, "goroutine ")
	if !ok {
		return -1, ""
	}
	num, rest, _ := strings.Cut(rest, " ")
	id, err := strconv.Atoi(num)
	if err != nil {
		return -1, ""
	}
	state = strings.TrimSuffix(strings.TrimPrefix(rest, "["), "]:")
	state, _, _ = strings.Cut(state, ",")
	return id, state
}

func stacks() []goroutine {
	var out []goroutine
	for _, rec := range Stacks() {
		rec = strings.TrimSpace(rec)
		if rec == "" {
			continue
		}
		id, state := parseHeader(rec)
		if id < 0 {
			continue
		}
		g := goroutine{id: id, state: state, full: rec}
		lines := strings.Split(rec, "\n")[1:]
		for _, l := range lines {
			if strings.HasPrefix(l, "\t") || l == "" {
				continue // a file:line
			}
			if c, ok := strings.CutPrefix(l, "created by "); ok {
				c, _, _ = strings.Cut(c, " in goroutine ")
				g.funcs = append(g.funcs, c)
				continue
			}
			if i := strings.LastIndexByte(l, '('); i > 0 {
				l = l[:i]
			}
			g.funcs = append(g.funcs, l)
		}
		out = append(out, g)
	}
	return out
}
