package conformance

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
)

// WriteVerdict writes the verdict of every Run and RunGroups of the
// process so far to w: one table, a row per rule and a column per driver
// and deployment, each cell "pass", "FAIL" or "n/a [n]" (not applicable;
// the reason is footnote n), headed by each column's server, version and
// profile (see EnvSuite). Groups whose rules all passed everywhere take one
// row; within the others, only the rules that did not pass everywhere get
// a row of their own. A test binary calls it from TestMain after m.Run
// (go test shows it with -v, when a test failed, or when run in the
// package's directory). It returns w's error.
func WriteVerdict(w io.Writer) error {
	_, err := io.WriteString(w, verdicts.table())
	return err
}

// verdicts holds the outcome of every rule that ran in the process.
var verdicts = &verdictBook{cells: map[verdictKey]string{}, reasons: map[verdictKey]string{}}

type verdictBook struct {
	mu      sync.Mutex
	cols    []*verdictCol
	cells   map[verdictKey]string // "pass", "unjudged", "late", "FAIL", "n/a"
	reasons map[verdictKey]string // why "n/a"
	timings []timingRow           // timing checks that did not pass
}

// verdictCol is a column: a driver on a kind of deployment in a profile.
type verdictCol struct {
	driver, deployment string
	owned              bool
	profile, why       string
	servers            []string // distinct "Redis 7.0.15 at host:port"-like names
}

type verdictKey struct {
	col  *verdictCol
	rule string
}

func (c *verdictCol) label() string {
	l := c.driver + "/" + c.deployment
	if !c.owned {
		l += "*"
	}
	if c.profile != ProfileFull {
		l += " " + c.profile
	}
	return l
}

// column returns d's column, adding it, and d's server, when new.
func (b *verdictBook) column(d *deployment) *verdictCol {
	for _, c := range b.cols {
		if c.driver == d.driver.Name && c.deployment == d.name && c.owned == d.owned && c.profile == d.profile {
			return c
		}
	}
	c := &verdictCol{driver: d.driver.Name, deployment: d.name, owned: d.owned, profile: d.profile, why: d.profileWhy}
	b.cols = append(b.cols, c)
	return c
}

// deployment registers d (its column and server).
func (b *verdictBook) deployment(d *deployment) {
	b.mu.Lock()
	defer b.mu.Unlock()
	c := b.column(d)
	s := d.server
	if s == "" {
		s = "server version unknown"
	}
	if !d.owned {
		s += " at " + strings.Join(d.addrs, ",")
		if d.conn.TLS != nil {
			s += " (TLS)"
		}
		if d.conn.Username != "" {
			s += " as " + d.conn.Username
		}
		if p := strings.TrimSuffix(d.names, runPrefix); p != "" {
			s += " under " + p
		}
	}
	if !slices.Contains(c.servers, s) {
		c.servers = append(c.servers, s)
	}
}

// add records how the rule's subtest t on d ended: failed its own checks
// (safetyFailed), exceeded a time bound, passed with a bound not judged
// (notes, see within), skipped (with reason, when known), or passed. A rule
// run more than once in a column shows its worst outcome: FAIL, late,
// unjudged, pass, n/a.
func (b *verdictBook) add(d *deployment, rule string, t *testing.T, reason string, notes []timingNote, safetyFailed bool) {
	st := "pass"
	switch {
	case safetyFailed:
		st = "FAIL"
	case t.Failed() && len(notes) > 0:
		st = "late"
	case t.Failed():
		st = "FAIL"
	case len(notes) > 0:
		st = "unjudged"
	case t.Skipped():
		st = "n/a"
		if reason == "" {
			reason = "skipped (see the test's log)"
		}
	}
	b.record(d, rule, st, reason)
	b.mu.Lock()
	defer b.mu.Unlock()
	col := b.column(d)
	for _, n := range notes {
		b.timings = append(b.timings, timingRow{col: col, rule: rule, note: n})
	}
}

