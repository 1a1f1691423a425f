# lib.sh — shared by test.sh, fuzz.sh and bench.sh; source it, do not run it.

# every_package is the pattern of every package of every module of the
# workspace (go.work at the root: the core, each driver, conformance,
# conformance/internal/intree, bench, bench/peers, cmd/scriptlock, otel,
# internal/miniredistest). ./... does not do it: at the root it stops at
# every nested go.mod, so it matches only the core module's packages, while
# an import-path pattern matches the packages of every workspace module.
every_package=github.com/scriptlock/scriptlock/...

# ensure_redis makes sure redis-server and redis-cli are on PATH, installing
# Debian's redis-server and redis-tools with apt-get when they are missing
# and apt-get is there; otherwise it fails naming the fix.
ensure_redis() {
	if command -v redis-server >/dev/null && command -v redis-cli >/dev/null; then
		return 0
	fi
	if [[ -n "${SCRIPTLOCK_REDIS_ADDR:-}${SCRIPTLOCK_REDIS_URL:-}" && -n "${SCRIPTLOCK_CLUSTER_ADDRS:-}${SCRIPTLOCK_CLUSTER_URLS:-}" ]]; then
		return 0 # pointed at existing servers
	fi
	if command -v apt-get >/dev/null; then
		echo "== installing redis-server and redis-tools with apt-get"
		local sudo=""
		if [[ $(id -u) != 0 ]]; then sudo="sudo"; fi
		$sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq
		$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends redis-server redis-tools >/dev/null
		# The package starts a system redis on 6379; the tests use their own.
		(command -v systemctl >/dev/null && $sudo systemctl stop redis-server 2>/dev/null) || true
	fi
	if ! command -v redis-server >/dev/null || ! command -v redis-cli >/dev/null; then
		echo "redis-server/redis-cli not found: install them (Debian/Ubuntu: apt-get install redis-server redis-tools; macOS: brew install redis)," >&2
		echo "or set SCRIPTLOCK_REDIS_ADDR and SCRIPTLOCK_CLUSTER_ADDRS to existing servers." >&2
		return 1
	fi
}
