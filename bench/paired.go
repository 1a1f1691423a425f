package bench

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"
)

// PairedChunk is how many Lock+Unlock cycles a target runs in one turn of
// [Paired].
const PairedChunk = 100

// Paired compares the uncontended lock-unlock cycle (op=lock-unlock,
// clients=1) of targets, whose first is the subject, run interleaved in one
// process against the Redis at addr: b.N rounds, in each of which every
// target runs PairedChunk cycles on its own key, in an order rotated per
// round. Neighbouring turns share the machine's state (other processes'
// load, the server's), so the ratio of two targets' turns in one round
// holds still where separate rows' ns/op swing widely; the figures are
// medians over the rounds:
//
//   - <lib>-us/cycle: the target's time per cycle;
//   - x<lib> for every other target: the subject's throughput divided by
//     that target's (its turn's time over the subject's); the performance
//     targets read "xraw >= 0.9" and "xredislock >= 1.0";
//   - x<lib>-q1 and x<lib>-q3: the quartiles of that ratio.
//
// ns/op is the time of a whole round, all targets' turns. Each target is
// built once with its New, on fresh clients.
func Paired(b *testing.B, addr string, targets []Target) {
	// Every call runs under the row budget (see DefaultRowBudget); explain
	// says why a call failed once it passed.
	ctx, explain, cancel := budgetContext(context.Background(), 0)
	defer cancel()
	type turn struct {
		lib  string
		l    Locker
		key  string
		took []float64 // ns per cycle, per round
	}
	ts := make([]*turn, len(targets))
	for i, t := range targets {
		l, _ := t.New(b, addr)
		ts[i] = &turn{lib: t.Lib, l: l, key: keyPrefix(t) + "paired"}
		for range 20 { // connections open, scripts loaded
			if err := lockUnlockOnce(ctx, l, ts[i].key); err != nil {
				b.Fatalf("%s: %v", t.Name(), explain(err))
			}
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for r := 0; b.Loop(); r++ {
		for j := range ts {
			t := ts[(j+r)%len(ts)]
			start := time.Now()
			for range PairedChunk {
				if err := lockUnlockOnce(ctx, t.l, t.key); err != nil {
					b.Fatalf("lib=%s: %v", t.lib, explain(err))
				}
			}
			t.took = append(t.took, float64(time.Since(start).Nanoseconds())/PairedChunk)
		}
	}
	b.StopTimer()
	subject := ts[0]
	for _, t := range ts {
		b.ReportMetric(quantile(t.took, 0.5)/1e3, metricName(t.lib)+"-us/cycle")
		if t == subject {
			continue
		}
		ratios := make([]float64, len(t.took))
		for i := range ratios {
			ratios[i] = t.took[i] / subject.took[i]
		}
		name := "x" + metricName(t.lib)
		b.ReportMetric(quantile(ratios, 0.5), name)
		b.ReportMetric(quantile(ratios, 0.25), name+"-q1")
		b.ReportMetric(quantile(ratios, 0.75), name+"-q3")
	}
}

// quantile returns the q-quantile of xs (nearest rank; 0 when empty).
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[int(q*float64(len(s)-1)+0.5)]
}

// metricName makes lib usable in a metric unit (no spaces, no slashes).
func metricName(lib string) string {
	return strings.NewReplacer(" ", "-", "/", "-").Replace(lib)
}
