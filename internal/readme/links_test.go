package readme

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// linkRE matches a Markdown link or image target: [text](target) or
// ![alt](target); a title after the target is not used in these files.
var linkRE = regexp.MustCompile(`!?\[[^\]]*\]\(([^)\s]+)\)`)

// link is one relative link of a Markdown file.
type link struct {
	line   int
	target string
}

// links returns the links of the Markdown file at path that are not
// absolute URLs, outside fenced code blocks and inline code.
func links(t *testing.T, path string) []link {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var out []link
	fenced := false
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		for _, m := range linkRE.FindAllStringSubmatch(stripCode(line), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			out = append(out, link{line: n, target: target})
		}
	}
	require.NoError(t, sc.Err())
	return out
}

// stripCode drops inline code spans, where brackets are not links.
func stripCode(line string) string {
	parts := strings.Split(line, "`")
	var b strings.Builder
	for i, p := range parts {
		if i%2 == 0 {
			b.WriteString(p)
		}
	}
	return b.String()
}

// anchors returns the anchors GitHub gives the headings of the Markdown
// file at path: lower case, spaces as hyphens, punctuation other than
// hyphens and underscores dropped, and -1, -2, ... after repeats.
func anchors(t *testing.T, path string) map[string]bool {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	out := map[string]bool{}
	seen := map[string]int{}
	fenced := false
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if fenced || !strings.HasPrefix(line, "#") {
			continue
		}
		text := strings.TrimSpace(strings.TrimLeft(line, "#"))
		slug := slugify(text)
		if k := seen[slug]; k > 0 {
			out[fmt.Sprintf("%s-%d", slug, k)] = true
		} else {
			out[slug] = true
		}
		seen[slug]++
	}
	return out
}

func slugify(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// brokenLinks lists the relative links of the Markdown file md whose file
// or directory does not exist, or whose #anchor names no heading of the
// Markdown file it points at.
func brokenLinks(t *testing.T, md string) []string {
	t.Helper()
	var problems []string
	for _, l := range links(t, md) {
		path, anchor, _ := strings.Cut(l.target, "#")
		file := md
		if path != "" {
			file = filepath.Join(filepath.Dir(md), filepath.FromSlash(path))
			if _, err := os.Stat(file); err != nil {
				problems = append(problems, fmt.Sprintf("%s:%d: link to %s: no such file or directory", md, l.line, l.target))
				continue
			}
		}
		if anchor == "" {
			continue
		}
		if !strings.HasSuffix(file, ".md") {
			problems = append(problems, fmt.Sprintf("%s:%d: link to %s: an anchor in a file that is not Markdown", md, l.line, l.target))
			continue
		}
		if !anchors(t, file)[anchor] {
			problems = append(problems, fmt.Sprintf("%s:%d: link to %s: %s has no heading with anchor #%s", md, l.line, l.target, filepath.Base(file), anchor))
		}
	}
	return problems
}

// TestLinks checks every relative link and anchor of README.md and
// docs/*.md, and of bench/RESULTS.md.
func TestLinks(t *testing.T) {
	files := append(docs(t), filepath.Join(root, "bench", "RESULTS.md"))
	n := 0
	for _, md := range files {
		n += len(links(t, md))
		for _, p := range brokenLinks(t, md) {
			t.Error(p)
		}
	}
	assert.Greater(t, n, 20, "the documents link to each other")
}

// TestBrokenLinksFail checks that a missing file and a missing anchor are
// both reported, and that links in code are not links.
func TestBrokenLinksFail(t *testing.T) {
	dir := t.TempDir()
	md := filepath.Join(dir, "A.md")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "B.md"), []byte("# Title\n\n## Read-write lock\n\n## Read-write lock\n"), 0o644))
	require.NoError(t, os.WriteFile(md, []byte("# A\n\n"+
		"[ok](B.md#read-write-lock) [ok2](B.md#read-write-lock-1) [self](#a)\n"+
		"[no file](C.md) [no anchor](B.md#semaphore) [no self](#b)\n"+
		"`[code](nowhere.md)`\n\n```\n[fenced](nowhere.md)\n```\n"), 0o644))
	problems := brokenLinks(t, md)
	require.Len(t, problems, 3, "%v", problems)
	assert.Contains(t, problems[0], "C.md: no such file")
	assert.Contains(t, problems[1], "#semaphore")
	assert.Contains(t, problems[2], "#b")
}
