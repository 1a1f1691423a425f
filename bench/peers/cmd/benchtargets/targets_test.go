package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Two passes of a few rows; the second pass's names end in -8, not -2.
// cost.txt is not written: its targets have no data.
var sample = map[string]string{
	"main.txt": `goos: linux
pkg: github.com/scriptlock/scriptlock/bench
BenchmarkLock/lib=scriptlock/driver=goredis/op=contended/clients=8/hold=1ms-2  1000  1400000 ns/op  0.95 fairness  700 handoffs/s  10000000 wait-p99-ns
BenchmarkLock/lib=scriptlock-fifo/driver=goredis/op=contended/clients=8/hold=1ms-2  1000  1400000 ns/op  1.000 fairness  700 handoffs/s  4000000 wait-p99-ns
BenchmarkLock/lib=scriptlock/driver=goredis/op=lock-unlock/clients=1-2  1000  120000 ns/op  18 allocs/op
BenchmarkLock/lib=raw/driver=goredis/op=lock-unlock/clients=1-2  1000  110000 ns/op  21 allocs/op
BenchmarkLock/lib=scriptlock/driver=goredis/op=contended/clients=8/hold=1ms-8  1000  1400000 ns/op  0.97 fairness  720 handoffs/s  12000000 wait-p99-ns
BenchmarkLock/lib=scriptlock-fifo/driver=goredis/op=contended/clients=8/hold=1ms-8  1000  1400000 ns/op  1.000 fairness  700 handoffs/s  6000000 wait-p99-ns
BenchmarkLock/lib=scriptlock/driver=goredis/op=lock-unlock/clients=1-8  1000  120000 ns/op  18 allocs/op
BenchmarkLock/lib=raw/driver=goredis/op=lock-unlock/clients=1-8  1000  110000 ns/op  21 allocs/op
PASS
`,
	"peers.txt": `pkg: github.com/scriptlock/scriptlock/bench/peers
BenchmarkLock/lib=redsync/driver=goredis/op=contended/clients=8/hold=1ms-2  1000  1400000 ns/op  800 handoffs/s  30000000 wait-p99-ns
BenchmarkLock/lib=redislock-tuned/driver=goredis/op=contended/clients=8/hold=1ms-2  1000  1400000 ns/op  600 handoffs/s  25000000 wait-p99-ns
BenchmarkLock/lib=redsync/driver=goredis/op=contended/clients=8/hold=1ms-8  1000  1400000 ns/op  760 handoffs/s  26000000 wait-p99-ns
BenchmarkLock/lib=redislock-tuned/driver=goredis/op=contended/clients=8/hold=1ms-8  1000  1400000 ns/op  600 handoffs/s  27000000 wait-p99-ns
`,
	"elect.txt": `pkg: github.com/scriptlock/scriptlock/bench
BenchmarkLockElect/lib=scriptlock/driver=goredis/op=resign/candidates=4-2  50  7000000 ns/op  1500000 elect-p50-ns  3000000 elect-p99-ns
BenchmarkLockElect/lib=scriptlock/driver=goredis/op=crash/candidates=4/ttl=200ms-2  20  210000000 ns/op  190000000 elect-p50-ns  260000000 elect-p99-ns
BenchmarkLockElect/lib=scriptlock/driver=goredis/op=resign/candidates=4-8  50  7000000 ns/op  1500000 elect-p50-ns  4000000 elect-p99-ns
BenchmarkLockElect/lib=scriptlock/driver=goredis/op=crash/candidates=4/ttl=200ms-8  20  210000000 ns/op  190000000 elect-p50-ns  230000000 elect-p99-ns
pkg: github.com/scriptlock/scriptlock/bench/peers
BenchmarkLockElect/lib=redislock/driver=goredis/op=resign/candidates=4-2  50  40000000 ns/op  30000000 elect-p50-ns  90000000 elect-p99-ns
BenchmarkLockElect/lib=rueidislock/driver=rueidis/op=resign/candidates=4-2  50  7000000 ns/op  1000000 elect-p50-ns  2000000 elect-p99-ns
BenchmarkLockElect/lib=redislock/driver=goredis/op=resign/candidates=4-8  50  40000000 ns/op  30000000 elect-p50-ns  95000000 elect-p99-ns
BenchmarkLockElect/lib=rueidislock/driver=rueidis/op=resign/candidates=4-8  50  7000000 ns/op  1000000 elect-p50-ns  3000000 elect-p99-ns
`,
	"paired.txt": `BenchmarkPaired/driver=goredis-2  200  30000000 ns/op  0.95 xraw  0.90 xredislock
BenchmarkPaired/driver=goredis-8  200  30000000 ns/op  0.89 xraw  1.00 xredislock
`,
}

