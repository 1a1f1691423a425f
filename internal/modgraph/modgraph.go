// Package modgraph holds the check that keeps each driver module lean: a
// program that imports only locker and one driver must get, from
// `go list -m all`, only the core module, that driver's module, the
// driver's client and the client's own requirements. Every requirement of
// the core's go.mod and of a driver's go.mod (even one only their tests
// need) would show up in that list, so the check runs the go command on
// scratch modules outside the repository (modgraph_test.go); this file
// holds what it compares, unit-tested on its own. The same check keeps the
// conformance suite lean: a program that imports only the suite (as a
// third-party driver's tests do) gets the core, the suite and testify, and
// no driver and no Redis client.
package modgraph

import (
	"bufio"
	"fmt"
	"slices"
	"strings"
)

// Core is the core module's path.
const Core = "github.com/scriptlock/scriptlock"

// Driver is one driver module and the packages of its client.
type Driver struct {
	Dir     string   // the module's directory, relative to the repository root
	Module  string   // its module path (also its package's import path)
	Clients []string // the client's packages the driver imports
}

// Drivers are the in-tree driver modules.
var Drivers = []Driver{
	{"drivers/goredis", Core + "/drivers/goredis", []string{"github.com/redis/go-redis/v9"}},
	{"drivers/redigo", Core + "/drivers/redigo", []string{"github.com/gomodule/redigo/redis", "github.com/mna/redisc"}},
	{"drivers/rueidis", Core + "/drivers/rueidis", []string{"github.com/redis/rueidis"}},
	{"drivers/valkeygo", Core + "/drivers/valkeygo", []string{"github.com/valkey-io/valkey-go"}},
}

// Conformance is the conformance suite's module: a third-party driver's
// tests import it, so its graph must hold no Redis client (SuiteUnexpected).
const Conformance = Core + "/conformance"

// Testify is testify and the modules it requires: the project's tests use
// testify, so the core's go.mod requires it, and it enters the graph of a
// driver's user (never their build). go-redis brings it already.
var Testify = []string{
	"github.com/stretchr/testify", "github.com/stretchr/objx", "github.com/davecgh/go-spew",
	"github.com/pmezard/go-difflib", "gopkg.in/yaml.v3", "go.yaml.in/yaml/v3",
}

// Paths parses the output of `go list -m all` ("path version" lines, the
// main module's line without a version) into the module paths, the main
// module's first.
func Paths(listing string) []string {
	var out []string
	sc := bufio.NewScanner(strings.NewReader(listing))
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) > 0 {
			out = append(out, f[0])
		}
	}
	return out
}

// Unexpected returns the modules of user (the module paths a program
// importing locker and d lists, its own first) that are neither the core,
// nor d's module, nor testify or its requirements, nor in client (the
// paths a program importing only d's client lists, its own first). Versions are not compared: the program's
// build list may pick a newer version of a module the client requires,
// which is still one of the client's requirements.
func Unexpected(d Driver, user, client []string) []string {
	allowed := map[string]bool{Core: true, d.Module: true}
	for _, p := range Testify {
		allowed[p] = true
	}
	if len(client) > 0 {
		for _, p := range client[1:] {
			allowed[p] = true
		}
	}
	return outside(user, allowed)
}

// SuiteUnexpected returns the modules of user (the module paths a program
// importing only the conformance suite lists, its own first) that are
// neither the core, nor the suite, nor testify or its requirements: a
// driver's module or a Redis client there would enter the graph of every
// third-party driver that runs the suite.
func SuiteUnexpected(user []string) []string {
	allowed := map[string]bool{Core: true, Conformance: true}
	for _, p := range Testify {
		allowed[p] = true
	}
	return outside(user, allowed)
}

// outside returns, sorted, the modules of user (its own first, left out)
// that allowed does not hold.
func outside(user []string, allowed map[string]bool) []string {
	var out []string
	for _, p := range user[min(1, len(user)):] {
		if !allowed[p] {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

// Versions parses the output of `go list -m all` into each module's
// version (the main module, which has none, is left out).
func Versions(listing string) map[string]string {
	out := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(listing))
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) >= 2 {
			out[f[0]] = f[1]
		}
	}
	return out
}

// Raised returns, as "path: client's version -> program's version", the
// modules of the client's graph that the program gets at another version
// than a program of the client alone: a driver's go.mod that requires a
// newer version of one of its client's requirements (go work sync does
// that) forces the upgrade on every user of the driver. Testify and its
// requirements, which only tests build, are left out.
func Raised(user, client map[string]string) []string {
	var out []string
	for p, cv := range client {
		if uv, ok := user[p]; ok && uv != cv && !slices.Contains(Testify, p) {
			out = append(out, fmt.Sprintf("%s: %s -> %s", p, cv, uv))
		}
	}
	slices.Sort(out)
	return out
}

// Report describes what Unexpected found, for a test failure.
func Report(d Driver, extra, user, client []string) string {
	return fmt.Sprintf("a program importing only locker and %s lists modules that are neither the core, nor the driver, nor its client or the client's own requirements: %s\n(a requirement of the core's go.mod or of %s/go.mod, perhaps one only tests need, enters every user's graph: move it out)\nthe program's go list -m all: %s\nthe client's go list -m all: %s",
		d.Module, strings.Join(extra, ", "), d.Dir, strings.Join(user, " "), strings.Join(client, " "))
}
