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

// TestVerdictSections checks the verdict's two sections and bottom line:
// a rule that failed its own checks is a safety failure; one that only
// exceeded a bound while the machine kept time is "late" and fails the
// timing section; one whose bound was not judged passes, reported with its
// figures.
func TestVerdictSections(t *testing.T) {
	type cell struct{ rule, st string }
	unjudged := timingNote{kind: timingNotJudged, what: "Unlock: took 376ms, bound 300ms"}
	exceeded := timingNote{kind: timingExceeded, what: "Lock: took 2s, bound 1s"}
	for _, c := range []struct {
		name  string
		cells []cell
		notes map[string]timingNote // by rule
		want  []string
	}{
		{"clean", []cell{{"Mutex/Exclusion", "pass"}}, nil, []string{
			"safety: PASS, 1 rule runs", "timing: clean",
			"certified: goredis/standalone: Redis 7.0.15; profile full",
			"fit for scriptlock: yes — safety PASS, timing clean",
		}},
		{"unjudged", []cell{{"Mutex/Exclusion", "pass"}, {"Outcome/Release/Delayed", "unjudged"}},
			map[string]timingNote{"Outcome/Release/Delayed": unjudged}, []string{
				"safety: PASS, 2 rule runs",
				"0 bounds exceeded while the machine kept time, 1 not judged on this machine",
				"not judged:  Outcome/Release/Delayed on goredis/standalone: Unlock: took 376ms, bound 300ms",
				"fit for scriptlock: yes — safety PASS, timing: 1 bounds not judged on this machine",
			}},
		{"late", []cell{{"Quorum/SilentMinority/Freeze", "late"}},
			map[string]timingNote{"Quorum/SilentMinority/Freeze": exceeded}, []string{
				"safety: PASS",
				"exceeded:  Quorum/SilentMinority/Freeze on goredis/standalone: Lock: took 2s, bound 1s",
				"fit for scriptlock: NO — safety PASS, timing: a bound exceeded while the machine kept time",
			}},
		{"safety", []cell{{"Mutex/Exclusion", "FAIL"}, {"Outcome/Release/Delayed", "unjudged"}}, nil, []string{
			"safety: FAIL, 1 of 2 rule runs:\n  Mutex/Exclusion on goredis/standalone",
			"fit for scriptlock: NO — safety FAIL",
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := &verdictBook{cells: map[verdictKey]string{}, reasons: map[verdictKey]string{}}
			d := &deployment{name: "standalone", driver: Driver{Name: "goredis"}, owned: true, profile: ProfileFull, profileWhy: "owned", server: "Redis 7.0.15"}
			b.deployment(d)
			for _, x := range c.cells {
				b.record(d, x.rule, x.st, "")
				if n, ok := c.notes[x.rule]; ok {
					b.timings = append(b.timings, timingRow{col: b.cols[0], rule: x.rule, note: n})
				}
			}
			got := b.table()
			for _, w := range c.want {
				assert.Contains(t, got, w)
			}
		})
	}
}
