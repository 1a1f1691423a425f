package main

import (
	"fmt"
	"io"
	"math"
	"strings"
)

// drivers are scriptlock's in-tree drivers, in the order of bench.Drivers.
var drivers = []string{"goredis", "redigo", "rueidis", "valkeygo"}

// mainLibs are the libraries of the main module's rows; every other lib
// of a BenchmarkLock row (redsync, redislock, rueidislock, and their
// -tuned rows) is a peer.
var mainLibs = map[string]bool{"scriptlock": true, "scriptlock-fifo": true, "raw": true, "syncmutex": true}

// The levels of the rows the targets read (BenchmarkLock's scenarios).
var (
	contended  = []string{"op=contended", "clients=8", "hold=1ms"}
	clients64  = []string{"op=lock-unlock", "clients=64"}
	clients1   = []string{"op=lock-unlock", "clients=1"}
	semaphoreN = []string{"op=semaphore", "clients=16"}
	resign     = []string{"op=resign", "candidates=4"}
	crash      = []string{"op=crash", "candidates=4", "ttl=200ms"}
)

// crashTTL is the term TTL of the crash rows (bench.ElectCrashTTL), in ns.
const crashTTL = 200e6

// check is one target on one driver: what it demands, the figures of the
// run it was judged on, and its verdict; or, when missing is not empty,
// the rows (and units) whose figures were not found, and no verdict.
type check struct {
	target  string
	figures string
	met     bool
	missing []string
}

// judge evaluates the performance targets on rs, in a fixed order: per
// driver, the contended ones, then the uncontended (paired), the server's
// time per cycle, 64 clients, allocations and the semaphore's.
func judge(rs *results) []check {
	var cs []check
	add := func(c check) { cs = append(cs, c) }
	for _, d := range drivers {
		add(contendedP99Peer(rs, d))
		add(contendedP99FIFO(rs, d))
		add(contendedFairness(rs, d))
		add(contendedHandoffs(rs, d))
	}
	for _, d := range drivers {
		add(pairedRatio(rs, d, "xraw", 0.9))
	}
	add(pairedRatio(rs, "goredis", "xredislock", 1.0))
	for _, d := range drivers {
		add(scriptCost(rs, d))
	}
	for _, d := range drivers {
		add(throughput64(rs, d))
	}
	for _, d := range drivers {
		add(allocs(rs, d))
	}
	for _, d := range drivers {
		add(semaphoreScriptTime(rs, d))
	}
	for _, d := range drivers {
		add(semaphoreScripts(rs, d))
	}
	for _, d := range drivers {
		add(resignP99(rs, d))
		add(resignPeer(rs, d))
		add(crashP99(rs, d))
	}
	return cs
}

// figure is a median of one row's unit, with its quartiles over the
// passes (q1, q3) and how many passes it has, and its label for the table.
type figure struct {
	row    *row
	label  string
	v      float64
	q1, q3 float64
	n      int
}

// newFigure returns the figure of unit of r, and false when r has none.
func newFigure(r *row, unit string) (figure, bool) {
	q, ok := r.quartiles(unit)
	if !ok {
		return figure{}, false
	}
	return figure{row: r, label: label(r), v: q[1], q1: q[0], q3: q[2], n: r.passes(unit)}, true
}

// spread prints the figure's quartiles, " [q1–q3]", when it has two passes
// or more, and "" otherwise.
func (f figure) spread() string {
	if f.n < 2 {
		return ""
	}
	return fmt.Sprintf(" [%s–%s]", num(f.q1), num(f.q3))
}

// overlap reports whether the quartile ranges of a and b overlap (both
// with two passes or more): their difference is inside the noise between
// passes.
func overlap(a, b figure) bool {
	return a.n >= 2 && b.n >= 2 && a.q1 <= b.q3 && b.q1 <= a.q3
}

// lookup is a target's access to the rows: each missing figure is noted.
type lookup struct {
	rs      *results
	missing []string
}

