// Command compatreport prints the summary table of scripts/compat.sh: for
// each server, driver and deployment, how many conformance rules passed,
// failed or were not applicable (skipped, with the reason), read from the
// `go test -json` output of one run per server.
//
//	go run ./internal/compatreport "Redis 6.2.16=out/redis-6.2.16.json" ...
//
// It exits with status 1 when a rule failed or a run did not finish.
package main

import (
	"cmp"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: compatreport LABEL=FILE.json ...")
		os.Exit(2)
	}
	var runs []*run
	for _, arg := range os.Args[1:] {
		label, path, ok := strings.Cut(arg, "=")
		if !ok {
			fmt.Fprintf(os.Stderr, "compatreport: %q: want LABEL=FILE.json\n", arg)
			os.Exit(2)
		}
		f, err := os.Open(path)
		if err != nil {
			fmt.Fprintln(os.Stderr, "compatreport:", err)
			os.Exit(2)
		}
		r, err := parse(label, f)
		f.Close()
		if err != nil {
			fmt.Fprintln(os.Stderr, "compatreport:", err)
			os.Exit(2)
		}
		runs = append(runs, r)
	}
	slices.SortStableFunc(runs, func(a, b *run) int { return compareLabels(a.server, b.server) })
	if !report(os.Stdout, runs) {
		os.Exit(1)
	}
}

// compareLabels orders servers labelled "Redis 6.2.16", "Valkey 8.0.1":
// Redis before Valkey, then by version; other labels keep their order,
// after those.
func compareLabels(a, b string) int {
	pa, va, oka := splitLabel(a)
	pb, vb, okb := splitLabel(b)
	switch {
	case !oka || !okb:
		return cmp.Compare(btoi(!oka), btoi(!okb))
	case pa != pb:
		return strings.Compare(pa, pb)
	}
	return slices.Compare(va, vb)
}

func splitLabel(l string) (product string, version []int, ok bool) {
	product, v, ok := strings.Cut(l, " ")
	if !ok {
		return "", nil, false
	}
	for _, f := range strings.Split(v, ".") {
		n, err := strconv.Atoi(f)
		if err != nil {
			return "", nil, false
		}
		version = append(version, n)
	}
	return product, version, true
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
