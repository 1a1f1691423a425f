// Package hooks gives the repository's own tests of the conformance suite
// what the suite does not export: running chosen rules on a server of the
// test's own and reading how each ended, the rule names, the default
// profile, the quiet split. Those tests certify the in-tree drivers from
// conformance/internal/intree, a module of its own (so that the suite's
// module requires no client), where the suite's export_test.go would not
// reach. Go's internal rule keeps this package to code under conformance/;
// third-party drivers use the exported Run and RunGroups.
//
// Package conformance sets every variable in its init: import conformance
// beside this package (its init runs first). Nothing else sets them. Each
// d is a conformance.Driver (this package cannot name the type: the suite
// imports it); another type panics.
package hooks

import (
	"context"
	"testing"

	"github.com/scriptlock/scriptlock/internal/redisserver"
)

// Outcome is how one rule ended in RunStandaloneRulesOn.
type Outcome struct {
	Skipped bool
	// NotApplicable is why the rule reported itself not applicable, or "".
	NotApplicable string
}

var (
	// RunStandaloneRulesOn runs only the named rules (full names,
	// "Group/Rule") of the driver d on srv, as the standalone deployment,
	// in the profile profile whatever the variables say (so that tests of
	// the suite itself may run at the same time on servers of their own),
	// followed by its key-leak check, and returns how each rule that ran
	// ended. It fails t when a name is not a rule.
	RunStandaloneRulesOn func(t *testing.T, d any, srv *redisserver.Server, profile string, rules ...string) map[string]Outcome

	// RunAsApplication is RunStandaloneRulesOn in the safe profile with
	// app (an external Server as the application's user, which the
	// drivers connect as), suite (the same server as the user of the
	// suite's own connections: conformance.EnvSuiteUser) and prefix (the
	// application's: conformance.EnvPrefix).
	RunAsApplication func(t *testing.T, d any, app, suite *redisserver.Server, prefix string, rules ...string) map[string]Outcome

	// CheckAccess runs the check the suite makes before its first rule on
	// an existing deployment, with app, suite and prefix as in
	// RunAsApplication, and returns its error.
	CheckAccess func(ctx context.Context, app, suite *redisserver.Server, prefix string) error

	// Rules returns the full names of every rule, in run order.
	Rules func() []string

	// DefaultProfile returns the profile a run on srv gets when
	// conformance.EnvSuite is unset.
	DefaultProfile func(srv *redisserver.Server) (string, error)

	// RunGroupsQuiet is conformance.RunGroups of the driver d restricted
	// to the groups' quiet rules (those that must have the process to
	// themselves, or share it only with each other's timed cases) when
	// quiet is true, or to all their other rules.
	RunGroupsQuiet func(t *testing.T, d any, quiet bool, groups ...string)
)