// get returns the median of unit of the row of base with the given levels
// (lib and driver included), noting it as missing when absent.
func (l *lookup) get(unit, src, base string, levels ...string) figure {
	r := l.rs.find(base, levels...)
	if r != nil {
		if f, ok := newFigure(r, unit); ok {
			return f
		}
	}
	l.missing = append(l.missing, fmt.Sprintf("%s/%s %s (%s)", base, strings.Join(levels, "/"), unit, src))
	return figure{}
}

// bestPeer returns the peer row of benchmark base with levels (on
// driver, or any driver when driver is "") whose median of unit is the
// lowest (lower) or the highest, noting it as missing when there is none.
func (l *lookup) bestPeer(base, unit string, lower bool, driver string, levels ...string) figure {
	want := levels
	if driver != "" {
		want = append([]string{"driver=" + driver}, levels...)
	}
	var best figure
	for _, r := range l.rs.match(base, want...) {
		if lib := r.level("lib"); lib == "" || mainLibs[lib] {
			continue
		}
		f, ok := newFigure(r, unit)
		if !ok {
			continue
		}
		if best.row == nil || (lower && f.v < best.v) || (!lower && f.v > best.v) {
			best = f
		}
	}
	if best.row == nil {
		where := "driver=<any>"
		if driver != "" {
			where = "driver=" + driver
		}
		l.missing = append(l.missing, fmt.Sprintf("a peer row %s/lib=<peer>/%s/%s %s", base, where, strings.Join(levels, "/"), unit))
	}
	return best
}

// ok reports whether every figure was found.
func (l *lookup) ok() bool { return len(l.missing) == 0 }

// compare finishes c with the ratio a/b of two figures of unit: the
// figures it comes from (with their quartiles over the passes), the ratio
// of their medians, marked "~" when their quartile ranges overlap (a
// difference inside the noise), and met(ratio) as the verdict; with a
// figure missing, c lists what is missing instead.
func (l *lookup) compare(c check, unit string, a, b figure, met func(r float64) bool) check {
	if c.missing = l.missing; !l.ok() {
		return c
	}
	r := ratio(a.v, b.v)
	c.figures = fmt.Sprintf("%s %s%s vs %s %s%s %s: %sx", a.label, num(a.v), a.spread(), b.label, num(b.v), b.spread(), unit, ratioStr(r))
	if overlap(a, b) {
		c.figures += " ~"
	}
	c.met = met(r)
	return c
}

// label names a row in the table: "lib/driver", or its levels.
func label(r *row) string {
	lib, d := r.level("lib"), r.level("driver")
	switch {
	case lib != "" && d != "":
		return lib + "/" + d
	case lib != "":
		return lib
	}
	return r.name()
}

// sl returns the levels of lib on driver d followed by levels.
func sl(lib, d string, levels ...string) []string {
	return append([]string{"lib=" + lib, "driver=" + d}, levels...)
}

// contendedP99Peer checks scriptlock's contended wait-p99 on driver d
// against the lowest of any peer row (at most 0.5x).
func contendedP99Peer(rs *results, d string) check {
	c := check{target: fmt.Sprintf("contended (8 goroutines, 1 ms hold), %s: wait-p99 <= 0.5x the best peer's (any driver)", d)}
	l := &lookup{rs: rs}
	ours := l.get("wait-p99-ns", "main.txt", "BenchmarkLock", sl("scriptlock", d, contended...)...)
	peer := l.bestPeer("BenchmarkLock", "wait-p99-ns", true, "", contended...)
	return l.compare(c, "wait-p99-ns", ours, peer, func(r float64) bool { return r <= 0.5 })
}

