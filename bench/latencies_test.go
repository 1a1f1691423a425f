package bench

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLatencies checks the histogram's buckets: contiguous, each value's
// bucket midpoint within 1% of it, and quantiles within 1% of the exact
// nearest-rank ones.
func TestLatencies(t *testing.T) {
	require.Equal(t, latBuckets-1, latIndex(math.MaxInt64), "latIndex(MaxInt64)")
	prev := -1
	for v := range uint64(1 << 16) {
		i := latIndex(v)
		require.True(t, i == prev || i == prev+1, "latIndex(%d) = %d after %d: buckets not contiguous", v, i, prev)
		prev = i
		mid := float64(latValue(i))
		require.InEpsilon(t, float64(v)+1, mid+1, 0.01, "latValue(latIndex(%d)) = %v", v, mid)
	}

	var h latencies
	assert.Equal(t, time.Duration(0), h.quantile(0.99), "quantile of an empty histogram")
	rng := rand.New(rand.NewPCG(1, 2))
	var all []time.Duration
	var parts [2]latencies
	for i := range 100_000 {
		d := time.Duration(rng.ExpFloat64() * float64(time.Millisecond))
		all = append(all, d)
		parts[i%2].add(d)
	}
	h.merge(&parts[0])
	h.merge(&parts[1])
	slices.Sort(all)
	for _, p := range []float64{0.5, 0.9, 0.99, 1} {
		assert.InEpsilon(t, float64(percentile(all, p)), float64(h.quantile(p)), 0.01, "quantile(%v)", p)
	}
}

func TestParseInfo(t *testing.T) {
	txt := "# CPU\r\nused_cpu_sys:1.500000\r\nused_cpu_user:0.250000\r\nused_cpu_sys_children:9.000000\r\n" +
		"# Commandstats\r\n" +
		"cmdstat_evalsha:calls=10,usec=150,usec_per_call=15.00,rejected_calls=0,failed_calls=0\r\n" +
		"cmdstat_hset:calls=10,usec=12,usec_per_call=1.20,rejected_calls=0,failed_calls=0\r\n" +
		"cmdstat_info:calls=3,usec=300,usec_per_call=100.00,rejected_calls=0,failed_calls=0\r\n" +
		"cmdstat_eval:calls=2,usec=30,usec_per_call=15.00,rejected_calls=0,failed_calls=0\r\n" +
		"cmdstat_wait:calls=4,usec=8,usec_per_call=2.00,rejected_calls=0,failed_calls=0\r\n" +
		"cmdstat_waitaof:calls=1,usec=3,usec_per_call=3.00,rejected_calls=0,failed_calls=0\r\n"
	got := parseInfo(txt)
	want := cost{cpuUsec: 1.75e6, scriptUsec: 180, scripts: 12, waitUsec: 11, waits: 5}
	if got != want {
		t.Errorf("parseInfo = %+v, want %+v (children's CPU and other commands left out, waits apart)", got, want)
	}
}
