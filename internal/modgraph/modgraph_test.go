package modgraph

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// root is the repository's root, from this package's directory.
const root = "../.."

// TestDriverModulesAreLean writes, for each driver, a scratch module
// outside the repository that imports only locker and the driver (replace
// directives point at the checkout), and a second one that imports only
// the driver's client at the versions the driver's go.mod requires; it
// runs go mod tidy and go list -m all in both (GOWORK=off,
// GOFLAGS=-mod=mod) and fails if the first lists a module that is not
// the core, the driver's module, or in the second's list.
func TestDriverModulesAreLean(t *testing.T) {
	goTool := lookGo(t)
	repo, err := filepath.Abs(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range Drivers {
		t.Run(filepath.Base(d.Dir), func(t *testing.T) {
			t.Parallel()
			user, client, userList, clientList := graphs(t, goTool, repo, d, filepath.Join(repo, filepath.FromSlash(d.Dir)))
			if extra := Unexpected(d, user, client); len(extra) > 0 {
				t.Error(Report(d, extra, user, client))
			}
			if raised := Raised(Versions(userList), Versions(clientList)); len(raised) > 0 {
				t.Errorf("%s/go.mod raises requirements of its client (every user of the driver would get the upgrade; keep the client's versions):\n%s", d.Dir, strings.Join(raised, "\n"))
			}
			t.Logf("go list -m all of a program importing locker and %s: %s", d.Module, strings.Join(user[1:], " "))
		})
	}
}

// TestCheckFailsOnAnExtraRequirement runs the check on a copy of the
// go-redis driver module whose go.mod requires one more module (goleak,
// as a test helper once was): the check must name it.
func TestCheckFailsOnAnExtraRequirement(t *testing.T) {
	goTool := lookGo(t)
	repo, err := filepath.Abs(root)
	if err != nil {
		t.Fatal(err)
	}
	d := Drivers[0]
	src := filepath.Join(repo, filepath.FromSlash(d.Dir))
	dst := filepath.Join(t.TempDir(), "goredis")
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		name := e.Name()
		if e.IsDir() || !(name == "go.mod" || strings.HasSuffix(name, ".go") && !strings.HasSuffix(name, "_test.go")) {
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, name))
		if err != nil {
			t.Fatal(err)
		}
		if name == "go.mod" {
			b = append(b, "\nrequire go.uber.org/goleak v1.3.0\n"...)
		}
		if err := os.WriteFile(filepath.Join(dst, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	user, client, _, _ := graphs(t, goTool, repo, d, dst)
	extra := Unexpected(d, user, client)
	if !slices.Contains(extra, "go.uber.org/goleak") {
		t.Fatalf("the check missed goleak, required by the driver's go.mod: it found %v\nthe program's list: %v", extra, user)
	}
}

// TestCoreRequiresOnlyTestify: every requirement of the core's go.mod
// would enter the graph of every user of every driver; testify (and what
// it requires) is the one the tests may bring.
func TestCoreRequiresOnlyTestify(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	in := false
	for i, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) > 0 && f[0] == "require" && len(f) > 1 && f[1] == "(":
			in = true
			continue
		case in && len(f) > 0 && f[0] == ")":
			in = false
			continue
		case len(f) > 0 && f[0] == "require":
			f = f[1:]
		case !in:
			continue
		}
		if len(f) > 0 && !slices.Contains(Testify, f[0]) {
			t.Errorf("go.mod:%d: %q: the core module must require nothing but testify (test helpers go in internal/ or in a module of their own)", i+1, line)
		}
	}
}

// TestSuiteBringsNoClient writes a scratch module outside the repository
// that imports only the conformance suite (replace directives point at the
// checkout's modules), runs go mod tidy and go list -m all in it (GOWORK=off,
// GOFLAGS=-mod=mod), and fails if it lists anything but the core, the
// suite, and testify and its requirements: a third-party driver that runs
// the suite must not get the in-tree drivers or their clients. The in-tree
// drivers are certified from conformance/internal/intree, a module of its
// own, for that.
func TestSuiteBringsNoClient(t *testing.T) {
	goTool := lookGo(t)
	repo, err := filepath.Abs(root)
	if err != nil {
		t.Fatal(err)
	}
	user, listing := suiteGraph(t, goTool, repo, filepath.Join(repo, "conformance"))
	if extra := SuiteUnexpected(user); len(extra) > 0 {
		t.Errorf("a program importing only %s lists modules that are neither the core, nor the suite, nor testify or its requirements: %s\n(conformance/go.mod must require only the core and testify: certify the in-tree drivers from conformance/internal/intree)\nits go list -m all:\n%s",
			Conformance, strings.Join(extra, ", "), listing)
	}
	t.Logf("go list -m all of a program importing only %s:\n%s", Conformance, listing)
}

