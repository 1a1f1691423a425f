package main

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// jsonRun builds `go test -json` output from (action, test, output) triples.
func jsonRun(t *testing.T, evs ...[3]string) string {
	t.Helper()
	var b strings.Builder
	for _, e := range evs {
		line, err := json.Marshal(event{Action: e[0], Package: "p", Test: e[1], Output: e[2]})
		require.NoError(t, err)
		b.Write(line)
		b.WriteByte('\n')
	}
	return b.String()
}

func TestReport(t *testing.T) {
	const (
		sa = "TestConformance/driver=goredis/deployment=standalone"
		cl = "TestConformance/driver=goredis/deployment=cluster"
	)
	in := jsonRun(t,
		[3]string{"run", sa, ""},
		[3]string{"output", sa + "/Mutex/OneWinner", "    driver.go:108: rule: one winner\n"},
		[3]string{"pass", sa + "/Mutex/OneWinner", ""},
		// A rule with three name parts and subtests, one of them failing.
		[3]string{"output", sa + "/Outcome/Close/BlockedLock", "    driver.go:108: rule: close\n"},
		[3]string{"output", sa + "/Outcome/Close/BlockedLock/case_a", "    x.go:1: still refused\n"},
		[3]string{"fail", sa + "/Outcome/Close/BlockedLock/case_a", ""},
		[3]string{"output", sa + "/Outcome/Close/BlockedLock", "    history.go:9: history checker: fine\n"},
		[3]string{"fail", sa + "/Outcome/Close/BlockedLock", ""},
		// A rule not applicable here, with its reason.
		[3]string{"output", sa + "/Stall/DebugSleep", "    driver.go:108: rule: stall\n"},
		[3]string{"output", sa + "/Stall/DebugSleep", "    cases_stall.go:20: not applicable on Foo 1.0: DEBUG is disabled\n"},
		[3]string{"skip", sa + "/Stall/DebugSleep", ""},
		// The key-leak rule runs once per test: one failure counts.
		[3]string{"output", sa + "/Leak/NoKeysLeft", "    env.go:247: rule: no keys\n"},
		[3]string{"pass", sa + "/Leak/NoKeysLeft", ""},
		[3]string{"output", "TestRW/driver=goredis/deployment=standalone/Leak/NoKeysLeft", "    env.go:247: rule: no keys\n"},
		[3]string{"output", "TestRW/driver=goredis/deployment=standalone/Leak/NoKeysLeft", "    env.go:250: \n"},
		[3]string{"output", "TestRW/driver=goredis/deployment=standalone/Leak/NoKeysLeft", "        \tError:      \tShould be empty, but was [k]\n"},
		[3]string{"fail", "TestRW/driver=goredis/deployment=standalone/Leak/NoKeysLeft", ""},
		// A testify failure: Error and Messages make the reason.
		[3]string{"output", sa + "/ACL/LeastPrivilege", "    driver.go:108: rule: acl\n"},
		[3]string{"output", sa + "/ACL/LeastPrivilege", "    cases_acl.go:46: \n"},
		[3]string{"output", sa + "/ACL/LeastPrivilege", "        \tError:      \tReceived unexpected error:\n"},
		[3]string{"output", sa + "/ACL/LeastPrivilege", "        \t            \tERR unknown modifier\n"},
		[3]string{"output", sa + "/ACL/LeastPrivilege", "        \tMessages:   \tcall: ACL SETUSER\n"},
		[3]string{"fail", sa + "/ACL/LeastPrivilege", ""},
		// A rule that never ended: the run timed out.
		[3]string{"output", sa + "/Chaos/Restart", "    driver.go:108: rule: restart\n"},
		[3]string{"fail", sa, ""},
		// A deployment that failed before any rule ran.
		[3]string{"output", cl, "    cluster.go:5: redisserver: start cluster node: boom\n"},
		[3]string{"fail", cl, ""},
		[3]string{"output", "", "panic: test timed out after 40m0s\n"},
		[3]string{"fail", "", ""},
	)
	r, err := parse("Redis 9.9.9", strings.NewReader(in))
	require.NoError(t, err)
	var b strings.Builder
	ok := report(&b, []*run{r})
	got := b.String()
	assert.False(t, ok)
	assert.Contains(t, got, "| server | deployment | goredis |\n|---|---|---|\n")
	assert.Contains(t, got, "| Redis 9.9.9 | standalone | 1 passed, **4 failed**, 1 not applicable |\n")
	assert.Contains(t, got, "| Redis 9.9.9 | cluster | 0 passed, **1 failed** |\n")
	assert.Contains(t, got, "standalone: not applicable: Stall/DebugSleep: not applicable on Foo 1.0: DEBUG is disabled\n")
	assert.Contains(t, got, "standalone: failed: Outcome/Close/BlockedLock: case_a: still refused\n")
	assert.Contains(t, got, "standalone: failed: ACL/LeastPrivilege: ERR unknown modifier / call: ACL SETUSER\n")
	assert.Contains(t, got, "standalone: failed: Leak/NoKeysLeft: Should be empty, but was [k]\n")
	assert.Contains(t, got, "standalone: failed: Chaos/Restart: started but never finished")
	assert.Contains(t, got, "cluster: failed before any rule ran: redisserver: start cluster node: boom\n")
	assert.True(t, strings.HasSuffix(got, "\ncompat: 1 passed, 5 failed, 1 skipped\n"), "closing line: %q", got)
}

func TestReportAllPass(t *testing.T) {
	const sa = "TestRW/driver=redigo/deployment=standalone"
	in := jsonRun(t,
		[3]string{"output", sa + "/RW/Exclusion", "    driver.go:108: rule: rw\n"},
		[3]string{"pass", sa + "/RW/Exclusion", ""},
		[3]string{"pass", sa, ""},
		[3]string{"pass", "", ""},
	)
	r, err := parse("Valkey 8.0.1", strings.NewReader(in))
	require.NoError(t, err)
	var b strings.Builder
	assert.True(t, report(&b, []*run{r}))
	assert.Equal(t, "| server | deployment | redigo |\n|---|---|---|\n| Valkey 8.0.1 | standalone | 1 passed |\n\ncompat: 1 passed, 0 failed, 0 skipped\n", b.String())

	r, err = parse("Redis 7.4.1", strings.NewReader(""))
	require.NoError(t, err)
	b.Reset()
	assert.False(t, report(&b, []*run{r}), "a run with no result fails")
	assert.Contains(t, b.String(), "no rule ran")
}

func TestCompareLabels(t *testing.T) {
	labels := []string{"Valkey 8.0.1", "Redis 7.0.15", "custom", "Redis 6.2.16", "Redis 7.4.1", "Valkey 7.2.5"}
	slices.SortStableFunc(labels, compareLabels)
	assert.Equal(t, []string{"Redis 6.2.16", "Redis 7.0.15", "Redis 7.4.1", "Valkey 7.2.5", "Valkey 8.0.1", "custom"}, labels)
}
