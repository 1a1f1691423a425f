// Command benchchart draws the main figures of scriptlock's benchmarks, per
// library and driver, from raw `go test -bench` output files (as written by
// scripts/bench.sh), as a PNG or SVG chart.
//
// Usage:
//
//	benchchart [-o chart.png] [-title text] [-failures failures.txt] results/*.txt
//
// It parses the files with golang.org/x/perf/benchfmt, takes the median and
// the quartiles of every figure over all runs of a benchmark
// (scripts/bench.sh makes several passes), and draws one horizontal bar
// panel per figure, each bar to its median with a whisker from the first
// to the third quartile, labelled "median [q1–q3]" (bars whose whiskers
// overlap differ by less than the noise between passes): lock-unlock with
// 1 client (µs per pair, and allocs per pair), lock-unlock with 64 clients
// (pairs/s), for the contended scenario p99 wait, handoffs/s and
// fairness, the read-write scenario's µs per lock+unlock, and the CPU cost
// of auto-refreshing 10,000 leases (ms per second). Rows are "lib/driver" (scriptlock first, then the raw
// reference, the in-process sync.Mutex and the peers). The output format
// follows the extension of -o: .png or .svg. Several -o flags may be given.
// With -failures (the failures.txt scripts/bench.sh writes), a row that
// failed in some passes says so in its bar's label, and one that failed in
// every pass is drawn without a bar, labelled "failed in every pass"; the
// reasons are in that file.
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
)

// outputs collects repeated -o flags.
type outputs []string

func (o *outputs) String() string     { return strings.Join(*o, ",") }
func (o *outputs) Set(v string) error { *o = append(*o, v); return nil }

func main() {
	var outs outputs
	flag.Var(&outs, "o", "output file, .png or .svg (repeatable; default chart.png)")
	title := flag.String("title", "scriptlock benchmarks (medians and quartiles)", "chart title")
	failed := flag.String("failures", "", "failures file of scripts/bench.sh: failed rows are marked")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: benchchart [-o chart.png] [-title text] [-failures file] files...\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	if len(outs) == 0 {
		outs = outputs{"chart.png"}
	}
	if err := run(flag.Args(), outs, *title, *failed); err != nil {
		fmt.Fprintln(os.Stderr, "benchchart:", err)
		os.Exit(1)
	}
}

func run(files []string, outs []string, title, failuresFile string) error {
	t, err := load(files)
	if err != nil {
		return err
	}
	fails, err := loadFailures(failuresFile)
	if err != nil {
		return err
	}
	for _, o := range outs {
		if err := draw(t, panels, fails, title, o); err != nil {
			return err
		}
	}
	return nil
}
