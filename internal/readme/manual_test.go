package readme

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The pages a user reads describe the software as it is: a manual, not a
// development log. These rules find what a log leaves behind. Each is a
// regular expression (case-insensitive) and the reason a reader gets.
var manualRules = []struct {
	re    *regexp.Regexp
	why   string
	prose bool // matched on the line without backquotes and link targets
}{
	// Tracker numbers: a user cannot see the tracker.
	{regexp.MustCompile(`(?i)\bissues?\s*#?\s*\d+`), "names a tracker issue", false},
	{regexp.MustCompile(`(?i)(^|[\s(\[,;])#\d+\b`), "names a tracker number (#N)", false},
	{regexp.MustCompile(`(?i)\bissue\s*#`), "names a tracker issue", false},
	{regexp.MustCompile(`(?i)\btracker\b`), "mentions the tracker", false},
	{regexp.MustCompile(`(?i)\b(pull request|PR)\s*#?\d+`), "names a pull request", false},
	{regexp.MustCompile(`(?i)\bCI run\s*#?\d+`), "names a CI run by number", false},
	// Dated asides and development history.
	{regexp.MustCompile(`(?i)\bthat (morning|afternoon|evening|night|day)\b`), "a dated aside", false},
	{regexp.MustCompile(`(?i)\b(this|next|last|previous) (session|morning|afternoon|evening)\b`), "a dated aside", false},
	{regexp.MustCompile(`(?i)\bthis run's\b`), "development history (\"this run's ...\")", false},
	{regexp.MustCompile(`(?i)\b(before|since|until|after) this run\b`), "development history (before/since this run)", false},
	{regexp.MustCompile(`(?i)\b(its|our|the) last run\b`), "development history (\"the last run\")", false},
	{regexp.MustCompile(`(?i)\bthe (run|session|change) before\b`), "development history (\"the run before\")", false},
	{regexp.MustCompile(`(?i)\b(earlier|previous|older) runs?\b`), "development history (earlier runs)", false},
	{regexp.MustCompile(`(?i)\bin the next run\b`), "development history (\"the next run\")", false},
	{regexp.MustCompile(`(?i)\b(the )?final code\b`), "development history (\"the final code\")", false},
	{regexp.MustCompile(`(?i)\b(yesterday|last night|this morning|this afternoon)\b`), "a dated aside", false},
	// The driver count.
	{regexp.MustCompile(`(?i)\b(all )?(three|3) (in-tree )?(drivers|clients|native drivers)\b`), "there are four drivers (go-redis, redigo, rueidis, valkey-go)", true},
	{regexp.MustCompile(`(?i)\bredigo,? (and|or) rueidis\b`), "lists the drivers without valkey-go", true},
}

// dateRE matches a calendar date (2026-11-27, 27 November 2026, November
// 27). A results page may name its run's date in its header, the lines
// before its first "## " heading; no other page, and no other line, may.
var dateRE = regexp.MustCompile(`(?i)\b20\d\d-[01]\d-[0-3]\d\b|\b\d{1,2} (jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]* 20\d\d\b|\b(january|february|march|april|june|july|august|september|october|november|december) \d{1,2}\b`)

// resultsPages are the pages that report one benchmark run; their header
// says which run, once.
var resultsPages = map[string]bool{
	"bench/RESULTS.md":   true,
	"docs/benchmarks.md": true,
}

// manualProblem is one line of a page that reads like a log.
type manualProblem struct {
	page string
	line int
	why  string
	text string
}

func (p manualProblem) String() string {
	return fmt.Sprintf("%s:%d: %s: %s", p.page, p.line, p.why, strings.TrimSpace(p.text))
}

// linkTargetRE matches the target of a Markdown link, "(...)" after "]".
var linkTargetRE = regexp.MustCompile(`\]\([^)]*\)`)

// prose returns line without inline code spans and link targets: dates
// in file names (results-2026-11-27-short.txt) and commands are data, not
// asides.
func prose(line string) string {
	return linkTargetRE.ReplaceAllString(stripCode(line), "]()")
}

// manualProblems checks the text of one page. name is the page's path
// from the repository root (results pages are known by it); markdown says
// whether fenced blocks and inline code are exempt from the date rule.
func manualProblems(name, text string, markdown bool) []manualProblem {
	var out []manualProblem
	fenced := false
	header := resultsPages[name] // before the first "## " heading
	for i, line := range strings.Split(text, "\n") {
		n := i + 1
		if markdown && strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if markdown && !fenced && strings.HasPrefix(line, "## ") {
			header = false
		}
		plain := line
		if markdown && !fenced {
			plain = prose(line)
		}
		for _, r := range manualRules {
			s := line
			if r.prose {
				s = strings.ReplaceAll(linkTargetRE.ReplaceAllString(line, "]()"), "`", "")
			}
			if r.re.MatchString(s) {
				out = append(out, manualProblem{name, n, r.why, line})
			}
		}
		if markdown && fenced {
			continue // commands and output: their file names carry dates
		}
		if dateRE.MatchString(plain) && !header {
			why := "a date (only a results page's header names its run's date)"
			if resultsPages[name] {
				why = "a date outside the page's header (the lines before its first \"## \" heading name the run once)"
			}
			out = append(out, manualProblem{name, n, why, line})
		}
	}
	return out
}

// userPages returns the Markdown pages a user reads, from the repository
// root: README.md, docs/*.md and bench/RESULTS.md.
func userPages(t *testing.T) []string {
	t.Helper()
	pages := []string{"README.md"}
	more, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	require.NoError(t, err)
	require.NotEmpty(t, more)
	for _, m := range more {
		pages = append(pages, "docs/"+filepath.Base(m))
	}
	return append(pages, "bench/RESULTS.md")
}

