#!/usr/bin/env bash
# compat.sh — the compatibility matrix: runs the conformance suite (every
# top-level test of ./conformance/ and ./conformance/internal/intree, the
# in-tree drivers' certification: every rule group, standalone and a
# 3-master Cluster with replicas, every in-tree driver; without -race)
# against each server it is given and prints one table: a row per server
# and deployment, a column per driver, each cell the rules passed / failed
# / not applicable; then the reason of every rule that failed or was not
# applicable, and a closing line "compat: N passed, N failed, N skipped"
# (skipped: not applicable). Exits non-zero when a rule failed or a run
# did not finish.
#
#   scripts/compat.sh        # every redis-server (or valkey-server) in
#                            # ../shared/servers/*/, plus the one on PATH
#   SCRIPTLOCK_COMPAT_SERVERS=/opt/redis-7.2/bin/redis-server,/usr/bin/valkey-server scripts/compat.sh
#
# Other knobs:
#   SCRIPTLOCK_COMPAT_JOBS=1       runs at once (one per server, every driver in it
#                                  at the same time, as go test
#                                  ./conformance/internal/intree/ runs them; default 1)
#   SCRIPTLOCK_COMPAT_OUT=dir      where the go test -json output and summary.md go
#                                  (default: a new temporary directory)
#   SCRIPTLOCK_COMPAT_RUN=regexp   top-level tests to run (default: Test.*, all of them)
#   SCRIPTLOCK_COMPAT_TIMEOUT=30m  go test -timeout of each run
#   SCRIPTLOCK_COMPAT_PARALLEL=N   rule groups at once in each run (go test -parallel;
#                                  default: all with one run at once, else 1)
#   SCRIPTLOCK_SUITE_CASES=N       cases at once in each run (default 8)
#
# Each server runs with its folder's binary first on PATH under the name
# redis-server (a valkey-server binary is linked under that name), which is
# what the test harness (internal/redisserver) starts. The safe-profile
# tests (TestSafeProfileACLUser, TestSafeProfileAccessCheck,
# TestSafeProfileTLS: the drivers through an application's ACL user, its
# access check, and TLS, which the shared builds lack) are left to
# scripts/test.sh, which runs them on the redis-server on PATH.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
. scripts/lib.sh

# The suite must start its own servers, never use external ones, and run
# every rule (the full profile).
unset SCRIPTLOCK_REDIS_ADDR SCRIPTLOCK_CLUSTER_ADDRS SCRIPTLOCK_REDIS_URL SCRIPTLOCK_CLUSTER_URLS SCRIPTLOCK_TLS_CA
export SCRIPTLOCK_SUITE=full

jobs=${SCRIPTLOCK_COMPAT_JOBS:-1}
# One run at a time, each with every rule group at once (as go test
# ./conformance/internal/intree/ runs them, each group on servers of its own). Runs at
# once share the machine, so then each takes its groups one after another
# (go test -parallel 1): two binaries with every group at once made the
# rules that bound how soon something happens late (2026-11-26:
# Outcome/Refresh/Late, Chaos/PausePastTTL, Quorum/LostReleasesParts, one
# or two a run, also with SCRIPTLOCK_SUITE_CASES=4), and two with their
# groups one after another still failed one rule in 4832 (Quorum/Majority).
parallel=${SCRIPTLOCK_COMPAT_PARALLEL:-$((jobs > 1 ? 1 : 64))}
timeout=${SCRIPTLOCK_COMPAT_TIMEOUT:-30m}
tests=${SCRIPTLOCK_COMPAT_RUN:-Test.*}
out=${SCRIPTLOCK_COMPAT_OUT:-$(mktemp -d "${TMPDIR:-/tmp}/scriptlock-compat.XXXXXX")}
mkdir -p "$out"
out=$(cd "$out" && pwd)

# The servers: SCRIPTLOCK_COMPAT_SERVERS, or ../shared/servers/*/ and PATH.
servers=()
if [[ -n "${SCRIPTLOCK_COMPAT_SERVERS:-}" ]]; then
	IFS=, read -r -a servers <<<"$SCRIPTLOCK_COMPAT_SERVERS"