// contendedP99FIFO checks scriptlock's contended wait-p99 on driver d
// against scriptlock-fifo's on d (at most 2x).
func contendedP99FIFO(rs *results, d string) check {
	c := check{target: fmt.Sprintf("contended (8 goroutines, 1 ms hold), %s: wait-p99 <= 2x scriptlock-fifo's on %s", d, d)}
	l := &lookup{rs: rs}
	ours := l.get("wait-p99-ns", "main.txt", "BenchmarkLock", sl("scriptlock", d, contended...)...)
	fifo := l.get("wait-p99-ns", "main.txt", "BenchmarkLock", sl("scriptlock-fifo", d, contended...)...)
	return l.compare(c, "wait-p99-ns", ours, fifo, func(r float64) bool { return r <= 2 })
}

// contendedFairness checks scriptlock's contended fairness on driver d
// (at least 0.9).
func contendedFairness(rs *results, d string) check {
	c := check{target: fmt.Sprintf("contended (8 goroutines, 1 ms hold), %s: fairness >= 0.9", d)}
	l := &lookup{rs: rs}
	ours := l.get("fairness", "main.txt", "BenchmarkLock", sl("scriptlock", d, contended...)...)
	if c.missing = l.missing; !l.ok() {
		return c
	}
	c.figures = fmt.Sprintf("%s fairness %s%s", ours.label, num(ours.v), ours.spread())
	c.met = ours.v >= 0.9
	return c
}

// contendedHandoffs checks scriptlock's contended handoffs/s on driver d
// against the highest of any peer row (at least 0.9x).
func contendedHandoffs(rs *results, d string) check {
	c := check{target: fmt.Sprintf("contended (8 goroutines, 1 ms hold), %s: handoffs/s >= 0.9x the best peer's (any driver)", d)}
	l := &lookup{rs: rs}
	ours := l.get("handoffs/s", "main.txt", "BenchmarkLock", sl("scriptlock", d, contended...)...)
	peer := l.bestPeer("BenchmarkLock", "handoffs/s", false, "", contended...)
	return l.compare(c, "handoffs/s", ours, peer, func(r float64) bool { return r >= 0.9 })
}

// pairedRatio checks BenchmarkPaired's ratio metric (xraw, xredislock) on
// driver d: its median over passes (each pass's figure a median over
// rounds) must be at least min.
func pairedRatio(rs *results, d, metric string, min float64) check {
	c := check{target: fmt.Sprintf("uncontended Lock+Unlock, %s: %s >= %.1f (BenchmarkPaired)", d, metric, min)}
	l := &lookup{rs: rs}
	x := l.get(metric, "paired.txt", "BenchmarkPaired", "driver="+d)
	if c.missing = l.missing; !l.ok() {
		return c
	}
	c.figures = fmt.Sprintf("%s %s%s", metric, ratioStr(x.v), x.spread())
	c.met = x.v >= min
	return c
}

// scriptCost checks BenchmarkScriptCost's cycle-us/op of scriptlock on
// driver d against raw's (at most 2x). When the run has the empty
// scripts' row, the figures add it against raw's: the part of the ratio
// any lock made of two scripts pays.
func scriptCost(rs *results, d string) check {
	c := check{target: fmt.Sprintf("server time per uncontended cycle, %s: scriptlock <= 2x raw (BenchmarkScriptCost)", d)}
	l := &lookup{rs: rs}
	ours := l.get("cycle-us/op", "cost.txt", "BenchmarkScriptCost", "lib=scriptlock", "driver="+d)
	raw := l.get("cycle-us/op", "cost.txt", "BenchmarkScriptCost", "lib=raw", "driver="+d)
	c = l.compare(c, "cycle-us/op", ours, raw, func(r float64) bool { return r <= 2 })
	if r := rs.find("BenchmarkScriptCost", "lib=empty-scripts", "driver="+d); r != nil && l.ok() {
		if v, ok := r.median("cycle-us/op"); ok {
			c.figures += fmt.Sprintf(" (two empty scripts with the same keys and arguments: %s, %sx raw)", num(v), ratioStr(ratio(v, raw.v)))
		}
	}
	return c
}

