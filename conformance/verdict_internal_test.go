package conformance

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestVerdictTable checks the verdict's shape: a header per column with
// its server and profile, a row per group with its counts, a row of its
// own only for a rule that did not pass everywhere, the worst outcome of
// a rule run twice, and each reason once as a numbered footnote.
func TestVerdictTable(t *testing.T) {
	b := &verdictBook{cells: map[verdictKey]string{}, reasons: map[verdictKey]string{}}
	sa := &deployment{name: "standalone", driver: Driver{Name: "goredis"}, owned: true, profile: ProfileFull, profileWhy: "owned", server: "Redis 7.0.15", addrs: []string{"127.0.0.1:1"}}
	ext := &deployment{name: "standalone", driver: Driver{Name: "goredis"}, profile: ProfileSafe, profileWhy: "named", server: "Redis 7.2.4", addrs: []string{"10.0.0.1:6379"}, conn: Conn{Username: "app"}}
	b.deployment(sa)
	b.deployment(ext)
	for _, r := range []string{"Mutex/OneWinner", "Mutex/Exclusion", "Wait/PushWakeup"} {
		b.record(sa, r, "pass", "")
		b.record(ext, r, "pass", "")
	}
	b.record(sa, "Mutex/TwoRoundTrips", "pass", "")
	b.record(ext, "Mutex/TwoRoundTrips", "n/a", "needs INFO")
	b.record(ext, "Chaos/ClientKill", "n/a", "needs INFO") // the same reason: one footnote
	b.record(sa, "Chaos/ClientKill", "n/a", "")
	b.record(sa, "Chaos/ClientKill", "FAIL", "") // run twice: the worst shows
	b.record(sa, "Chaos/ClientKill", "pass", "")

	got := b.table()
	t.Logf("verdict:\n%s", got)
	for _, want := range []string{
		"goredis/standalone: Redis 7.0.15; profile full (owned)",
		"goredis/standalone* safe: Redis 7.2.4 at 10.0.0.1:6379 as app; profile safe (named)",
		"Mutex (3)      | 3 pass             | 2 pass 1 n/a",
		"  Mutex/TwoRoundTrips | pass",
		"Wait (1)",
		"  Chaos/ClientKill",
		"| FAIL",
		"[1] needs INFO",
		"total",
	} {
		assert.Contains(t, squeeze(got), squeeze(want), "the verdict")
	}
	assert.NotContains(t, got, "  Mutex/OneWinner", "a rule that passed everywhere has no row of its own")
	assert.NotContains(t, got, "[2]", "one footnote per distinct reason")
	assert.Equal(t, 2, strings.Count(got, "n/a [1]"), "the two n/a cells with the same reason point to one footnote")
	assert.Contains(t, squeeze(got), "Chaos (1) | 1 FAIL | 1 n/a", "a group's counts take each rule's worst outcome")
}

// squeeze collapses runs of spaces, so that checks do not depend on the
// column widths.
func squeeze(s string) string { return strings.Join(strings.Fields(s), " ") }
