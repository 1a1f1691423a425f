#!/usr/bin/env bash
# bench.sh — the main job: benchmarks every scriptlock driver, the raw
# SET NX PX reference, sync.Mutex and the peer libraries (redsync,
# bsm/redislock, rueidislock) against one redis-server, interleaved, then
# prints benchstat tables and draws a chart. Needs nothing but Go: it
# installs redis-server when it is missing and apt-get is there, as
# scripts/test.sh does.
#
#   scripts/bench.sh                     # short mode: 6 passes x 150ms, 10-20 min on 2 cores
#   BENCH_MODE=full scripts/bench.sh     # full mode: 10 passes x 1s, ~30 min
#   scripts/bench.sh --help              # print this and exit (also -h)
#
# Arguments: none but -h/--help; every setting is an environment variable.
#
# Environment:
#   BENCH_MODE=short|full   preset of passes and benchtime (default short)
#   BENCH_PASSES=N          override the number of passes
#   BENCH_TIME=D            override -test.benchtime (such as 500ms, 2s)
#   BENCH_CONTENDED_N=N     grants per contended row (and semaphore row) and
#                           pass (default 1000: enough waits for a p99); with
#                           the default filter those rows run apart, with
#                           -test.benchtime Nx
#   BENCH_FILTER=RE         -test.bench regexp (default ., every row), such
#                           as 'Lock/lib=scriptlock' or 'Lock/.*/op=contended'.
#                           Each /-separated part matches one level and rows
#                           without a driver level (syncmutex) have one level
#                           fewer; the read-write and auto-refresh scenarios
#                           alone: 'Lock/./(driver|op=(rw|refresh))/(op=(rw|refresh)|clients=16)'
#   BENCH_ROW_BUDGET=D      the time one run of a row may take (default
#                           30s; op=refresh rows get their window on top): a
#                           row still running at its budget is stopped,
#                           listed as "did not finish" with what it was
#                           waiting in, and the run goes on
#   BENCH_OUT=DIR           results folder (default bench/results/<UTC time>,
#                           ignored by git)
#   BENCH_PUBLISH=1         also publish the results beside RESULTS.md (see
#                           below); by default they stay in BENCH_OUT only
#   BENCH_NAME=NAME         name of the published copy (default the mode:
#                           short or full)
#   SCRIPTLOCK_REDIS_ADDR   host:port of an existing standalone Redis to use
#                           instead of starting one; the benchmarks write
#                           only keys under bench:*, scriptlock:*,
#                           rueidislock:* and flush nothing. The Cluster
#                           rows (BenchmarkLockCluster) start a 3-master
#                           Cluster of their own, or use the one named by
#                           SCRIPTLOCK_CLUSTER_ADDRS; so do the
#                           acknowledged rows (BenchmarkLockAck), whose
#                           Cluster has a replica per master (an external
#                           one must have them too). The quorum rows
#                           (BenchmarkLockQuorum) always start three
#                           standalone servers of their own (redis-server
#                           on PATH), whatever this variable names.
#
# Each pass runs the compiled main-module binary (bench/) and then the peers'
# binary (bench/peers, its own module), so machine drift hits every row
# alike; raw output is appended to main.txt and peers.txt in the results
# folder (the rows over the simulated network, on a Cluster, with
# acknowledged grants and in quorum mode to rtt.txt, cluster.txt, ack.txt
# and quorum.txt, a table each), with env.txt (machine, Redis, Go,
# settings), tables.txt and chart.png/chart.svg. With the default filter
# every pass also runs BenchmarkScriptCost (the server's time per command
# of an uncontended cycle, scriptlock's and raw's, on the idle server;
# 5000 cycles, a few seconds) into cost.txt and BenchmarkPaired
# (scriptlock's uncontended cycle interleaved with raw's and the peer's:
# xraw, xredislock, xrueidislock; 50 rounds) into paired.txt, and both
# binaries run BenchmarkLockElect (leader election: 200 resignations and
# 20 crashes of a leader, per row) into elect.txt. Six passes
# is the fewest for which benchstat prints 95% intervals. Tables use
# -table '' so rows of both binaries (whose pkg lines differ) land in one
# table; each table is preceded by the benchstat command that prints it
# from the raw files. benchstat prints each median with its 95% confidence
# interval (± %) and marks a difference it cannot tell from the noise with
# "~". Table (j) is the performance targets, each with the run's medians,
# their quartiles over the passes, and "met" or "missed"
# (bench/peers/cmd/benchtargets, from main.txt, peers.txt, paired.txt and
# cost.txt; a ratio of two figures whose quartile ranges overlap is marked
# "~", inside the noise; "no data" for a target whose rows are missing),
# preceded by the command that reprints it. The chart draws each figure's
# median with a whisker from its first to its third quartile over the
# passes.
#
# The run always ends with the tables and the chart, drawn from the rows
# that finished. Every row runs under its budget (BENCH_ROW_BUDGET); a row
# that failed or did not finish, and a pass whose binary died (a crash, a
# signal, the out-of-memory killer), are listed under the tables with the
# reason, and the passes go on. While a pass runs, a row that has been
# running for over a minute is named on the progress lines.
#
# Publishing (BENCH_PUBLISH=1): at the end the tables are copied to
# bench/results-<UTC date>-<BENCH_NAME>.txt, the raw files (main.txt,
# peers.txt, paired.txt, cost.txt, rtt.txt, cluster.txt, ack.txt,
# quorum.txt, hold.txt, elect.txt, env.txt, failures.txt) to
# bench/results-<UTC date>-<BENCH_NAME>-raw/ (a -HHMM suffix when those
# exist already) and the chart to bench/chart.png and bench/chart.svg,
# ready to commit with RESULTS.md: the commands above each table reproduce
# it from that folder.
set -Eeuo pipefail