// timingRow is a timing check that did not pass, for the timing section.
type timingRow struct {
	col  *verdictCol
	rule string
	note timingNote
}

// cellRank orders a rule's outcomes: a rule run twice shows its worst.
var cellRank = map[string]int{"": 0, "n/a": 1, "pass": 2, "unjudged": 3, "late": 4, "FAIL": 5}

// record records the outcome st (see add; "n/a" with reason) of rule on d.
func (b *verdictBook) record(d *deployment, rule, st, reason string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	k := verdictKey{b.column(d), rule}
	if cellRank[st] > cellRank[b.cells[k]] {
		b.cells[k] = st
		if st == "n/a" {
			b.reasons[k] = reason
		}
	}
}

// table renders the verdict (see WriteVerdict).
func (b *verdictBook) table() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.cols) == 0 {
		return ""
	}
	var out strings.Builder
	out.WriteString("== scriptlock conformance verdict\n")
	external := false
	for _, c := range b.cols {
		fmt.Fprintf(&out, "   %s: %s; profile %s (%s)\n", c.label(), strings.Join(c.servers, "; "), c.profile, c.why)
		external = external || !c.owned
	}
	if external {
		out.WriteString("   (* a deployment the suite did not start)\n")
	}

	// Rows: the rules in run order, then anything else that ran.
	var rules []string
	for _, c := range allCases() {
		rules = append(rules, c.name)
	}
	rules = append(rules, "Leak/NoKeysLeft")
	seen := map[string]bool{}
	for k := range b.cells {
		seen[k.rule] = true
	}
	for r := range seen {
		if !slices.Contains(rules, r) {
			rules = append(rules, r)
		}
	}

	var notes []string // footnotes, numbered from 1
	note := func(reason string) int {
		if i := slices.Index(notes, reason); i >= 0 {
			return i + 1
		}
		notes = append(notes, reason)
		return len(notes)
	}
	type row struct {
		name  string
		cells []string
	}
	var rows []row
	var groups []string
	byGroup := map[string][]string{}
	for _, r := range rules {
		if !seen[r] {
			continue
		}
		g, _, _ := strings.Cut(r, "/")
		if _, ok := byGroup[g]; !ok {
			groups = append(groups, g)
		}
		byGroup[g] = append(byGroup[g], r)
	}
	totals := make([]map[string]int, len(b.cols))
	for i := range totals {
		totals[i] = map[string]int{}
	}
	for _, g := range groups {
		counts := make([]map[string]int, len(b.cols))
		var odd []row
		for _, r := range byGroup[g] {
			cells := make([]string, len(b.cols))
			allPass := true
			for i, c := range b.cols {
				k := verdictKey{c, r}
				st := b.cells[k]
				if counts[i] == nil {
					counts[i] = map[string]int{}
				}
				if st != "" {
					counts[i][st]++
					totals[i][st]++
				}
				switch st {
				case "":
					cells[i] = "-"
				case "n/a":
					cells[i] = fmt.Sprintf("n/a [%d]", note(b.reasons[k]))
				default:
					cells[i] = st
				}
				allPass = allPass && (st == "pass" || st == "")
			}
			if !allPass {
				odd = append(odd, row{"  " + r, cells})
			}
		}
		cells := make([]string, len(b.cols))
		for i := range b.cols {
			cells[i] = countCell(counts[i])
		}
		rows = append(rows, row{fmt.Sprintf("%s (%d)", g, len(byGroup[g])), cells})
		rows = append(rows, odd...)
	}
	cells := make([]string, len(b.cols))
	for i := range b.cols {
		cells[i] = countCell(totals[i])
	}
	rows = append(rows, row{"total", cells})

	head := row{"rule", make([]string, len(b.cols))}
	for i, c := range b.cols {
		head.cells[i] = c.label()
	}
	widths := make([]int, len(b.cols)+1)
	for _, r := range append([]row{head}, rows...) {
		widths[0] = max(widths[0], len(r.name))
		for i, c := range r.cells {
			widths[i+1] = max(widths[i+1], len(c))
		}
	}
	line := func(r row) {
		var l strings.Builder
		fmt.Fprintf(&l, "%-*s", widths[0], r.name)
		for i, c := range r.cells {
			fmt.Fprintf(&l, " | %-*s", widths[i+1], c)
		}
		out.WriteString(strings.TrimRight(l.String(), " ") + "\n")
	}
	line(head)
	for _, r := range rows {
		line(r)
	}
	for i, n := range notes {
		fmt.Fprintf(&out, "[%d] %s\n", i+1, n)
	}
	b.bottomLine(&out)
	return out.String()
}