// throughput64 compares 64 clients' throughput with the best peer's on the
// same driver (1.3x on rueidis, 1.0x elsewhere); a driver no peer runs on
// is compared with the best peer of any driver, and says so.
func throughput64(rs *results, d string) check {
	min := 1.0
	if d == "rueidis" {
		min = 1.3
	}
	c := check{target: fmt.Sprintf("64 clients, %s: throughput >= %.1fx the best peer's on %s (peer ns/op / ours)", d, min, d)}
	l := &lookup{rs: rs}
	ours := l.get("ns/op", "main.txt", "BenchmarkLock", sl("scriptlock", d, clients64...)...)
	note := ""
	var peer figure
	if hasPeer(rs, d, clients64) {
		peer = l.bestPeer("BenchmarkLock", "ns/op", true, d, clients64...)
	} else {
		note = "no peer on this driver; best peer of any driver: "
		peer = l.bestPeer("BenchmarkLock", "ns/op", true, "", clients64...)
	}
	c = l.compare(c, "ns/op", peer, ours, func(r float64) bool { return r >= min })
	if c.figures != "" {
		c.figures = note + c.figures
	}
	return c
}

// hasPeer reports whether a peer row of BenchmarkLock with levels runs on
// driver d.
func hasPeer(rs *results, d string, levels []string) bool {
	for _, r := range rs.match("BenchmarkLock", append([]string{"driver=" + d}, levels...)...) {
		if lib := r.level("lib"); lib != "" && !mainLibs[lib] {
			return true
		}
	}
	return false
}

// allocs checks scriptlock's allocs/op of an uncontended cycle on
// driver d against raw's (at most 1.5x).
func allocs(rs *results, d string) check {
	c := check{target: fmt.Sprintf("allocations per uncontended cycle (1 client), %s: scriptlock <= 1.5x raw", d)}
	l := &lookup{rs: rs}
	ours := l.get("allocs/op", "main.txt", "BenchmarkLock", sl("scriptlock", d, clients1...)...)
	raw := l.get("allocs/op", "main.txt", "BenchmarkLock", sl("raw", d, clients1...)...)
	return l.compare(c, "allocs/op", ours, raw, func(r float64) bool { return r <= 1.5 })
}

// semaphoreScriptTime checks the server's time per uncontended
// Acquire+Unlock of the semaphore on driver d against the Mutex's
// Lock+Unlock (at most 1.5x), both from BenchmarkScriptCost, which
// measures the two pairs beside each other on an otherwise idle server
// (BenchmarkLock's op=semaphore and op=lock-unlock rows, minutes apart on
// a loaded machine, put the same scripts anywhere from 0.9x to 2.1x).
func semaphoreScriptTime(rs *results, d string) check {
	c := check{target: fmt.Sprintf("semaphore, 1 client, %s: Acquire+Unlock <= 1.5x the Mutex's Lock+Unlock server time (BenchmarkScriptCost)", d)}
	l := &lookup{rs: rs}
	sem := l.get("cycle-us/op", "cost.txt", "BenchmarkScriptCost", "lib=scriptlock-semaphore", "driver="+d)
	mu := l.get("cycle-us/op", "cost.txt", "BenchmarkScriptCost", "lib=scriptlock", "driver="+d)
	sem.label, mu.label = "semaphore", "mutex"
	return l.compare(c, "cycle-us/op", sem, mu, func(r float64) bool { return r <= 1.5 })
}

// semaphoreScripts checks the script calls per grant of the semaphore
// with 16 goroutines on driver d (at most 3).
func semaphoreScripts(rs *results, d string) check {
	c := check{target: fmt.Sprintf("semaphore, 16 goroutines, %s: scripts/op <= 3 (script calls per grant)", d)}
	l := &lookup{rs: rs}
	n := l.get("scripts/op", "main.txt", "BenchmarkLock", sl("scriptlock", d, semaphoreN...)...)
	if c.missing = l.missing; !l.ok() {
		return c
	}
	c.figures = fmt.Sprintf("scripts/op %s%s", num(n.v), n.spread())
	c.met = n.v <= 3
	return c
}

