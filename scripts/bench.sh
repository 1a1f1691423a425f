#!/usr/bin/env bash
# bench.sh — the main job: benchmarks every scriptlock driver, the raw
# SET NX PX reference, an in-process sync.Mutex and the peer libraries
# (redsync, bsm/redislock, rueidislock) on one redis-server, in interleaved
# passes, then prints benchstat tables and draws a chart.
#
#   scripts/bench.sh                       # short mode (about 2-3 minutes)
#   BENCH_MODE=full scripts/bench.sh       # more passes, longer runs
#   BENCH_PASSES=5 BENCH_TIME=1s scripts/bench.sh
#   SCRIPTLOCK_REDIS_ADDR=host:6379 scripts/bench.sh   # an existing server
#
# Raw `go test -bench` output goes to bench/results/<UTC time>/ (main.txt,
# peers.txt), with the benchstat tables (tables.txt) and the chart
# (chart.png, chart.svg). Needs only Go; redis-server is installed with
# apt-get when missing, as scripts/test.sh does.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

mode="${BENCH_MODE:-short}"
case "$mode" in
short) passes="${BENCH_PASSES:-3}" benchtime="${BENCH_TIME:-300ms}" ;;
full) passes="${BENCH_PASSES:-8}" benchtime="${BENCH_TIME:-2s}" ;;
*)
	echo "bench.sh: BENCH_MODE must be short or full, not $mode" >&2
	exit 2
	;;
esac
filter="${BENCH_FILTER:-.}"

ensure_redis
root="$(pwd)"
out="bench/results/$(date -u +%Y%m%dT%H%M%SZ)"
mkdir -p "$out"

if [[ -z "${SCRIPTLOCK_REDIS_ADDR:-}" ]]; then
	port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' 2>/dev/null || echo 16379)
	dir=$(mktemp -d)
	redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$dir" \
		--daemonize no --logfile "$dir/redis.log" &
	redis_pid=$!
	trap 'kill $redis_pid 2>/dev/null; wait $redis_pid 2>/dev/null; rm -rf "$dir"' EXIT
	for _ in $(seq 100); do
		redis-cli -p "$port" ping >/dev/null 2>&1 && break
		sleep 0.1
	done
	redis-cli -p "$port" ping >/dev/null || {
		echo "bench.sh: redis-server on port $port did not start; log:" >&2
		tail -20 "$dir/redis.log" >&2
		exit 1
	}
	export SCRIPTLOCK_REDIS_ADDR="127.0.0.1:$port"
fi
host="${SCRIPTLOCK_REDIS_ADDR%:*}"
port="${SCRIPTLOCK_REDIS_ADDR##*:}"
version=$(redis-cli -h "$host" -p "$port" info server | tr -d '\r' | sed -n 's/^redis_version://p')

echo "== building benchmark binaries"
go test -c -o "$out/main.test" ./bench
(cd bench/peers && go test -c -o "$root/$out/peers.test" .)

{
	echo "mode: $mode, passes: $passes, benchtime: $benchtime"
	echo "machine: $(uname -srm), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2 | sed 's/^ //')"
	echo "redis: $version at $SCRIPTLOCK_REDIS_ADDR"
	echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
} | tee "$out/env.txt"

# Interleave the two binaries pass by pass, so drift on a noisy machine hits
# every row alike.
for pass in $(seq "$passes"); do
	echo "== pass $pass/$passes"
	"$out/main.test" -test.run '^$' -test.bench "$filter" -test.benchtime "$benchtime" >>"$out/main.txt"
	(cd bench/peers && "$root/$out/peers.test" -test.run '^$' -test.bench "$filter" -test.benchtime "$benchtime") >>"$out/peers.txt"
done

benchstat() {
	(cd bench/peers && go run golang.org/x/perf/cmd/benchstat "$@")
}

{
	echo "## drivers side by side (scriptlock and the raw SET NX PX reference)"
	benchstat -filter '/lib:(scriptlock OR raw)' -row '/lib /op /clients /hold' -col /driver "$root/$out/main.txt"
	echo
	echo "## scriptlock vs peers (go-redis clients; rueidislock on rueidis)"
	benchstat -filter '/driver:(goredis OR rueidis) OR /lib:syncmutex' -row '/op /clients /hold' -col '/lib /driver' "$root/$out/main.txt" "$root/$out/peers.txt"
} | tee "$out/tables.txt"

echo "== chart"
(cd bench/peers && go run ./cmd/benchchart -o "$root/$out/chart.png" -o "$root/$out/chart.svg" "$root/$out/main.txt" "$root/$out/peers.txt")
rm -f "$out/main.test" "$out/peers.test"
echo "results in $out (tables.txt, chart.png, chart.svg, raw main.txt and peers.txt)"