// TestSuiteCheckFailsOnAClient runs the check on a stand-in for the suite's
// module whose go.mod requires go-redis (as the suite's did while it
// certified the in-tree drivers from its own tests): the check must name it.
func TestSuiteCheckFailsOnAClient(t *testing.T) {
	goTool := lookGo(t)
	repo, err := filepath.Abs(root)
	if err != nil {
		t.Fatal(err)
	}
	client := clientRequires(t, filepath.Join(repo, filepath.FromSlash(Drivers[0].Dir), "go.mod"))[0]
	dst := t.TempDir()
	write(t, filepath.Join(dst, "go.mod"), fmt.Sprintf("module %s\n\ngo 1.26.0\n\nrequire %s\n", Conformance, client))
	write(t, filepath.Join(dst, "doc.go"), "// Package conformance stands in for the suite.\npackage conformance\n")
	user, _ := suiteGraph(t, goTool, repo, dst)
	mod, _, _ := strings.Cut(client, " ")
	if extra := SuiteUnexpected(user); !slices.Contains(extra, mod) {
		t.Fatalf("the check missed %s, required by the suite's go.mod: it found %v\nthe program's list: %v", mod, extra, user)
	}
}

// TestUnexpected checks the comparison on lists given by hand.
func TestUnexpected(t *testing.T) {
	d := Drivers[0]
	client := Paths("example.com/client\ngithub.com/redis/go-redis/v9 v9.23.0\ngithub.com/cespare/xxhash/v2 v2.3.0\n")
	good := Paths("example.com/user\n" + Core + " v0.0.0-00010101000000-000000000000 => /repo\n" + d.Module + " v0.0.0 => /repo/drivers/goredis\ngithub.com/cespare/xxhash/v2 v2.1.0\ngithub.com/redis/go-redis/v9 v9.23.0\n")
	if extra := Unexpected(d, good, client); len(extra) != 0 {
		t.Errorf("Unexpected on a lean list = %v, want none", extra)
	}
	bad := append(slices.Clone(good), "go.uber.org/goleak", "github.com/alicebob/miniredis/v2", "example.com/client", "github.com/stretchr/testify")
	want := []string{"example.com/client", "github.com/alicebob/miniredis/v2", "go.uber.org/goleak"}
	if extra := Unexpected(d, bad, client); !slices.Equal(extra, want) {
		t.Errorf("Unexpected with goleak, miniredis and testify added = %v, want %v (testify allowed)", extra, want)
	}
	other := Drivers[1]
	if extra := Unexpected(d, append(slices.Clone(good), other.Module), client); !slices.Equal(extra, []string{other.Module}) {
		t.Errorf("another driver's module must count as unexpected: got %v", extra)
	}
	suite := Paths("example.com/user\n" + Core + " v0.0.0 => /repo\n" + Conformance + " v0.0.0 => /repo/conformance\ngithub.com/stretchr/testify v1.12.1\ngo.yaml.in/yaml/v3 v3.0.5\n")
	if extra := SuiteUnexpected(suite); len(extra) != 0 {
		t.Errorf("SuiteUnexpected on the core, the suite and testify = %v, want none", extra)
	}
	if extra := SuiteUnexpected(append(slices.Clone(suite), d.Module, "github.com/redis/go-redis/v9")); !slices.Equal(extra, []string{"github.com/redis/go-redis/v9", d.Module}) {
		t.Errorf("SuiteUnexpected with a driver and its client = %v, want both", extra)
	}
	raised := Raised(Versions("example.com/user\ngolang.org/x/sys v0.48.0\n"+Core+" v0.0.0 => /repo\n"), Versions("example.com/client\ngolang.org/x/sys v0.47.0\n"))
	if !slices.Equal(raised, []string{"golang.org/x/sys: v0.47.0 -> v0.48.0"}) {
		t.Errorf("Raised = %v, want x/sys raised", raised)
	}
	if r := Raised(Versions("u\na v1\n"), Versions("c\na v1\nb v2\n")); len(r) != 0 {
		t.Errorf("Raised on equal versions = %v", r)
	}
	if r := Report(d, want, bad, client); !strings.Contains(r, "github.com/stretchr/testify") || !strings.Contains(r, d.Dir+"/go.mod") {
		t.Errorf("Report does not name the module and the go.mod: %s", r)
	}
}

// lookGo returns the go command (go test puts the one running the test
// first in PATH), or fails the test saying the check needs it.
func lookGo(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the module graph check needs the go command on PATH (and the module cache or GOPROXY for the clients' modules): %v", err)
	}
	return p
}

