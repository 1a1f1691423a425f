package readme

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// exampleNameRE matches the name of a runnable example in a page.
var exampleNameRE = regexp.MustCompile(`\bExample_[A-Za-z0-9_]+`)

// TestGuideExamplesExist checks the guide's "How to use it" layer: every
// primitive has a section with a Go block and at least one runnable
// example, and every Example the pages name is a function of
// drivers/goredis's tests, so the pointers do not outlive the code.
func TestGuideExamplesExist(t *testing.T) {
	defined := map[string]bool{} // every Example function of the repository's tests
	funcRE := regexp.MustCompile(`(?m)^func (Example\w*)\(\)`)
	require.NoError(t, filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range funcRE.FindAllStringSubmatch(string(b), -1) {
			defined[m[1]] = true
		}
		return nil
	}))
	for _, page := range docs(t) {
		b, err := os.ReadFile(page)
		require.NoError(t, err)
		for _, name := range exampleNameRE.FindAllString(string(b), -1) {
			assert.True(t, defined[name], "%s names %s, which no test file of the repository defines", filepath.Base(page), name)
		}
	}

	guide, err := os.ReadFile(filepath.Join(root, "docs", "guide.md"))
	require.NoError(t, err)
	layer, _, ok := strings.Cut(string(guide), "\n## Connecting\n")
	require.True(t, ok, "docs/guide.md has a Connecting section after its \"How to use it\" layer")
	_, layer, ok = strings.Cut(layer, "\n## How to use it\n")
	require.True(t, ok, "docs/guide.md starts with a \"How to use it\" layer")
	sections := strings.Split(layer, "\n### ")[1:]
	for _, want := range []struct{ heading, call string }{
		{"A mutex", ".NewMutex("},
		{"A read-write lock, with Downgrade", ".Downgrade("},
		{"A semaphore", ".NewSemaphore("},
		{"A multi-lock", ".NewMultiLock("},
		{"A quorum", "locker.NewQuorum("},
		{"A claim", ".Claim("},
	} {
		found := false
		for _, sec := range sections {
			if !strings.HasPrefix(sec, want.heading+"\n") {
				continue
			}
			found = true
			assert.Contains(t, sec, "```go", "guide: %q shows the code", want.heading)
			assert.Contains(t, sec, want.call, "guide: %q calls %s", want.heading, want.call)
			assert.Regexp(t, exampleNameRE, sec, "guide: %q names its runnable example", want.heading)
		}
		assert.True(t, found, "docs/guide.md's \"How to use it\" has a section %q", want.heading)
	}
}