// packageDocs are the package documentation files go doc shows users of
// the modules: the core, the drivers, the conformance suite and otel.
func packageDocs(t *testing.T) []string {
	t.Helper()
	out := []string{"locker/doc.go", "conformance/doc.go", "otel/doc.go"}
	drivers, err := filepath.Glob(filepath.Join(root, "drivers", "*", "doc.go"))
	require.NoError(t, err)
	require.NotEmpty(t, drivers)
	for _, d := range drivers {
		out = append(out, "drivers/"+filepath.Base(filepath.Dir(d))+"/doc.go")
	}
	return out
}

// TestManualNotALog checks every page a user reads for tracker numbers,
// dated asides, development history and the wrong driver count: the
// Markdown pages, the package docs of the released modules, and the
// --help of scripts/bench.sh, scripts/release.sh and the scriptlock CLI
// (and of each of its commands). Each page is a subtest, so a failure names its page.
func TestManualNotALog(t *testing.T) {
	for _, page := range append(userPages(t), packageDocs(t)...) {
		t.Run(page, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(page)))
			require.NoError(t, err)
			for _, p := range manualProblems(page, string(b), strings.HasSuffix(page, ".md")) {
				t.Error(p)
			}
		})
	}
	t.Run("scripts/bench.sh --help", func(t *testing.T) {
		cmd := exec.Command("bash", filepath.Join(root, "scripts", "bench.sh"), "--help")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "scripts/bench.sh --help: %s", out)
		require.Contains(t, string(out), "BENCH_MODE", "bench.sh --help lists its settings")
		for _, p := range manualProblems("scripts/bench.sh --help", string(out), false) {
			t.Error(p)
		}
	})
	t.Run("scripts/release.sh --help", func(t *testing.T) {
		out, err := exec.Command("bash", filepath.Join(root, "scripts", "release.sh"), "--help").CombinedOutput()
		require.NoError(t, err, "scripts/release.sh --help: %s", out)
		require.Contains(t, string(out), "--dry-run")
		for _, p := range manualProblems("scripts/release.sh --help", string(out), false) {
			t.Error(p)
		}
	})
	t.Run("scriptlock --help", func(t *testing.T) {
		if testing.Short() {
			t.Skip("-short: building the CLI")
		}
		bin := filepath.Join(t.TempDir(), "scriptlock")
		work, err := filepath.Abs(filepath.Join(root, "go.work"))
		require.NoError(t, err)
		build := exec.Command(goTool(t), "build", "-o", bin, ".")
		build.Dir = filepath.Join(root, "cmd", "scriptlock")
		build.Env = append(os.Environ(), "GOWORK="+work)
		out, err := build.CombinedOutput()
		require.NoError(t, err, "building cmd/scriptlock: %s", out)
		for _, args := range [][]string{{"--help"}, {"inspect", "-h"}, {"list", "-h"}, {"watch", "-h"}, {"release", "-h"}} {
			out, _ := exec.Command(bin, args...).CombinedOutput() // -h may exit 0 or 2
			name := "scriptlock " + strings.Join(args, " ")
			require.Contains(t, string(out), "usage", "%s prints its usage: %s", name, out)
			for _, p := range manualProblems(name, string(out), false) {
				t.Error(p)
			}
		}
	})
}

// TestManualRulesCatch checks that the rules above flag what a log leaves
// behind, and leave alone what a manual says.
func TestManualRulesCatch(t *testing.T) {
	bad := []string{
		"the tables and issue 20's targets, met or missed",
		"see #33 for the plan",
		"(issue #12)",
		"as the tracker says",
		"took 3 minutes that afternoon",
		"2.01 in FIFO mode (3.02 before this run's FIFO change)",
		"Since this run the holders spin",
		"Its last run (this machine: 2 cores)",
		"measured on 2026-11-26 at 18:25",
		"on 27 November 2026",
		"All three drivers implement it",
		"certify `redigo` and `rueidis` too",
		"on the final code of that day",
		"Earlier runs are kept beside this one",
		"CI run 21's times",
	}
	for _, s := range bad {
		assert.NotEmpty(t, manualProblems("docs/x.md", "# X\n\n"+s+"\n", true), "flagged: %q", s)
	}
	good := []string{
		"the four drivers: go-redis, redigo, rueidis and valkey-go",
		"see [the guide](guide.md#read-write-lock-1)",
		"[results](results-2026-11-27-short.txt) has the tables", // a file name in a link target
		"`bench/results-2026-11-27-short-raw/main.txt`",          // a file name in code
		"one of three deployments; all three parts",
		"Every script call ends one of three ways",
		"a waiter id is `<slot>.<n>`",
	}
	for _, s := range good {
		assert.Empty(t, manualProblems("docs/x.md", "# X\n\n"+s+"\n", true), "not flagged: %q", s)
	}
	// A results page may name its run's date in its header, once, above
	// its first "## " heading; the same date below it is flagged.
	page := "# Results\n\nFrom the run of 2026-11-27 at 02:15 UTC.\n\n## Tables\n\nOn 2026-11-27 too.\n\n```\nbenchstat bench/results-2026-11-27-short-raw/main.txt\n```\n"
	problems := manualProblems("bench/RESULTS.md", page, true)
	require.Len(t, problems, 1, "%v", problems)
	assert.Equal(t, 7, problems[0].line)
	assert.NotEmpty(t, manualProblems("docs/guide.md", page, true), "only results pages have a header with a date")
	// --help output is plain text: no code spans to exempt.
	assert.NotEmpty(t, manualProblems("x --help", "Table (j) is issue 20's targets\n", false))
}