// graphs returns the module paths of go list -m all in a scratch module
// importing locker and d (found in dir), and in one importing only d's
// client, and the two listings.
func graphs(t *testing.T, goTool, repo string, d Driver, dir string) (user, client []string, userList, clientList string) {
	t.Helper()
	reqs := clientRequires(t, filepath.Join(dir, "go.mod"))
	const pseudo = "v0.0.0-00010101000000-000000000000"

	u := t.TempDir()
	write(t, filepath.Join(u, "go.mod"), fmt.Sprintf("module example.com/user\n\ngo 1.26.0\n\nrequire (\n\t%s %s\n\t%s %s\n)\n\nreplace (\n\t%s => %s\n\t%s => %s\n)\n",
		Core, pseudo, d.Module, pseudo, Core, repo, d.Module, dir))
	write(t, filepath.Join(u, "main.go"), fmt.Sprintf("package main\n\nimport (\n\t_ %q\n\t_ %q\n)\n\nfunc main() {}\n", Core+"/locker", d.Module))
	run(t, goTool, u, "mod", "tidy")
	userList = run(t, goTool, u, "list", "-m", "all")

	c := t.TempDir()
	var mod, imports strings.Builder
	fmt.Fprintf(&mod, "module example.com/client\n\ngo 1.26.0\n")
	for _, r := range reqs {
		fmt.Fprintf(&mod, "\nrequire %s\n", r)
	}
	for _, p := range d.Clients {
		fmt.Fprintf(&imports, "\t_ %q\n", p)
	}
	write(t, filepath.Join(c, "go.mod"), mod.String())
	write(t, filepath.Join(c, "main.go"), fmt.Sprintf("package main\n\nimport (\n%s)\n\nfunc main() {}\n", imports.String()))
	run(t, goTool, c, "mod", "tidy")
	clientList = run(t, goTool, c, "list", "-m", "all")
	return Paths(userList), Paths(clientList), userList, clientList
}

// suiteGraph returns the module paths of go list -m all in a scratch module
// importing only the conformance suite (the module in dir), and the
// listing. Every module of the repository is replaced by its directory, so
// that a suite that requires a driver again lists it (rather than failing
// to fetch it).
func suiteGraph(t *testing.T, goTool, repo, dir string) (user []string, listing string) {
	t.Helper()
	const pseudo = "v0.0.0-00010101000000-000000000000"
	var replace strings.Builder
	fmt.Fprintf(&replace, "\t%s => %s\n\t%s => %s\n", Core, repo, Conformance, dir)
	for _, d := range Drivers {
		fmt.Fprintf(&replace, "\t%s => %s\n", d.Module, filepath.Join(repo, filepath.FromSlash(d.Dir)))
	}
	u := t.TempDir()
	write(t, filepath.Join(u, "go.mod"), fmt.Sprintf("module example.com/user\n\ngo 1.26.0\n\nrequire (\n\t%s %s\n\t%s %s\n)\n\nreplace (\n%s)\n",
		Core, pseudo, Conformance, pseudo, replace.String()))
	write(t, filepath.Join(u, "main.go"), fmt.Sprintf("package main\n\nimport _ %q\n\nfunc main() {}\n", Conformance))
	run(t, goTool, u, "mod", "tidy")
	listing = run(t, goTool, u, "list", "-m", "all")
	return Paths(listing), listing
}

// clientRequires returns the direct requirements ("path version") of a
// driver's go.mod other than the core: its client's modules, at the
// versions the driver was tested with.
func clientRequires(t *testing.T, gomod string) []string {
	t.Helper()
	b, err := os.ReadFile(gomod)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	inBlock := false
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "require (":
			inBlock = true
			continue
		case inBlock && line == ")":
			inBlock = false
			continue
		case strings.HasPrefix(line, "require "):
			line = strings.TrimPrefix(line, "require ")
		case !inBlock:
			continue
		}
		if strings.Contains(line, "// indirect") || strings.HasPrefix(line, Core+" ") {
			continue
		}
		if f := strings.Fields(line); len(f) == 2 {
			out = append(out, line)
		}
	}
	if len(out) == 0 {
		t.Fatalf("%s requires no client module", gomod)
	}
	return out
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// run runs the go command in dir, outside any workspace, and returns its
// standard output; tidy prints nothing there.
func run(t *testing.T, goTool, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command(goTool, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Fatalf("running go %s: %v", strings.Join(args, " "), err)
		}
		t.Fatalf("go %s in a scratch module failed (the check needs the module cache or a reachable GOPROXY for the clients' modules): %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String()
}
