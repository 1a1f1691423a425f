package conformance

import (
	"slices"
	"sync"
	"testing"

	"github.com/scriptlock/scriptlock/internal/redisserver"
)

// Outcome is how one rule ended in RunStandaloneRules.
type Outcome struct {
	Skipped bool
	// NotApplicable is why the rule reported itself not applicable, or "".
	NotApplicable string
}

// RunStandaloneRules runs only the named rules (full names, "Group/Rule"),
// and only on the standalone deployment (the server StartStandalone
// returns: the one SCRIPTLOCK_REDIS_ADDR names, when set), followed by its
// key-leak check, and returns how each rule that ran ended. It fails t
// when a name is not a rule.
func RunStandaloneRules(t *testing.T, d Driver, rules ...string) map[string]Outcome {
	t.Helper()
	var names []string
	for _, c := range allCases() {
		names = append(names, c.name)
	}
	for _, r := range rules {
		if !slices.Contains(names, r) {
			t.Fatalf("conformance: no rule %q", r)
		}
	}
	var mu sync.Mutex
	out := map[string]Outcome{}
	record := func(rule string, skipped bool, reason string) {
		mu.Lock()
		defer mu.Unlock()
		out[rule] = Outcome{Skipped: skipped, NotApplicable: reason}
	}
	keep := func(c testCase) bool { return slices.Contains(rules, c.name) }
	runStandalone(t, d, keep, standaloneRun{record: record})
	mu.Lock()
	defer mu.Unlock()
	return out
}

// RunStandaloneRulesOn is RunStandaloneRules on srv in the profile
// profile, whatever the variables say, so that tests of the suite itself
// may run at the same time on servers of their own.
func RunStandaloneRulesOn(t *testing.T, d Driver, srv *redisserver.Server, profile string, rules ...string) map[string]Outcome {
	t.Helper()
	var mu sync.Mutex
	out := map[string]Outcome{}
	record := func(rule string, skipped bool, reason string) {
		mu.Lock()
		defer mu.Unlock()
		out[rule] = Outcome{Skipped: skipped, NotApplicable: reason}
	}
	keep := func(c testCase) bool { return slices.Contains(rules, c.name) }
	runStandalone(t, d, keep, standaloneRun{record: record, srv: srv, profile: profile})
	mu.Lock()
	defer mu.Unlock()
	return out
}

// Rules returns the full names of every rule, in run order.
func Rules() []string {
	var names []string
	for _, c := range allCases() {
		names = append(names, c.name)
	}
	return names
}

// DefaultProfile is the profile a run on srv gets when EnvSuite is unset.
func DefaultProfile(srv *redisserver.Server) (string, error) {
	p, _, err := profileOf(!srv.External())
	return p, err
}

// RunGroupsQuiet is RunGroups of only the groups' quiet rules (those that
// must have the process to themselves, testCase.quiet, or share it only
// with each other, testCase.timed), when quiet is
// true, or of all their other rules.
func RunGroupsQuiet(t *testing.T, d Driver, quiet bool, groups ...string) {
	t.Helper()
	runGroups(t, d, func(c testCase) bool { return (c.quiet != "" || c.timed != "") == quiet }, groups...)
}