usage() { sed -n '2,/^set -Eeuo pipefail$/p' "$0" | sed '$d; s/^# \{0,1\}//; s/^#$//'; }
for arg in "$@"; do
	case $arg in
	-h | -help | --help | help)
		usage
		exit 0
		;;
	*)
		echo "bench.sh: unknown argument \"$arg\": it takes none (settings are environment variables)" >&2
		echo "run 'scripts/bench.sh --help' for them" >&2
		exit 2
		;;
	esac
done

cd "$(dirname "$0")/.."
root=$PWD
. scripts/lib.sh

mode=${BENCH_MODE:-short}
case $mode in
short) passes=6 benchtime=150ms ;;
full) passes=10 benchtime=1s ;;
*)
	echo "BENCH_MODE must be short or full, not $mode" >&2
	exit 2
	;;
esac
passes=${BENCH_PASSES:-$passes}
contended_n=${BENCH_CONTENDED_N:-1000}
# the contended rows and the semaphore's, with and without a driver level
# (see BENCH_FILTER)
contended='Lock/./(driver|op=(contended|semaphore))/(op=(contended|semaphore)|clients)'
# rounds of BenchmarkPaired and cycles of BenchmarkScriptCost per pass (a
# few seconds each; default filter only)
paired_n=50
cost_n=5000
# terms of the election rows per pass (default filter only): resignations
# (200, so that the p99 is a p99, the second slowest, rather than the
# slowest of a few; about 35 s a pass, most of it the pollers' retry
# waits), and crashes (each waits out a 200 ms TTL)
elect_n=200
elect_crash_n=20

