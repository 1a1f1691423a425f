package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"slices"
	"sort"
	"strings"
)

// event is one line of `go test -json` output.
type event struct {
	Action  string
	Package string
	Test    string
	Output  string
	Elapsed float64
}

// status of one rule; later values win when a rule ran more than once (the
// key-leak rule runs after each group's deployment).
type status int

const (
	unfinished status = iota // started, never ended: the run died or timed out
	skipped                  // not applicable on this server, with a reason
	passed
	failed
)

// cell is one server × driver × deployment.
type cell struct {
	server, driver, deployment string
}

// rule is one conformance rule's outcome in a cell.
type rule struct {
	name   string
	status status
	reason string // why it is not applicable, or the first failure line
}

// run is the parsed output of one server's run.
type run struct {
	server string
	cells  map[cell]map[string]*rule
	// deployments whose test failed or was skipped before any rule ran.
	empty map[cell]*rule
	// failure of the package (build error, panic, timeout) outside any rule.
	pkgFail string
	sawPkg  bool
}

// logLine matches a t.Log line in a test's output: "    file.go:12: text".
var logLine = regexp.MustCompile(`^\s+[\w./-]+\.go:\d+: (.*)$`)

// parse reads one server's `go test -json` output. A rule is a test named
// "<Test>/driver=<d>/deployment=<dep>/<rule name>" that logs its rule
// sentence ("rule: ...") before anything else, as every conformance rule
// does; its own subtests are summed up in its result.
func parse(server string, r io.Reader) (*run, error) {
	res := &run{server: server, cells: map[cell]map[string]*rule{}, empty: map[cell]*rule{}}
	out := map[string][]string{} // test -> its output lines
	isRule := map[string]bool{}
	ended := map[string]bool{}
	subFail := map[string]string{} // rule -> its first failed subtest and why
	var pkgOut []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 || line[0] != '{' {
			continue // go test's own lines (build output) when not JSON
		}
		var ev event
		if err := json.Unmarshal(line, &ev); err != nil {
			return nil, fmt.Errorf("%s: %w", server, err)
		}
		if ev.Test == "" {
			switch ev.Action {
			case "output":
				pkgOut = append(pkgOut, strings.TrimRight(ev.Output, "\n"))
			case "pass", "fail":
				res.sawPkg = true
				if ev.Action == "fail" {
					res.pkgFail = "the test binary failed"
				}
			}
			continue
		}
		parts := strings.Split(ev.Test, "/")
		if len(parts) < 3 || !strings.HasPrefix(parts[1], "driver=") || !strings.HasPrefix(parts[2], "deployment=") {
			continue
		}
		c := cell{server, strings.TrimPrefix(parts[1], "driver="), strings.TrimPrefix(parts[2], "deployment=")}
		var st status
		switch ev.Action {
		case "output":
			l := strings.TrimRight(ev.Output, "\n")
			out[ev.Test] = append(out[ev.Test], l)
			if m := logLine.FindStringSubmatch(l); m != nil && strings.HasPrefix(m[1], "rule: ") && len(parts) > 3 {
				isRule[ev.Test] = true
			}
			continue
		case "pass":
			st = passed
		case "fail":
			st = failed
		case "skip":
			st = skipped
		default:
			continue
		}
		ended[ev.Test] = true
		switch {
		case len(parts) == 3:
			// The deployment itself: it matters only when no rule ran.
			if st != passed {
				res.empty[c] = &rule{name: "(every rule)", status: st, reason: reason(out[ev.Test], st)}
			}
		case isRule[ev.Test]:
			why := reason(out[ev.Test], st)
			if sf := subFail[ev.Test]; st == failed && sf != "" {
				why = sf
			}
			res.add(c, strings.Join(parts[3:], "/"), st, why)
		case st == failed:
			for i := len(parts) - 1; i > 3; i-- {
				if rule := strings.Join(parts[:i], "/"); isRule[rule] {
					if subFail[rule] == "" {
						subFail[rule] = strings.Join(parts[i:], "/") + ": " + reason(out[ev.Test], st)
					}
					break
				}
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", server, err)
	}
	for test := range isRule {
		if !ended[test] {
			parts := strings.Split(test, "/")
			c := cell{server, strings.TrimPrefix(parts[1], "driver="), strings.TrimPrefix(parts[2], "deployment=")}
			res.add(c, strings.Join(parts[3:], "/"), unfinished, "started but never finished (the run died or timed out)")
		}
	}
	for c := range res.empty {
		if len(res.cells[c]) > 0 {
			delete(res.empty, c) // rules ran: they carry the result
		}
	}
	if !res.sawPkg {
		res.pkgFail = "no result for the package (the run was killed?)"
	}
	if res.pkgFail != "" {
		for _, l := range pkgOut {
			if strings.HasPrefix(l, "panic:") || strings.Contains(l, "goleak") || strings.HasPrefix(l, "leak: ") || strings.Contains(l, "build failed") || strings.Contains(l, "setup failed") {
				res.pkgFail += ": " + strings.TrimSpace(l)
				break
			}
		}
	}
	return res, nil
}

// add records a rule's result in c. A rule that ran more than once (the
// key-leak rule runs for each group's deployment) failed if any run
// failed, passed if any run passed, and is not applicable otherwise.
func (r *run) add(c cell, name string, st status, why string) {
	rules := r.cells[c]
	if rules == nil {
		rules = map[string]*rule{}
		r.cells[c] = rules
	}
	ru := rules[name]
	if ru == nil {
		rules[name] = &rule{name: name, status: st, reason: why}
		return
	}
	if st == unfinished || ru.status == unfinished || st > ru.status {
		if ru.status != failed && ru.status != unfinished || st == unfinished {
			ru.status, ru.reason = st, why
		}
	}
}

// reason returns why a test was skipped (its last log line that is not the
// rule sentence) or the gist of its failure (testify's Error and Messages,
// or the last log line).
func reason(lines []string, st status) string {
	var logs, gist []string
	for i, l := range lines {
		t := strings.TrimSpace(l)
		if m := logLine.FindStringSubmatch(l); m != nil {
			if x := strings.TrimSpace(m[1]); x != "" && !strings.HasPrefix(x, "rule: ") && !strings.HasPrefix(x, "server: ") {
				logs = append(logs, x)
			}
			continue
		}
		for _, k := range []string{"Error:", "Messages:"} {
			if v, ok := strings.CutPrefix(t, k); ok {
				v = strings.TrimSpace(v)
				if (v == "" || strings.HasSuffix(v, ":")) && i+1 < len(lines) {
					// "Received unexpected error:": the error is on the next line.
					v = strings.TrimSpace(lines[i+1])
				}
				gist = append(gist, v)
			}
		}
	}
	switch {
	case st == failed && len(gist) > 0:
		return truncate(strings.Join(gist, " / "))
	case len(logs) > 0:
		return truncate(logs[len(logs)-1])
	}
	return ""
}

func truncate(s string) string {
	const max = 300
	if len(s) > max {
		return s[:max] + "…"
	}
	return s
}

// counts of a cell.
type counts struct {
	passed, failed, na int
	notes              []string // "not applicable" and "failed" lines
}

func (r *run) count(c cell) counts {
	var n counts
	if e := r.empty[c]; e != nil {
		if e.status == skipped {
			n.na++
			n.notes = append(n.notes, fmt.Sprintf("not applicable: every rule: %s", e.reason))
		} else {
			n.failed++
			n.notes = append(n.notes, fmt.Sprintf("failed before any rule ran: %s", e.reason))
		}
	}
	names := make([]string, 0, len(r.cells[c]))
	for name := range r.cells[c] {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		ru := r.cells[c][name]
		switch ru.status {
		case passed:
			n.passed++
		case skipped:
			n.na++
			n.notes = append(n.notes, fmt.Sprintf("not applicable: %s: %s", name, ru.reason))
		default:
			n.failed++
			n.notes = append(n.notes, fmt.Sprintf("failed: %s: %s", name, ru.reason))
		}
	}
	return n
}

// depOrder orders deployments: standalone, cluster, then any other.
func depOrder(d string) int {
	switch d {
	case "standalone":
		return 0
	case "cluster":
		return 1
	}
	return 2
}

// cellsOf returns the run's cells in a stable order: drivers by name,
// standalone before cluster.
func (r *run) cellsOf() []cell {
	seen := map[cell]bool{}
	var cs []cell
	for c := range r.cells {
		seen[c] = true
		cs = append(cs, c)
	}
	for c := range r.empty {
		if !seen[c] {
			cs = append(cs, c)
		}
	}
	slices.SortFunc(cs, func(a, b cell) int {
		if a.driver != b.driver {
			return strings.Compare(a.driver, b.driver)
		}
		if x, y := depOrder(a.deployment), depOrder(b.deployment); x != y {
			return x - y
		}
		return strings.Compare(a.deployment, b.deployment)
	})
	return cs
}

// report writes the summary table (a row per server and deployment, a
// column per driver, each cell the rules passed, failed and not
// applicable), the notes on every rule that failed or was not applicable,
// and a closing line ("compat: 540 passed, 0 failed, 6 skipped", skipped
// being not applicable). It reports whether every rule passed or was not
// applicable, and every driver ran on every server and deployment.
func report(w io.Writer, runs []*run) (ok bool) {
	ok = true
	var total counts
	var drivers, deployments []string
	for _, r := range runs {
		for _, c := range r.cellsOf() {
			if !slices.Contains(drivers, c.driver) {
				drivers = append(drivers, c.driver)
			}
			if !slices.Contains(deployments, c.deployment) {
				deployments = append(deployments, c.deployment)
			}
		}
	}
	sort.Strings(drivers)
	slices.SortStableFunc(deployments, func(a, b string) int { return depOrder(a) - depOrder(b) })

	fmt.Fprintf(w, "| server | deployment | %s |\n", strings.Join(drivers, " | "))
	fmt.Fprintf(w, "|---|---|%s\n", strings.Repeat("---|", len(drivers)))
	var notes []string
	for _, r := range runs {
		if len(r.cellsOf()) == 0 {
			fmt.Fprintf(w, "| %s | — |%s\n", r.server, strings.Repeat(" did not run |", len(drivers)))
			total.failed++
			notes = append(notes, fmt.Sprintf("- %s: no rule ran: %s", r.server, r.pkgFail))
			ok = false
			continue
		}
		runFailed := false
		for _, dep := range deployments {
			row := []string{r.server, dep}
			for _, d := range drivers {
				c := cell{r.server, d, dep}
				if r.cells[c] == nil && r.empty[c] == nil {
					row = append(row, "did not run")
					notes = append(notes, fmt.Sprintf("- %s, %s, %s: did not run", r.server, d, dep))
					total.failed++
					ok, runFailed = false, true
					continue
				}
				n := r.count(c)
				total.passed, total.failed, total.na = total.passed+n.passed, total.failed+n.failed, total.na+n.na
				text := fmt.Sprintf("%d passed", n.passed)
				if n.failed > 0 {
					text += fmt.Sprintf(", **%d failed**", n.failed)
					ok, runFailed = false, true
				}
				if n.na > 0 {
					text += fmt.Sprintf(", %d not applicable", n.na)
				}
				row = append(row, text)
				for _, note := range n.notes {
					notes = append(notes, fmt.Sprintf("- %s, %s, %s: %s", r.server, d, dep, note))
				}
			}
			fmt.Fprintf(w, "| %s |\n", strings.Join(row, " | "))
		}
		if r.pkgFail != "" && !runFailed {
			// Not explained by a failed rule (a leak check in TestMain, a
			// panic, a timeout).
			ok = false
			notes = append(notes, fmt.Sprintf("- %s: %s", r.server, r.pkgFail))
			total.failed++
		}
	}
	if len(notes) > 0 {
		fmt.Fprintln(w)
		for _, n := range notes {
			fmt.Fprintln(w, n)
		}
	}
	fmt.Fprintf(w, "\ncompat: %d passed, %d failed, %d skipped\n", total.passed, total.failed, total.na)
	return ok
}