// writeSample writes sample's files into a new folder and returns it.
func writeSample(t *testing.T) string {
	dir := t.TempDir()
	for name, text := range sample {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// loadSample reads the sample folder's files.
func loadSample(t *testing.T) *results {
	dir := writeSample(t)
	rs := newResults()
	for _, f := range []string{"main.txt", "peers.txt", "paired.txt", "cost.txt", "elect.txt"} {
		found, err := rs.loadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if want := f != "cost.txt"; found != want {
			t.Errorf("loadFile(%s) found = %v, want %v", f, found, want)
		}
	}
	return rs
}

func TestMedians(t *testing.T) {
	rs := loadSample(t)
	for _, c := range []struct {
		row  string
		unit string
		want float64
	}{
		{"BenchmarkLock/lib=scriptlock/driver=goredis/op=contended/clients=8/hold=1ms", "wait-p99-ns", 11e6},
		{"BenchmarkLock/lib=scriptlock/driver=goredis/op=contended/clients=8/hold=1ms", "fairness", 0.96},
		{"BenchmarkLock/lib=scriptlock/driver=goredis/op=contended/clients=8/hold=1ms", "ns/op", 1.4e6},
		{"BenchmarkLock/lib=scriptlock-fifo/driver=goredis/op=contended/clients=8/hold=1ms", "wait-p99-ns", 5e6},
		{"BenchmarkLock/lib=redsync/driver=goredis/op=contended/clients=8/hold=1ms", "handoffs/s", 780},
		{"BenchmarkPaired/driver=goredis", "xraw", 0.92},
		{"BenchmarkPaired/driver=goredis", "xredislock", 0.95},
	} {
		r := rs.byKey[c.row]
		if r == nil {
			t.Errorf("no row %s (the -2 and -8 passes should be one row)", c.row)
			continue
		}
		if n := len(r.samples[c.unit]); n != 2 {
			t.Errorf("%s %s: %d samples, want 2 (one per pass)", c.row, c.unit, n)
		}
		if got, _ := r.median(c.unit); !near(got, c.want) {
			t.Errorf("median of %s %s = %v, want %v", c.row, c.unit, got, c.want)
		}
	}
}

func TestVerdicts(t *testing.T) {
	cs := judge(loadSample(t))
	for _, c := range []struct {
		target string // a unique part of the target
		met    bool
		figure string // a part of the figures
	}{
		// 11 ms vs redislock-tuned's 26 ms (the lower peer median): 0.42x
		{"goredis: wait-p99 <= 0.5x the best peer's", true, "redislock-tuned/goredis 26000000 [25500000–26500000] wait-p99-ns: 0.42x"},
		// 11 ms vs FIFO's 5 ms: 2.20x
		{"goredis: wait-p99 <= 2x scriptlock-fifo's", false, "scriptlock-fifo/goredis 5000000 [4500000–5500000] wait-p99-ns: 2.20x"},
		{"goredis: fairness >= 0.9", true, "fairness 0.96 [0.955–0.965]"},
		// 710 vs redsync's 780 (the higher peer median): 0.91x
		{"goredis: handoffs/s >= 0.9x", true, "scriptlock/goredis 710 [705–715] vs redsync/goredis 780 [770–790] handoffs/s: 0.91x"},
		{"goredis: xraw >= 0.9", true, "xraw 0.92 [0.905–0.935]"},
		{"goredis: xredislock >= 1.0", false, "xredislock 0.95 [0.925–0.975]"},
		{"(1 client), goredis: scriptlock <= 1.5x raw", true, "18 [18–18] vs raw/goredis 21 [21–21] allocs/op: 0.86x"},
		{"election, goredis: Resign to the next leader, p99 <= 5 ms", true, "scriptlock/goredis elect-p99-ns 3500000 [3250000–3750000]"},
		// 3.5 ms vs rueidislock's 2.5 ms (the lower peer median): 1.40x
		{"election, goredis: Resign to the next leader, p99 <= 1.0x", false, "vs rueidislock/rueidis 2500000 [2250000–2750000] elect-p99-ns: 1.40x"},
		// 245 ms against 250 ms
		{"election, goredis: crash to the next leader", true, "elect-p99-ns 245000000 [237500000–252500000]"},
	} {
		var found *check
		for i := range cs {
			if strings.Contains(cs[i].target, c.target) {
				found = &cs[i]
				break
			}
		}
		if found == nil {
			t.Errorf("no target %q", c.target)
			continue
		}
		if len(found.missing) > 0 {
			t.Errorf("%s: no data: %v", found.target, found.missing)
			continue
		}
		if found.met != c.met || !strings.Contains(found.figures, c.figure) {
			t.Errorf("%s: met = %v, figures %q; want met = %v, figures with %q", found.target, found.met, found.figures, c.met, c.figure)
		}
	}
}

func TestReport(t *testing.T) {
	dir := writeSample(t)
	var b strings.Builder
	files := []string{"main.txt", "peers.txt", "paired.txt", "cost.txt", "elect.txt"}
	for i := range files {
		files[i] = filepath.Join(dir, files[i])
	}
	if err := run(&b, files); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"| target | figure(s), medians over passes [quartiles] | verdict |\n",
		"| contended (8 goroutines, 1 ms hold), goredis: fairness >= 0.9 | scriptlock/goredis fairness 0.96 [0.955–0.965] | met |\n",
		"| uncontended Lock+Unlock, goredis: xredislock >= 1.0 (BenchmarkPaired) | xredislock 0.95 [0.925–0.975] | missed |\n",
		"no data: server time per uncontended cycle, goredis: scriptlock <= 2x raw (BenchmarkScriptCost): BenchmarkScriptCost/lib=scriptlock/driver=goredis cycle-us/op (cost.txt)",
		"no data: semaphore, 1 client, goredis: Acquire+Unlock <= 1.5x the Mutex's Lock+Unlock server time (BenchmarkScriptCost): BenchmarkScriptCost/lib=scriptlock-semaphore/driver=goredis cycle-us/op (cost.txt); BenchmarkScriptCost/lib=scriptlock/driver=goredis cycle-us/op (cost.txt)",
		"no data: uncontended Lock+Unlock, redigo: xraw >= 0.9 (BenchmarkPaired): BenchmarkPaired/driver=redigo xraw (paired.txt)\n",
		"53 targets: 7 met, 3 missed, 43 without data\n",
		"cost.txt: not found)\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q; it is:\n%s", want, out)
		}
	}
}

