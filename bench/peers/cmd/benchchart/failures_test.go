package main

import "testing"

func TestFailures(t *testing.T) {
	f := failures{}
	for _, line := range []string{
		"pass 2, peers (exit 1):",
		"    --- FAIL: BenchmarkLock/lib=rueidislock/driver=rueidis/op=refresh/leases=10000",
		"        target.go:89: lib=rueidislock/driver=rueidis/op=refresh/leases=10000: 6202 of 10000 leases lost",
		"    --- FAIL: BenchmarkLock/lib=rueidislock/driver=rueidis",
		"    --- FAIL: BenchmarkLock",
		"    --- FAIL: BenchmarkLock/lib=rueidislock/driver=rueidis/op=refresh/leases=10000 (0.33s)",
	} {
		f.add(line)
	}
	if got := f["rueidislock/rueidis"]["op=refresh/leases=10000"]; got != 2 {
		t.Errorf("failed passes of rueidislock/rueidis refresh = %d, want 2 (parents left out): %v", got, f)
	}
	if len(f) != 1 {
		t.Errorf("failures = %v, want one row", f)
	}
}
