#!/usr/bin/env bash
# test.sh — the test command: installs redis-server when it is missing (and
# apt-get is available), then runs gofmt, go vet, staticcheck, the whole test
# suite under the race detector against redis-server processes the tests
# start themselves, and a short run of every fuzz target.
#
#   scripts/test.sh            # everything
#   scripts/test.sh ./locker   # extra arguments replace ./... (and skip fuzzing)
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

echo "== go vet ./..."
go vet ./...

if [[ "${SCRIPTLOCK_STATICCHECK:-1}" == 1 ]]; then
	echo "== staticcheck ./..."
	go run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./... || {
		echo "staticcheck failed (set SCRIPTLOCK_STATICCHECK=0 to skip it offline)" >&2
		exit 1
	}
fi

echo "== go test -race -count=1 ${*:-./...}"
go test -race -count=1 -timeout 20m "${@:-./...}"

# otel/ is its own module (the core never imports OpenTelemetry): ./...
# above does not reach it.
if [[ $# -eq 0 ]]; then
	echo "== otel: go vet ./... && go test -race -count=1 ./..."
	(cd otel && go vet ./... && go test -race -count=1 -timeout 5m ./...)
fi

if [[ $# -eq 0 && "${SCRIPTLOCK_FUZZ:-1}" == 1 ]]; then
	echo "== scripts/fuzz.sh (FUZZTIME=${FUZZTIME:-10s} per target)"
	scripts/fuzz.sh
fi
