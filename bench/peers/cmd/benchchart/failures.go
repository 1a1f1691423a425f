package main

import (
	"bufio"
	"os"
	"strings"
)

// failures counts, per row and scenario, the passes in which a benchmark
// leaf failed, from the failures file scripts/bench.sh writes (lines such
// as "    --- FAIL: BenchmarkLock/lib=x/driver=y/op=z/leases=10000").
type failures map[string]map[string]int

// loadFailures reads path; an empty path gives no failures.
func loadFailures(path string) (failures, error) {
	f := failures{}
	if path == "" {
		return f, nil
	}
	file, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	sc := bufio.NewScanner(file)
	for sc.Scan() {
		f.add(sc.Text())
	}
	return f, sc.Err()
}

// add records line if it names a failed leaf (a parent's failure, which
// names no scenario, is left out: its leaf is listed too).
func (f failures) add(line string) {
	_, name, ok := strings.Cut(line, "--- FAIL: ")
	if !ok {
		return
	}
	name, _, _ = strings.Cut(strings.TrimSpace(name), " ")
	row, scenario := split(name)
	if row == "" || scenario == "" {
		return
	}
	if f[row] == nil {
		f[row] = map[string]int{}
	}
	f[row][scenario]++
}
