package conformance

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/scriptlock/scriptlock/conformance/internal/hooks"
	"github.com/scriptlock/scriptlock/internal/redisserver"
)

// init gives the repository's own tests of the suite (the in-tree
// drivers' certification, a module of its own) what the suite does not
// export, through conformance/internal/hooks.
func init() {
	hooks.RunStandaloneRulesOn = func(t *testing.T, d any, srv *redisserver.Server, profile string, rules ...string) map[string]hooks.Outcome {
		t.Helper()
		return runStandaloneRulesOn(t, hookDriver(d), standaloneRun{srv: srv, profile: profile}, rules...)
	}
	hooks.RunAsApplication = func(t *testing.T, d any, app, suite *redisserver.Server, prefix string, rules ...string) map[string]hooks.Outcome {
		t.Helper()
		return runStandaloneRulesOn(t, hookDriver(d), standaloneRun{srv: app, suite: suite, prefix: prefix, profile: ProfileSafe}, rules...)
	}
	hooks.CheckAccess = func(ctx context.Context, app, suite *redisserver.Server, prefix string) error {
		d := &deployment{app: standaloneAdmin{app}, admin: safeAdmin{standaloneAdmin{suite}}, conn: connFor([]string{app.Addr}, false, app.Dial()), names: prefix + runPrefix}
		return d.checkAccess(ctx)
	}
	hooks.Rules = ruleNames
	hooks.DefaultProfile = func(srv *redisserver.Server) (string, error) {
		p, _, err := profileOf(!srv.External())
		return p, err
	}
	hooks.RunGroupsQuiet = func(t *testing.T, d any, quiet bool, groups ...string) {
		t.Helper()
		runGroups(t, hookDriver(d), func(c testCase) bool { return (c.quiet != "" || c.timed != "") == quiet }, groups...)
	}
}

// hookDriver is d, which a caller of a hook must pass as a Driver.
func hookDriver(d any) Driver {
	dr, ok := d.(Driver)
	if !ok {
		panic(fmt.Sprintf("conformance/internal/hooks: want a conformance.Driver, got %T", d))
	}
	return dr
}

// ruleNames returns the full names of every rule, in run order.
func ruleNames() []string {
	var names []string
	for _, c := range allCases() {
		names = append(names, c.name)
	}
	return names
}

// runStandaloneRulesOn runs only the named rules as o says (its server and
// profile set), as the standalone deployment (see
// hooks.RunStandaloneRulesOn).
func runStandaloneRulesOn(t *testing.T, d Driver, o standaloneRun, rules ...string) map[string]hooks.Outcome {
	t.Helper()
	names := ruleNames()
	for _, r := range rules {
		if !slices.Contains(names, r) {
			t.Fatalf("conformance: no rule %q", r)
		}
	}
	var mu sync.Mutex
	out := map[string]hooks.Outcome{}
	record := func(rule string, skipped bool, reason string) {
		mu.Lock()
		defer mu.Unlock()
		out[rule] = hooks.Outcome{Skipped: skipped, NotApplicable: reason}
	}
	keep := func(c testCase) bool { return slices.Contains(rules, c.name) }
	o.record = record
	runStandalone(t, d, keep, o)
	mu.Lock()
	defer mu.Unlock()
	return out
}