benchtime=${BENCH_TIME:-$benchtime}
filter=${BENCH_FILTER:-.}
out=${BENCH_OUT:-bench/results/$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$out"
out=$(cd "$out" && pwd)

tmp=$(mktemp -d "${TMPDIR:-/tmp}/scriptlock-bench.XXXXXX")
redis_pid=""
cleanup() {
	if [[ -n "$redis_pid" ]]; then
		kill "$redis_pid" 2>/dev/null || true
		wait "$redis_pid" 2>/dev/null || true
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'echo "bench.sh: interrupted; the results so far are in $out" >&2; exit 130' INT TERM
# Never stop without saying why: a command that fails outside the guarded
# places names itself.
trap 'echo "bench.sh: stopped at line $LINENO: \"$BASH_COMMAND\" failed (exit $?); the results so far are in $out" >&2' ERR

# free_port prints a loopback TCP port nobody listens on right now.
free_port() {
	local p
	for _ in $(seq 50); do
		p=$((20000 + RANDOM % 30000))
		if ! (echo >"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			echo "$p"
			return 0
		fi
	done
	echo "no free port found" >&2
	return 1
}

# start_redis starts a throwaway redis-server (no RDB, no AOF) and exports
# SCRIPTLOCK_REDIS_ADDR for both benchmark binaries.
start_redis() {
	local port
	for _ in 1 2 3; do
		port=$(free_port)
		redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no \
			--daemonize no --dir "$tmp" --logfile "$tmp/redis.log" &
		redis_pid=$!
		for _ in $(seq 100); do
			if redis-cli -p "$port" ping 2>/dev/null | grep -q PONG; then
				export SCRIPTLOCK_REDIS_ADDR=127.0.0.1:$port
				return 0
			fi
			kill -0 "$redis_pid" 2>/dev/null || break
			sleep 0.1
		done
		kill "$redis_pid" 2>/dev/null || true
		wait "$redis_pid" 2>/dev/null || true
		redis_pid=""
	done
	echo "redis-server did not start; its log:" >&2
	tail -20 "$tmp/redis.log" >&2 || true
	return 1
}

# redis_version asks the server for its version (redis-cli, when present).
redis_version() {
	local host=${SCRIPTLOCK_REDIS_ADDR%:*} port=${SCRIPTLOCK_REDIS_ADDR##*:}
	if command -v redis-cli >/dev/null; then
		redis-cli -h "$host" -p "$port" info server | tr -d '\r' | sed -n 's/^redis_version://p'
	else
		echo unknown
	fi
}

start=$SECONDS
if [[ -z "${SCRIPTLOCK_REDIS_ADDR:-}" ]]; then
	ensure_redis
	start_redis
	echo "== redis-server $(redis_version) started on $SCRIPTLOCK_REDIS_ADDR"
else
	echo "== using the Redis at SCRIPTLOCK_REDIS_ADDR=$SCRIPTLOCK_REDIS_ADDR"
fi

echo "== compiling the benchmark binaries and tools"
go test -c -o "$tmp/main.test" ./bench
(cd bench/peers && go test -c -o "$tmp/peers.test" . &&
	go build -o "$tmp/benchstat" golang.org/x/perf/cmd/benchstat &&
	go build -o "$tmp/benchchart" ./cmd/benchchart &&
	go build -o "$tmp/benchtargets" ./cmd/benchtargets)

{
	echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
	echo "mode: $mode, passes: $passes, benchtime: $benchtime (contended rows: ${contended_n} grants), filter: $filter"
	echo "go: $(go version)"
	echo "redis: $(redis_version) at $SCRIPTLOCK_REDIS_ADDR"
	echo "nproc: $(nproc 2>/dev/null || echo ?)"
	if command -v lscpu >/dev/null; then
		lscpu | grep -E '^(Model name|CPU\(s\)|Thread|Core|Socket|Hypervisor)' || true
	fi
	echo "kernel: $(uname -srm)"
} >"$out/env.txt"

# keep_rows appends the result lines of the benchmark output $1 to the
# results file $2, except the rows of BenchmarkLockAck, BenchmarkLockQuorum
# and BenchmarkLockElect, which go to ack.txt, quorum.txt and elect.txt
# (tables (h), (i) and (k)) whichever run printed them (the default filter
# runs them apart; a BENCH_FILTER such as 'LockAck|LockQuorum' or
# 'LockElect' in the main run).
keep_rows() {
	local src=$1 dst=$2 b
	result_lines "$src" | grep -v -E '^Benchmark(LockAck|LockQuorum|LockElect)/' >>"$dst" || true
	for b in LockAck:ack LockQuorum:quorum LockElect:elect; do
		if grep -q -E "^Benchmark${b%%:*}/.*ns/op" "$src"; then
			result_lines "$src" | grep -E "^(Benchmark${b%%:*}/|goos|goarch|pkg|cpu)" >>"$out/${b#*:}.txt" || true
		fi
	done
}

# running_row prints the row a benchmark binary's output file $1 shows as
# running: its last line, when that names a row without its figures yet
# (-test.v prints each row's name as it starts).
running_row() {
	local last
	last=$(tail -n 1 "$1" 2>/dev/null || true)
	if [[ "$last" == Benchmark* && "$last" != *ns/op* ]]; then
		echo "${last%%[[:space:]]*}"
	fi
}

# failed_rows prints, from the benchmark output file $1 (written with
# -test.v), each row that failed or did not finish: its "--- FAIL" line and
# the messages before it (a parent, whose row failed, is left out).
failed_rows() {
	awk '
		/^--- FAIL: / {
			if (msg != "") { print; printf "%s", msg }
			msg = ""
			next
		}
		/^[ \t]/ { msg = msg $0 "\n"; next }
		{ msg = "" }
	' "$1"
}

# run_bin runs one invocation of the binary $bin in $dir with the
# arguments after $1 and $2, its output to the file $1 ($2 describes it
# in messages). While it runs, a row running for over a minute is named
# on a progress line. When it exits non-zero, the reason goes to
# failures.txt: the rows that failed or did not finish (their "--- FAIL"
# lines and messages), or how the binary died (a signal, a panic, a
# timeout, or an exit with no failing row) and the row it was running.
# It never fails itself: the rows that finished are kept.
run_bin() {
	local file=$1 what=$2
	shift 2
	local rc=0 row="" row_since=$SECONDS noted=0 cur
	(cd "$dir" && exec "$bin" -test.v "$@") >"$file" 2>&1 &
	local pid=$!
	while kill -0 "$pid" 2>/dev/null; do
		sleep 1
		cur=$(running_row "$file")
		if [[ "$cur" != "$row" ]]; then
			row=$cur row_since=$SECONDS noted=0
		elif [[ -n "$row" && $((SECONDS - row_since)) -ge $((60 * (noted + 1))) ]]; then
			noted=$((noted + 1))
			echo "   still running $row: $((SECONDS - row_since))s so far (a row stops at its budget: BENCH_ROW_BUDGET=${BENCH_ROW_BUDGET:-30s} per run, plus the window and set-up of a refresh row)"
		fi
	done
	wait "$pid" || rc=$?
	if [[ $rc -eq 0 ]]; then
		return 0
	fi
	local why fails
	fails=$(failed_rows "$file")
	cur=$(running_row "$file")
	if [[ $rc -gt 128 ]]; then
		local sig
		sig=$(kill -l $((rc - 128)) 2>/dev/null || echo "$((rc - 128))")
		why="the binary was killed by signal $sig"
		if [[ "$sig" == KILL ]]; then why+=" (kill -9, or the out-of-memory killer: see dmesg)"; fi
	elif grep -q -E '^panic|^fatal error' "$file"; then
		why="the binary crashed: $(grep -m1 -E '^panic|^fatal error' "$file")"
	elif grep -q 'test timed out' "$file"; then
		why="the binary hit its -test.timeout"
	elif [[ -z "$fails" ]]; then
		why="the binary exited with status $rc without a failing row; its last lines: $(tail -n 3 "$file" | tr '\n' ' ')"
	else
		why=""
	fi
	if [[ -n "$why" && -n "$cur" ]]; then
		why+=", while running $cur; the rows after it are missing from this pass"
	fi
	{
		echo "pass $i, $label, $what (exit $rc):"
		if [[ -n "$why" ]]; then echo "    $why"; fi
		if [[ -n "$fails" ]]; then echo "$fails" | sed 's/^/    /' | head -60; fi
	} >>"$out/failures.txt"
	if [[ -n "$why" ]]; then
		echo "   pass $i, $label, $what: $why" >&2
	else
		echo "   pass $i, $label, $what: $(grep -c -e '^--- FAIL' <<<"$fails" || true) rows failed or did not finish (see the list under the tables)" >&2
	fi
	return 0
}

# run_pass runs one binary ($1, in the folder $2) once, appending the
# result lines of its main rows to the results file $3 ($4 names it). A
# failing row, a row that did not finish, even the binary's death never
# abort the run: the rows that finished are kept, and each failure is
# recorded with its reason in failures.txt, which the tables end with.
run_pass() {
	local bin=$1 dir=$2 file=$3 label=$4
	: >"$tmp/pass.txt"
	: >"$tmp/pass2.txt"
	if [[ "$filter" == "." ]]; then
		# Contended rows run a fixed number of grants, so that their p99 is
		# a p99 (not the largest of the ~100 waits a short benchtime gives);
		# so do the semaphore's, whose per-grant figures (scripts/op) would
		# otherwise carry the start of a short run (16 goroutines on 4
		# permits: 12 first tries refused, 0.035 per grant over 343 grants).
		# The rows over the simulated network (BenchmarkLockRTT, main module
		# only) go to their own file.
		run_bin "$tmp/pass.txt" "uncontended rows" -test.run '^$' -test.bench 'BenchmarkLock$' -test.skip "$contended" \
			-test.benchtime "$benchtime" -test.timeout 60m
		keep_rows "$tmp/pass.txt" "$file"
		run_bin "$tmp/pass2.txt" "contended rows" -test.run '^$' -test.bench "$contended" \
			-test.benchtime "${contended_n}x" -test.timeout 60m
		keep_rows "$tmp/pass2.txt" "$file"
		# leader election: Resign to the next leader (elect_n terms), and a
		# leader's crash to the next (elect_crash_n crashes, a TTL each)
		run_bin "$tmp/extra.txt" "election rows (resign)" -test.run '^$' -test.bench 'LockElect/././op=resign' \
			-test.benchtime "${elect_n}x" -test.timeout 30m
		keep_rows "$tmp/extra.txt" /dev/null
		run_bin "$tmp/extra.txt" "election rows (crash)" -test.run '^$' -test.bench 'LockElect/././op=crash' \
			-test.benchtime "${elect_crash_n}x" -test.timeout 30m
		keep_rows "$tmp/extra.txt" /dev/null
		if [[ "$label" == "main module" ]]; then
			run_bin "$tmp/extra.txt" "rows over a simulated network" -test.run '^$' -test.bench 'LockRTT' \
				-test.benchtime "$benchtime" -test.timeout 60m
			result_lines "$tmp/extra.txt" >>"$out/rtt.txt"
			# a 3-master Cluster the binary starts (SCRIPTLOCK_CLUSTER_ADDRS: an existing one)
			run_bin "$tmp/extra.txt" "Cluster rows" -test.run '^$' -test.bench 'LockCluster' \
				-test.benchtime "$benchtime" -test.timeout 60m
			result_lines "$tmp/extra.txt" >>"$out/cluster.txt"
			# Options.Ack on a 3-master Cluster with replicas, and Quorum
			# over three standalone servers, each beside its baseline
			run_bin "$tmp/extra.txt" "acknowledged and quorum rows" -test.run '^$' -test.bench 'LockAck|LockQuorum' \
				-test.benchtime "$benchtime" -test.timeout 60m
			keep_rows "$tmp/extra.txt" /dev/null
			# the server's time per command of an uncontended cycle: the
			# server must be idle, as it is between rows
			run_bin "$tmp/extra.txt" "BenchmarkScriptCost" -test.run '^$' -test.bench '^BenchmarkScriptCost$' \
				-test.benchtime "${cost_n}x" -test.timeout 10m
			result_lines "$tmp/extra.txt" >>"$out/cost.txt"
		else
			# scriptlock's uncontended cycle interleaved with raw's and the peer's
			run_bin "$tmp/extra.txt" "BenchmarkPaired" -test.run '^$' -test.bench '^BenchmarkPaired$' \
				-test.benchtime "${paired_n}x" -test.timeout 10m
			result_lines "$tmp/extra.txt" >>"$out/paired.txt"
		fi
	else
		run_bin "$tmp/pass.txt" "rows matching $filter" -test.run '^$' -test.bench "$filter" \
			-test.benchtime "$benchtime" -test.timeout 60m
		keep_rows "$tmp/pass.txt" "$file"
	fi
}

# result_lines prints the result lines of the benchmark output file $1
# (not the names -test.v prints as each row starts, nor failures).
result_lines() {
	grep -E '^(Benchmark|goos|goarch|pkg|cpu)' "$1" | grep -E -v -e '^Benchmark[^[:space:]]*[[:space:]]*$' -e '--- FAIL' || true
}

# fmt_time prints a number of seconds as minutes and seconds.
fmt_time() {
	if [[ $1 -ge 60 ]]; then echo "$(($1 / 60)) min $(($1 % 60)) s"; else echo "$1 s"; fi
}

# progress prints the step about to run, the time spent and an estimate
# of what is left: the steps still to run, each as long as the same
# binary's steps took on average so far (overruns included), and the long
# auto-refresh row.
progress() {
	local what=$1 spent=$((SECONDS - bench_start))
	local left="the first pass of each binary sets the estimate"
	if [[ $n_main -gt 0 && $n_peers -gt 0 ]]; then
		local main_left=$((passes - i + 1)) peers_left=$((passes - i + 1))
		if [[ "$what" == peers ]]; then main_left=$((main_left - 1)); fi
		local est=$((main_left * t_main / n_main + peers_left * t_peers / n_peers))
		if [[ "$filter" == "." ]]; then est=$((est + hold_estimate)); fi
		left="about $(fmt_time "$est") left at the pace so far"
	fi
	echo "== pass $i/$passes (benchtime $benchtime): $what; $(fmt_time "$spent") so far, $left"
}

: >"$out/failures.txt"
bench_start=$SECONDS
t_main=0 n_main=0 t_peers=0 n_peers=0
hold_estimate=100 # the long auto-refresh row: a minute, plus its 50,000 leases
for i in $(seq "$passes"); do
	progress "main module"
	step=$SECONDS
	run_pass "$tmp/main.test" "$root/bench" "$out/main.txt" "main module"
	t_main=$((t_main + SECONDS - step)) n_main=$((n_main + 1))
	progress "peers"
	step=$SECONDS
	run_pass "$tmp/peers.test" "$root/bench/peers" "$out/peers.txt" "peers"
	t_peers=$((t_peers + SECONDS - step)) n_peers=$((n_peers + 1))
done

# The long auto-refresh row (BenchmarkLockHold: 50,000 leases of 2 s for 90
# rounds, a minute) runs once, after the passes.
if [[ "$filter" == "." ]]; then
	echo "== the long auto-refresh row: 50,000 leases held for a minute; $(fmt_time $((SECONDS - bench_start))) so far"
	i=1 label="the long auto-refresh row" bin=$tmp/main.test dir=$root/bench
	run_bin "$tmp/hold.txt" "BenchmarkLockHold" -test.run '^$' -test.bench 'LockHold' \
		-test.benchtime 90x -test.timeout 30m
	result_lines "$tmp/hold.txt" >"$out/hold.txt"
fi

# bs prints a table with benchstat, after the command that prints it from
# the run's raw files (paths relative to the results folder and to its
# published copy).
bs() {
	local a shown=()
	for a in "$@"; do
		a=${a#"$out"/}
		if [[ $a =~ ^[-A-Za-z0-9_./@:=,+]+$ ]]; then shown+=("$a"); else shown+=("'$a'"); fi
	done
	echo "\$ benchstat -table '' ${shown[*]}"
	echo
	"$tmp/benchstat" -table '' "$@" || echo "(benchstat failed: exit $?)"
}

# table prints one table, its title and then bs's output for the rest of
# the arguments, when any raw file among them has a row (a run that left
# out its rows, such as a BENCH_FILTER or a short mode, has no table).
table() {
	local title=$1 a
	shift
	for a in "$@"; do
		if [[ $a == "$out"/* ]] && grep -q "^Benchmark" "$a" 2>/dev/null; then
			echo "### $title"
			echo
			bs "$@"
			echo
			return
		fi
	done
}
{
	echo "# scriptlock benchmarks: scripts/bench.sh, $(sed -n 's/^date: //p' "$out/env.txt"), $mode mode ($passes passes x $benchtime), on $(nproc 2>/dev/null || echo ?) cores ($(sed -n 's/^Model name: *//p' "$out/env.txt" | head -1)), redis-server $(redis_version); $(go version | cut -d' ' -f3)"
	echo
	table "(a) drivers side by side: scriptlock and raw, one column per driver (op=refresh: see (e))" \
		-filter '/lib:(scriptlock OR raw) -/op:(refresh OR rw-readers OR semaphore OR sem-holders OR multi)' -col /driver "$out/main.txt"
	table "(a2) scriptlock vs the raw reference on the same driver" \
		-filter '/lib:(scriptlock OR raw) -/op:(contended OR rw OR rw-readers OR refresh OR semaphore OR sem-holders OR multi)' -col /lib "$out/main.txt"
	table "(b) scriptlock vs peers on the same client library, uncontended (valkey-go has no peer; on redigo, redsync only)" \
		-filter '-/lib:(raw OR syncmutex OR scriptlock-fifo) -/op:(contended OR rw OR rw-readers OR refresh OR semaphore OR sem-holders OR multi) -/driver:valkeygo' -col /lib "$out/main.txt" "$out/peers.txt"
	table "(c) contended, 8 goroutines holding 1 ms: every lib and driver (compare rows)" \
		-filter '/op:contended /clients:8 /hold:1ms' -row /lib,/driver -col /op "$out/main.txt" "$out/peers.txt"
	table "(c3) contended, 8 goroutines holding 100 µs (short holds: where barging pays and starving hurts least)" \
		-filter '/op:contended /clients:8 /hold:100us' -row /lib,/driver -col /op "$out/main.txt" "$out/peers.txt"
	table "(c2) how cost grows with the number of waiters (go-redis): default mode with 256, FIFO with a queue of 500 (script calls and server cost per grant)" \
		-filter '/op:contended -/clients:8' -row /lib,/driver,/clients -col /op "$out/main.txt"
	table "(d) read-write lock, 16 goroutines, 90% reads: scriptlock per driver and sync.RWMutex (no peer has one)" \
		-filter '/op:rw' -row /lib,/driver -col /op "$out/main.txt"
	table "(d3) counting semaphore, 4 permits: one client (uncontended Acquire+Unlock) and 16 goroutines holding 1 ms; scriptlock per driver and a buffered channel in-process (no Go peer has one)" \
		-filter '/op:semaphore' -row /lib,/driver,/clients -col /op "$out/main.txt"
	table "(d4) how a semaphore's cost grows with its holders (go-redis): Acquire(1)+Unlock with 10 and with 1,000 permits held (script-us/op per pair)" \
		-filter '/op:sem-holders' -row /lib,/driver,/holders -col /op "$out/main.txt"
	table "(d5) a MultiLock over 3 names, uncontended Lock+Unlock, per driver (compare with lock-unlock/clients=1 in (a))" \
		-filter '/op:multi' -row /lib,/driver -col /op "$out/main.txt"
	table "(d2) how cost grows with the readers holding a read-write lock (go-redis): RLock+Unlock with 10 and with 1,000 readers held (script-us/op per pair)" \
		-filter '/op:rw-readers' -row /lib,/driver,/readers -col /op "$out/main.txt"
	table "(e) auto-refresh of 10,000 leases (TTL 1s, refreshed every 333ms; ns/op is the window per round, by construction)" \
		-filter '/op:refresh' -row /lib,/driver -col /op "$out/main.txt" "$out/peers.txt"
	table "(e2) 50,000 auto-refreshed leases (TTL 2s, refreshed every 667ms) held for 90 rounds, a minute, once (go-redis; one lost lease fails the row)" \
		-row /lib,/driver -col /op "$out/hold.txt"
	table "(f) over a simulated network: clients behind a proxy adding 250 µs each way (net-rtt-us: the round trip measured), scriptlock vs raw" \
		-col /lib "$out/rtt.txt"
	table "(g) a 3-master Redis Cluster: scriptlock per driver (64 clients: 64 lock names over the masters; server cost summed over them)" \
		-col /driver "$out/cluster.txt"
	table "(h) acknowledged grants (Options.Ack, 1 replica: WAIT after every writing script call) on a 3-master Cluster with replicas: scriptlock per driver, ack=1 vs ack=0 (waits/op, wait-us/op: WAIT calls and their time; server cost summed over the masters)" \
		-col '/ack@(0 1)' "$out/ack.txt"
	table "(k) leader election, 4 candidates: from a Resign, and from the leader's crash (terms of 200 ms), to the next leader's Campaign returning (elect-p50-ns, elect-p99-ns); scriptlock's Election per driver vs each peer's lock as its users write an election (waiting in Lock at the library's default retry)" \
		-row /lib,/driver -col /op "$out/elect.txt"
	table "(i) Quorum over 3 standalone servers vs a single-server Mutex: scriptlock per driver (server cost summed over the three)" \
		-col '/lock@(mutex quorum)' "$out/quorum.txt"
	echo "### (j) the performance targets, met or missed (medians over the passes, [first-third quartile]; ~: the quartile ranges overlap, inside the noise; run the command in the raw folder, inside the repository)"
	echo
	echo "\$ go run github.com/scriptlock/scriptlock/bench/peers/cmd/benchtargets ."
	echo
	"$tmp/benchtargets" "$out" || echo "(benchtargets failed: exit $?)"
	echo
	echo "### rows that failed or did not finish, and binaries that died (missing from the tables above for the passes named)"
	echo
	if [[ -s "$out/failures.txt" ]]; then
		cat "$out/failures.txt"
	else
		echo "none"
	fi
} 2>&1 | tee "$out/tables.txt" || true

# The chart draws main.txt and peers.txt; a BENCH_FILTER may leave both
# without a row (such as 'LockAck|LockQuorum', whose rows have tables only).
charted=0
if grep -q '^Benchmark' "$out/main.txt" "$out/peers.txt" 2>/dev/null; then
	touch "$out/main.txt" "$out/peers.txt"
	if "$tmp/benchchart" -title "scriptlock benchmarks: medians and quartiles of $passes passes x $benchtime, $(date -u +%Y-%m-%d)" \
		-failures "$out/failures.txt" \
		-o "$out/chart.png" -o "$out/chart.svg" "$out/main.txt" "$out/peers.txt"; then
		charted=1
	else
		echo "== benchchart failed (exit $?): no chart" >&2
	fi
fi
if [[ $charted == 1 ]]; then
	echo "== wrote $out/{main,peers,env,tables}.txt and chart.png, chart.svg in $(fmt_time $((SECONDS - start)))"
else
	echo "== wrote $out/{env,tables}.txt in $(fmt_time $((SECONDS - start))) (no row for the chart)"
fi
if [[ -s "$out/failures.txt" ]]; then
	echo "== $(grep -c '^pass\|^the long' "$out/failures.txt" || true) steps had rows that failed, did not finish or died: see the list at the end of the tables"
fi

# Publish: the tables and the raw files they come from, side by side under
# bench/, ready to commit (only with BENCH_PUBLISH=1).
if [[ "${BENCH_PUBLISH:-0}" == 1 ]]; then
	pub=bench/results-$(date -u +%Y-%m-%d)-${BENCH_NAME:-$mode}
	if [[ -e "$pub.txt" || -e "$pub-raw" ]]; then
		pub=$pub-$(date -u +%H%M)
	fi
	mkdir -p "$pub-raw"
	cp "$out/tables.txt" "$pub.txt"
	for f in env main peers paired cost rtt cluster ack quorum hold elect failures; do
		if [[ -e "$out/$f.txt" ]]; then
			cp "$out/$f.txt" "$pub-raw/"
		fi
	done
	if [[ $charted == 1 ]]; then
		cp "$out/chart.png" "$out/chart.svg" bench/
		echo "== published $pub.txt (tables), $pub-raw/ (raw files) and bench/chart.png, bench/chart.svg: commit them with RESULTS.md"
	else
		echo "== published $pub.txt (tables) and $pub-raw/ (raw files); no chart: commit them with RESULTS.md"
	fi
	echo "   each table's benchstat command reprints it in $pub-raw/ (benchstat: go install golang.org/x/perf/cmd/benchstat@$(cd bench/peers && go list -m -f '{{.Version}}' golang.org/x/perf))"
fi
