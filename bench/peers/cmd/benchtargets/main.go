// Command benchtargets prints scriptlock's performance targets, each with
// the figures of one benchmark run and the verdict "met" or "missed", from
// the raw files scripts/bench.sh writes.
//
// Usage:
//
//	benchtargets [-main f] [-peers f] [-paired f] [-cost f] [-elect f] [dir]
//
// dir (default ".") is a results folder, such as a published
// bench/results-<date>-<name>-raw/; the files default to main.txt,
// peers.txt, paired.txt (BenchmarkPaired), cost.txt
// (BenchmarkScriptCost) and elect.txt (BenchmarkLockElect, both binaries)
// in it, and each flag names one elsewhere. Rows
// repeat once per pass: every figure is the median of a row's samples
// over the passes (names compared without their -<GOMAXPROCS> suffix).
//
// It prints a markdown table, one line per target and driver: the target,
// the figures it was judged on (the medians, each with its quartiles over
// the passes in brackets, and the ratio between them to 2 decimals,
// marked "~" when the two quartile ranges overlap: a difference inside
// the noise) and "met" or "missed", judged on the medians. The targets:
//
//   - contended Mutex, 8 goroutines holding 1 ms (op=contended/clients=8/
//     hold=1ms), per driver: wait-p99-ns at most 0.5x the lowest of any
//     peer row (redsync, bsm/redislock, rueidislock, default or -tuned, on
//     any driver) and at most 2x scriptlock-fifo's on the same driver;
//     fairness at least 0.9; handoffs/s at least 0.9x the highest of any
//     peer row;
//   - uncontended Lock+Unlock (BenchmarkPaired): xraw at least 0.9 on
//     every driver, xredislock at least 1.0 on goredis;
//   - the server's time per uncontended cycle (BenchmarkScriptCost):
//     scriptlock's cycle-us/op at most 2x raw's, per driver;
//   - 64 clients (op=lock-unlock/clients=64): throughput (the best peer's
//     ns/op over ours) at least 1.0x the best peer's on the same driver,
//     1.3x on rueidis; a driver no peer runs on (redigo, valkeygo) is
//     compared with the best peer of any driver, and the line says so;
//   - allocations per uncontended cycle (op=lock-unlock/clients=1):
//     scriptlock's allocs/op at most 1.5x raw's on the same driver;
//   - semaphore: the server's time per uncontended Acquire+Unlock
//     (BenchmarkScriptCost's cycle-us/op) at most 1.5x the Mutex's
//     Lock+Unlock on the same driver; with 16 goroutines, scripts/op
//     (script calls per grant) at most 3;
//   - leader election (BenchmarkLockElect), per driver: from a Resign to
//     the next leader's Campaign returning, elect-p99-ns at most 5 ms and
//     at most 1.0x the lowest of the peers' hand-written elections; from
//     a leader's crash, at most the TTL (200 ms) plus 50 ms.
//
// A target whose rows are missing (a file not written, a row that failed
// in every pass) gets a line "no data: <target>: <row> <unit> (<file>)"
// after the table instead of a verdict; the last line counts the
// verdicts. Missed targets are a result, not an error: the exit status is
// 0, and 1 only when a file exists but cannot be read.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

func main() {
	mainF := flag.String("main", "", "main module's rows (default <dir>/main.txt)")
	peersF := flag.String("peers", "", "peers' rows (default <dir>/peers.txt)")
	pairedF := flag.String("paired", "", "BenchmarkPaired's rows (default <dir>/paired.txt)")
	costF := flag.String("cost", "", "BenchmarkScriptCost's rows (default <dir>/cost.txt)")
	electF := flag.String("elect", "", "BenchmarkLockElect's rows (default <dir>/elect.txt)")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: benchtargets [-main f] [-peers f] [-paired f] [-cost f] [-elect f] [results-dir]\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() > 1 {
		flag.Usage()
		os.Exit(2)
	}
	dir := "."
	if flag.NArg() == 1 {
		dir = flag.Arg(0)
	}
	files := []string{*mainF, *peersF, *pairedF, *costF, *electF}
	for i, name := range []string{"main.txt", "peers.txt", "paired.txt", "cost.txt", "elect.txt"} {
		if files[i] == "" {
			files[i] = filepath.Join(dir, name)
		}
	}
	if err := run(os.Stdout, files); err != nil {
		fmt.Fprintln(os.Stderr, "benchtargets:", err)
		os.Exit(1)
	}
}

// run reads files (a missing one is noted and gives no rows) and prints
// the targets' table to w.
func run(w io.Writer, files []string) error {
	rs := newResults()
	var absent []string
	for _, f := range files {
		found, err := rs.loadFile(f)
		if err != nil {
			return err
		}
		if !found {
			absent = append(absent, f)
		}
	}
	report(w, judge(rs))
	for _, f := range absent {
		fmt.Fprintf(w, "(%s: not found)\n", f)
	}
	return nil
}