func TestScriptCostFloor(t *testing.T) {
	dir := writeSample(t)
	cost := `BenchmarkScriptCost/lib=scriptlock/driver=goredis-2  5000  60000 ns/op  7.0 cycle-us/op
BenchmarkScriptCost/lib=raw/driver=goredis-2  5000  50000 ns/op  2.0 cycle-us/op
BenchmarkScriptCost/lib=empty-scripts/driver=goredis-2  5000  50000 ns/op  2.8 cycle-us/op
BenchmarkScriptCost/lib=scriptlock-semaphore/driver=goredis-2  5000  60000 ns/op  9.1 cycle-us/op
`
	if err := os.WriteFile(filepath.Join(dir, "cost.txt"), []byte(cost), 0o644); err != nil {
		t.Fatal(err)
	}
	rs := newResults()
	if _, err := rs.loadFile(filepath.Join(dir, "cost.txt")); err != nil {
		t.Fatal(err)
	}
	for _, c := range judge(rs) {
		switch {
		case strings.HasPrefix(c.target, "server time per uncontended cycle, goredis"):
			want := "scriptlock/goredis 7 vs raw/goredis 2 cycle-us/op: 3.50x (two empty scripts with the same keys and arguments: 2.80, 1.40x raw)"
			if c.met || c.figures != want {
				t.Errorf("%s: met = %v, figures %q; want missed, %q", c.target, c.met, c.figures, want)
			}
		case strings.HasPrefix(c.target, "semaphore, 1 client, goredis"):
			want := "semaphore 9.10 vs mutex 7 cycle-us/op: 1.30x"
			if !c.met || c.figures != want {
				t.Errorf("%s: met = %v, figures %q; want met, %q", c.target, c.met, c.figures, want)
			}
		}
	}
}

func TestUnreadable(t *testing.T) {
	// a folder where a file is expected cannot be read
	if err := run(&strings.Builder{}, []string{t.TempDir()}); err == nil {
		t.Error("run on a folder as a file: no error, want one")
	}
}

// near reports whether a and b agree to 1e-9.
func near(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }

func TestOverlap(t *testing.T) {
	for _, c := range []struct {
		a, b figure
		want bool
	}{
		{figure{q1: 880, q3: 892, n: 6}, figure{q1: 891, q3: 900, n: 6}, true}, // inside the noise
		{figure{q1: 8.5e6, q3: 9.6e6, n: 6}, figure{q1: 40e6, q3: 42e6, n: 6}, false},
		{figure{q1: 7, q3: 7, n: 1}, figure{q1: 7, q3: 7, n: 1}, false}, // one pass: no spread to judge
	} {
		if got := overlap(c.a, c.b); got != c.want {
			t.Errorf("overlap(%+v, %+v) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
	l := &lookup{}
	a := figure{label: "scriptlock/goredis", v: 888, q1: 883, q3: 892, n: 6}
	b := figure{label: "redislock/goredis", v: 897, q1: 891, q3: 900, n: 6}
	c := l.compare(check{}, "handoffs/s", a, b, func(r float64) bool { return r >= 0.9 })
	if want := "scriptlock/goredis 888 [883–892] vs redislock/goredis 897 [891–900] handoffs/s: 0.99x ~"; !c.met || c.figures != want {
		t.Errorf("compare: met = %v, figures %q; want met, %q", c.met, c.figures, want)
	}
}
