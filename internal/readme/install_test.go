package readme

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// installBlock returns the first ```sh block under README.md's "## Install"
// heading: the commands a user runs until the first release.
func installBlock(t *testing.T) string {
	t.Helper()
	f, err := os.Open(filepath.Join(root, "README.md"))
	require.NoError(t, err)
	defer f.Close()
	var (
		section bool
		inBlock bool
		b       strings.Builder
	)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "## "):
			if inBlock {
				t.Fatal("README.md: the install block is not closed")
			}
			section = strings.HasPrefix(line, "## Install")
		case section && !inBlock && strings.TrimSpace(line) == "```sh":
			inBlock = true
		case inBlock && strings.TrimSpace(line) == "```":
			return b.String()
		case inBlock:
			b.WriteString(line + "\n")
		}
	}
	require.NoError(t, sc.Err())
	t.Fatal("README.md has no ```sh block under its \"## Install\" heading")
	return ""
}

// cloneRE matches the install block's clone of the repository.
var cloneRE = regexp.MustCompile(`(?m)^git clone https://github\.com/scriptlock/scriptlock (\S+)$`)

// TestInstallFromAClone follows README.md's install words in a scratch
// module outside the repository whose main.go is README.md's first
// example, then builds it: the words must work while no version is
// tagged. The one change: the block's git clone of GitHub becomes a
// symbolic link to this checkout, so the words are tried on the files as
// they are. Modules come from the local module cache first (a file://
// proxy), then from GOPROXY; GOSUMDB is off, so the test also runs offline
// once go-redis is in the cache.
func TestInstallFromAClone(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a scratch module and go mod tidy")
	}
	words := installBlock(t)
	require.Regexp(t, cloneRE, words, "the install block clones the repository")
	repo, err := filepath.Abs(root)
	require.NoError(t, err)
	dir := t.TempDir()
	app := filepath.Join(dir, "app")
	require.NoError(t, os.Mkdir(app, 0o755))
	script := cloneRE.ReplaceAllString(words, "ln -s '"+repo+"' $1")
	blocks := goBlocks(t, filepath.Join(root, "README.md"))
	require.NotEmpty(t, blocks)
	require.NoError(t, os.WriteFile(filepath.Join(app, "main.go"), []byte("package main\n\n"+blocks[0].src), 0o644))

	goBin := goTool(t)
	cache, err := exec.Command(goBin, "env", "GOMODCACHE").Output()
	require.NoError(t, err)
	proxy, err := exec.Command(goBin, "env", "GOPROXY").Output()
	require.NoError(t, err)
	env := append(os.Environ(),
		"GOWORK=off", "GOFLAGS=-mod=mod", "GOSUMDB=off",
		"GOPROXY=file://"+filepath.Join(strings.TrimSpace(string(cache)), "cache", "download")+","+strings.TrimSpace(string(proxy)),
		"PATH="+filepath.Dir(goBin)+string(os.PathListSeparator)+os.Getenv("PATH"))
	run := func(name string, args ...string) string {
		cmd := exec.Command(name, args...)
		cmd.Dir, cmd.Env = app, env
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s %s in the scratch module: %s", name, strings.Join(args, " "), out)
		return string(out)
	}
	run(goBin, "mod", "init", "example.com/app")
	run("bash", "-euo", "pipefail", "-c", script)
	run(goBin, "build", "-o", filepath.Join(dir, "app.bin"), ".")
	mods := run(goBin, "list", "-m", "all")
	for _, m := range []string{"github.com/scriptlock/scriptlock ", "github.com/scriptlock/scriptlock/drivers/goredis "} {
		require.Contains(t, mods, m, "the scratch module builds against the clone")
	}
	t.Logf("README.md's install words, run in a scratch module:\n%s", script)
}