else
	ensure_redis
	for dir in "$root"/../shared/servers/*/; do
		for name in redis-server valkey-server; do
			if [[ -x "$dir$name" ]]; then
				servers+=("$dir$name")
				break
			fi
		done
	done
	if p=$(command -v redis-server); then
		servers+=("$p")
	elif p=$(command -v valkey-server); then
		servers+=("$p")
	fi
fi
if [[ ${#servers[@]} -eq 0 ]]; then
	echo "compat.sh: no server found: install redis-server (apt-get install redis-server), or set SCRIPTLOCK_COMPAT_SERVERS=/path/to/redis-server,..." >&2
	exit 1
fi

# The suite's packages: its own unit tests, and the in-tree drivers'
# certification (a module of its own, so that the suite's module requires
# no client); and the drivers that certification runs.
pkgs=(./conformance/ ./conformance/internal/intree/)
mapfile -t drivers < <(grep -oE 'Name: *"[a-z0-9]+"' conformance/internal/intree/testdrivers/testdrivers.go | sed -E 's/.*"(.*)"/\1/')
if [[ ${#drivers[@]} -eq 0 ]]; then
	echo "compat.sh: found no driver names in conformance/internal/intree/testdrivers/testdrivers.go" >&2
	exit 1
fi

# One entry per distinct binary: label ("Redis 6.2.16"), slug, shim folder.
declare -a labels slugs
declare -A seen
for s in "${servers[@]}"; do
	s=$(echo "$s" | sed -e 's/^ *//' -e 's/ *$//')
	[[ -n "$s" ]] || continue
	if [[ ! -x "$s" ]]; then
		echo "compat.sh: $s is not an executable" >&2
		exit 1
	fi
	real=$(readlink -f "$s")
	[[ -z "${seen[$real]:-}" ]] || continue
	seen[$real]=1
	version=$("$s" --version 2>/dev/null | head -n1)
	label=$(echo "$version" | sed -nE 's/^([A-Za-z]+) server v=([0-9.]+).*/\1 \2/p')
	if [[ -z "$label" ]]; then
		echo "compat.sh: $s --version printed '$version', not a Redis or Valkey server" >&2
		exit 1
	fi
	slug=$(echo "$label" | tr 'A-Z ' 'a-z-')
	while [[ " ${slugs[*]:-} " == *" $slug "* ]]; do
		slug="$slug-2"
		label="$label ($s)"
	done
	mkdir -p "$out/bin/$slug"
	ln -sf "$real" "$out/bin/$slug/redis-server"
	labels+=("$label")
	slugs+=("$slug")
done

echo "== compat: $(printf '%s, ' "${labels[@]}" | sed 's/, $//')"
echo "   drivers: ${drivers[*]}; tests: $tests; $jobs runs at once, $parallel rule groups at once in each; output in $out"
go test -count=1 -run '^$' "${pkgs[@]}" >/dev/null # build once, before the runs

# run SLUG: one go test process for one server, every driver in it at the
# same time (the suite bounds how many rules run at once in the process,
# and runs the disturbing and timing rules alone). The drivers ran in a
# process each before (2026-11-26): 12 runs of about 3 minutes, 18 minutes
# with 2 at once; the rules mostly sleep, so three drivers in one process
# take little longer than one.
run() {
	local slug=$1 start rc=0
	start=$(date +%s)
	PATH="$out/bin/$slug:$PATH" go test -count=1 -json -timeout "$timeout" -parallel "$parallel" \
		-run "^($tests)\$/^driver=($(IFS='|'; echo "${drivers[*]}"))\$" -skip '^TestSafeProfile' \
		"${pkgs[@]}" >"$out/$slug.json" 2>"$out/$slug.stderr" || rc=$?
	echo "   $slug: $(($(date +%s) - start))s (exit $rc)"
}

start=$(date +%s)
running=0
for i in "${!slugs[@]}"; do
	if ((running >= jobs)); then
		wait -n || true
		running=$((running - 1))
	fi
	run "${slugs[$i]}" &
	running=$((running + 1))
done
wait
echo "== compat: every run done in $(($(date +%s) - start))s"

args=()
for i in "${!slugs[@]}"; do
	args+=("${labels[$i]}=$out/${slugs[$i]}.json")
done
echo "== compat: summary (also in $out/summary.md)"
rc=0
go run ./internal/compatreport "${args[@]}" | tee "$out/summary.md" || rc=$?
exit $rc
