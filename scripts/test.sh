#!/usr/bin/env bash
# test.sh — the test command: installs redis-server when it is missing (and
# apt-get is available), then runs gofmt, go vet, staticcheck, the whole test
# suite under the race detector against redis-server processes the tests
# start themselves, and a short run of every fuzz target.
#
#   scripts/test.sh            # everything
#   scripts/test.sh ./locker   # extra arguments replace every module's packages
#                              # (and skip fuzzing)
#
# It covers every module of the workspace (go.work): the core, each driver,
# conformance, conformance/internal/intree (the in-tree drivers'
# certification), bench, bench/peers, cmd/scriptlock, otel and
# internal/miniredistest (see every_package in scripts/lib.sh).
#   SCRIPTLOCK_FUZZ=0 scripts/test.sh   # no fuzz run
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

echo "== scripts/bench.sh --help (prints its options, starts nothing)"
scripts/bench.sh --help >/dev/null

ensure_redis
export PATH="$(go env GOPATH)/bin:$PATH"

echo "== gofmt"
unformatted=$(gofmt -l . | grep -v '^bench/peers/' || true)
if [[ -n "$unformatted" ]]; then
	echo "gofmt -l reports unformatted files:" >&2
	echo "$unformatted" >&2
	exit 1
fi

echo "== go vet (every module)"
go vet "$every_package"

if [[ "${SCRIPTLOCK_STATICCHECK:-1}" == 1 ]]; then
	echo "== staticcheck (every module)"
	go run honnef.co/go/tools/cmd/staticcheck@v0.8.2 "$every_package" || {
		echo "staticcheck failed (set SCRIPTLOCK_STATICCHECK=0 to skip it offline)" >&2
		exit 1
	}
fi

echo "== go test -race -count=1 ${*:-(every module)}"
go test -race -count=1 -timeout 20m "${@:-$every_package}"

if [[ $# -eq 0 && "${SCRIPTLOCK_FUZZ:-1}" == 1 ]]; then
	echo "== scripts/fuzz.sh (FUZZTIME=${FUZZTIME:-10s} per target)"
	scripts/fuzz.sh
fi