// resignP99 checks the time from a Resign to the next leader's Campaign
// returning, scriptlock's Election on driver d: p99 at most 5 ms.
func resignP99(rs *results, d string) check {
	return atMost(rs, fmt.Sprintf("election, %s: Resign to the next leader, p99 <= 5 ms", d), sl("scriptlock", d, resign...), 5e6)
}

// resignPeer checks the same p99 against the lowest of the peers'
// hand-written elections (any driver): at most 1.0x.
func resignPeer(rs *results, d string) check {
	c := check{target: fmt.Sprintf("election, %s: Resign to the next leader, p99 <= 1.0x the best peer's (any driver)", d)}
	l := &lookup{rs: rs}
	ours := l.get("elect-p99-ns", "elect.txt", "BenchmarkLockElect", sl("scriptlock", d, resign...)...)
	peer := l.bestPeer("BenchmarkLockElect", "elect-p99-ns", true, "", resign...)
	return l.compare(c, "elect-p99-ns", ours, peer, func(r float64) bool { return r <= 1 })
}

// crashP99 checks the time from a leader's crash to the next leader's
// Campaign returning, scriptlock's Election on driver d: p99 at most the
// TTL plus 50 ms.
func crashP99(rs *results, d string) check {
	return atMost(rs, fmt.Sprintf("election, %s: crash to the next leader, p99 <= TTL (200 ms) + 50 ms", d), sl("scriptlock", d, crash...), crashTTL+50e6)
}

// atMost checks the median elect-p99-ns of the election row with levels
// against bound (ns).
func atMost(rs *results, target string, levels []string, bound float64) check {
	c := check{target: target}
	l := &lookup{rs: rs}
	f := l.get("elect-p99-ns", "elect.txt", "BenchmarkLockElect", levels...)
	if c.missing = l.missing; !l.ok() {
		return c
	}
	c.figures = fmt.Sprintf("%s elect-p99-ns %s%s", f.label, num(f.v), f.spread())
	c.met = f.v <= bound
	return c
}

// ratio returns a/b (+Inf when b is 0 and a is not, 1 when both are).
func ratio(a, b float64) float64 {
	if b == 0 {
		if a == 0 {
			return 1
		}
		return math.Inf(1)
	}
	return a / b
}

// ratioStr prints a ratio with 2 decimals.
func ratioStr(r float64) string { return fmt.Sprintf("%.2f", r) }

// num prints a figure: whole when it is whole or above 100, 2 decimals
// from 1, 3 significant digits below.
func num(v float64) string {
	switch a := math.Abs(v); {
	case a >= 100 || a == math.Trunc(a):
		return fmt.Sprintf("%.0f", v)
	case a >= 1:
		return fmt.Sprintf("%.2f", v)
	}
	return fmt.Sprintf("%.3g", v)
}

// report prints cs as a markdown table (target | figure(s) | verdict),
// then a "no data" line per target whose rows were missing, then a count
// of each verdict.
func report(w io.Writer, cs []check) {
	fmt.Fprintln(w, "| target | figure(s), medians over passes [quartiles] | verdict |")
	fmt.Fprintln(w, "|---|---|---|")
	var met, missed int
	var none []check
	for _, c := range cs {
		if len(c.missing) > 0 {
			none = append(none, c)
			continue
		}
		v := "missed"
		if c.met {
			v, met = "met", met+1
		} else {
			missed++
		}
		fmt.Fprintf(w, "| %s | %s | %s |\n", c.target, c.figures, v)
	}
	if len(none) > 0 {
		fmt.Fprintln(w)
	}
	for _, c := range none {
		fmt.Fprintf(w, "no data: %s: %s\n", c.target, strings.Join(c.missing, "; "))
	}
	fmt.Fprintf(w, "\n%d targets: %d met, %d missed, %d without data\n", len(cs), met, missed, len(none))
	fmt.Fprintln(w, "~: the two figures' quartile ranges over the passes overlap: their difference is inside the noise")
}