// bottomLine writes the two sections of the verdict, safety and timing,
// each naming its rules, and the line a reader looks for: whether the
// deployments certified are fit for scriptlock.
func (b *verdictBook) bottomLine(out *strings.Builder) {
	var failed []string
	ran, na := 0, 0
	for k, st := range b.cells {
		switch st {
		case "FAIL":
			failed = append(failed, k.rule+" on "+k.col.label())
			ran++
		case "n/a":
			na++
		default:
			ran++
		}
	}
	slices.Sort(failed)
	out.WriteString("== safety and timing\n")
	if len(failed) == 0 {
		fmt.Fprintf(out, "safety: PASS, %d rule runs (exclusion, fence order, holds within their bounds, no late call taking effect, nothing left behind)\n", ran)
	} else {
		fmt.Fprintf(out, "safety: FAIL, %d of %d rule runs:\n", len(failed), ran)
		for _, f := range failed {
			fmt.Fprintf(out, "  %s\n", f)
		}
	}
	var exceeded, unjudged []string
	for _, r := range b.timings {
		line := fmt.Sprintf("  %s on %s: %s", r.rule, r.col.label(), r.note.what)
		if r.note.kind == timingExceeded {
			exceeded = append(exceeded, line)
		} else {
			unjudged = append(unjudged, line)
		}
	}
	fmt.Fprintf(out, "%s\n", meter.summary())
	switch {
	case len(exceeded) == 0 && len(unjudged) == 0:
		fmt.Fprintf(out, "timing: clean (every time bound and liveness check held)\n")
	default:
		fmt.Fprintf(out, "timing: %d bounds exceeded while the machine kept time, %d not judged on this machine (lag at or above %v)\n", len(exceeded), len(unjudged), lagLimit)
		for _, l := range exceeded {
			fmt.Fprintf(out, "  exceeded:%s\n", l)
		}
		for _, l := range unjudged {
			fmt.Fprintf(out, "  not judged:%s\n", l)
		}
	}
	verdict := "yes"
	switch {
	case len(failed) > 0:
		verdict = "NO — safety FAIL"
	case len(exceeded) > 0:
		verdict = "NO — safety PASS, timing: a bound exceeded while the machine kept time"
	case len(unjudged) > 0:
		verdict = fmt.Sprintf("yes — safety PASS, timing: %d bounds not judged on this machine (rerun on a quieter one to judge them)", len(unjudged))
	default:
		verdict += " — safety PASS, timing clean"
	}
	if na > 0 {
		verdict += fmt.Sprintf("; %d rule runs not applicable (footnotes above: the profile or deployment leaves them out)", na)
	}
	for _, c := range b.cols {
		fmt.Fprintf(out, "certified: %s: %s; profile %s\n", c.label(), strings.Join(c.servers, "; "), c.profile)
	}
	fmt.Fprintf(out, "fit for scriptlock: %s\n", verdict)
}

// countCell renders a group's counts: "12 pass", "10 pass 2 n/a", ...
func countCell(c map[string]int) string {
	var parts []string
	for _, st := range []string{"pass", "unjudged", "late", "FAIL", "n/a"} {
		if c[st] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", c[st], st))
		}
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, " ")
}
