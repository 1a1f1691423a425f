#!/usr/bin/env bash
# release.sh — tags a release of every released module of the repository
# at one version, as docs/modules.md's release rule says, and checks that a
# module outside the repository resolves and builds them.
#
#   scripts/release.sh --dry-run v0.1.0   # everything below in a throwaway clone; no tag here
#   scripts/release.sh v0.1.0             # the dry run, then the same commit and tags here
#   scripts/release.sh --help             # print this and exit (also -h)
#
# The released modules are those of every go.mod in the repository but
# bench, bench/peers and the modules under an internal/ directory: the core
# (tag vX.Y.Z) and each other one under its directory's prefix
# (drivers/goredis/vX.Y.Z, drivers/redigo/vX.Y.Z, ..., conformance/vX.Y.Z,
# otel/vX.Y.Z, cmd/scriptlock/vX.Y.Z).
#
# It refuses a version that is not vMAJOR.MINOR.PATCH (an optional
# -prerelease suffix; MAJOR 0 or 1, since a /v2 module path does not
# exist), a version not above the core's latest tag, a tag that exists
# already, and a working tree with changes or untracked files.
#
# Steps, in a throwaway clone of HEAD (the dry run):
#   1. in each released module's go.mod, every requirement of a module of
#      the repository is set to vX.Y.Z (go mod edit; the replace
#      directives stay: they apply only inside the repository), and the
#      change is committed ("release vX.Y.Z: ...");
#   2. each library module (no main package) builds on its own
#      (GOWORK=off go build ./...) and is tagged on that commit;
#   3. a command module (cmd/scriptlock: go install m@version refuses a
#      go.mod with replace directives) drops its replace directives of
#      the repository's modules, is tidied and built against the tags of
#      step 2, committed, and tagged on that second commit;
#   4. a scratch module outside the repository requires every released
#      module at vX.Y.Z with no replace directive, resolves them from the
#      tags, builds a program importing every exported package of them,
#      and go install builds cmd/scriptlock@vX.Y.Z.
# Steps 3 and 4 fetch github.com/scriptlock/* with git from the clone
# (GOPRIVATE, and a git url.insteadOf for the GitHub URL) and every other
# module from the local module cache first, then GOPROXY (GOSUMDB off),
# into a module cache of their own that is deleted at the end: the run
# works offline once the clients are in the local cache, and leaves the
# shared module cache as it was. It takes a few minutes (it compiles every
# client from that fresh cache).
# Without --dry-run, when all of that passed, the same commits and tags are
# made in this repository (the script checks that its tree is the dry
# run's) and the command that publishes them is printed; nothing is pushed.
#
# Environment:
#   RELEASE_KEEP=1   keep the throwaway directory (its path is printed)
set -euo pipefail

usage() { sed -n '2,/^set -euo pipefail$/p' "$0" | sed '$d; s/^# \{0,1\}//; s/^#$//'; }

dry=0
version=
for arg in "$@"; do
	case $arg in
	-h | -help | --help | help)
		usage
		exit 0
		;;
	--dry-run | -n) dry=1 ;;
	-*)
		echo "release.sh: unknown flag $arg (see --help)" >&2
		exit 2
		;;
	*)
		if [[ -n $version ]]; then
			echo "release.sh: one version, please (got $version and $arg)" >&2
			exit 2
		fi
		version=$arg
		;;
	esac
done
if [[ -z $version ]]; then
	echo "release.sh: which version? usage: scripts/release.sh [--dry-run] vX.Y.Z" >&2
	exit 2
fi
if ! [[ $version =~ ^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z]+(\.[0-9A-Za-z-]+)*)?$ ]]; then
	echo "release.sh: $version is not a version: want vMAJOR.MINOR.PATCH, such as v0.1.0 or v1.2.3-rc.1" >&2
	exit 2
fi
major=${BASH_REMATCH[1]}
if ((major > 1)); then
	echo "release.sh: $version: a major version above 1 needs /v$major module paths in every go.mod first (see docs/modules.md)" >&2
	exit 2
fi

root=$(cd "$(dirname "$0")/.." && git rev-parse --show-toplevel)
cd "$root"
command -v go >/dev/null || {
	echo "release.sh: the go command is not on PATH" >&2
	exit 1
}
if [[ -n $(git status --porcelain) ]]; then
	echo "release.sh: the working tree has changes or untracked files; commit or remove them first:" >&2
	git status --short >&2
	exit 1
fi

base=github.com/scriptlock/scriptlock
# released module directories, "." for the core
mods=()
while IFS= read -r f; do
	d=$(dirname "$f")
	case /$d/ in
	/bench/ | /bench/*/ | */internal/*) continue ;;
	esac
	mods+=("$d")
done < <(git ls-files -- 'go.mod' '*/go.mod' | sed 's|^go.mod$|./go.mod|' | sort)
if [[ ${mods[0]:-} != . ]]; then
	echo "release.sh: no go.mod at the repository's root" >&2
	exit 1
fi
tag_of() { if [[ $1 == . ]]; then echo "$version"; else echo "$1/$version"; fi; }
path_of() { if [[ $1 == . ]]; then echo "$base"; else echo "$base/$1"; fi; }

for d in "${mods[@]}"; do
	got=$(sed -n 's/^module[[:space:]]\{1,\}//p' "$d/go.mod" | tr -d '\r')
	if [[ $got != "$(path_of "$d")" ]]; then
		echo "release.sh: $d/go.mod declares module $got, not $(path_of "$d")" >&2
		exit 1
	fi
	if git rev-parse -q --verify "refs/tags/$(tag_of "$d")" >/dev/null; then
		echo "release.sh: the tag $(tag_of "$d") exists already" >&2
		exit 1
	fi
done
latest=$(git tag -l 'v*' | grep -E '^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$' | sort -V | tail -n 1 || true)
if [[ -n $latest && $(printf '%s\n%s\n' "$latest" "$version" | sort -V | tail -n 1) != "$version" ]]; then
	echo "release.sh: $version is not above the latest release, $latest" >&2
	exit 1
fi

echo "release.sh: $version of ${#mods[@]} modules: ${mods[*]}"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/scriptlock-release.XXXXXX")
cleanup() {
	if [[ ${RELEASE_KEEP:-0} == 1 ]]; then
		echo "release.sh: kept $tmp"
		return
	fi
	chmod -R u+w "$tmp" 2>/dev/null || true # the module cache is read-only
	rm -rf "$tmp"
}
trap cleanup EXIT
realcache=$(go env GOMODCACHE)
userproxy=$(go env GOPROXY)

# requires GOMOD: the module paths of the repository that GOMOD requires.
requires() {
	awk -v base="$base" '
		/^require[ \t]*\(/ { inreq = 1; next }
		inreq && /^\)/ { inreq = 0; next }
		/^require[ \t]+[^( \t]/ { if ($2 == base || index($2, base "/") == 1) print $2; next }
		inreq && ($1 == base || index($1, base "/") == 1) { print $1 }
	' "$1" | sort -u
}

# git_id REPO ARGS...: git in REPO, with an identity when none is configured.
git_id() {
	local repo=$1
	shift
	if [[ -z $(git -C "$repo" config user.email || true) ]]; then
		git -C "$repo" -c user.name="scriptlock release" -c user.email="release@scriptlock.invalid" "$@"
	else
		git -C "$repo" "$@"
	fi
}

# resolving REPO CMD...: runs CMD as a module outside the repository
# would: no workspace, no replace of ours, github.com/scriptlock/* fetched
# with git from REPO's tags, every other module from the local module
# cache first, into a module cache of its own under $tmp.
resolving() {
	local repo=$1
	shift
	GOWORK=off GOFLAGS=-mod=mod GOSUMDB=off GOTOOLCHAIN=local \
		GOMODCACHE="$tmp/modcache" GOPRIVATE="$base,$base/*" \
		GOPROXY="file://$realcache/cache/download${userproxy:+,$userproxy}" \
		GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0="url.$repo.insteadOf" GIT_CONFIG_VALUE_0="https://$base" \
		GIT_TERMINAL_PROMPT=0 "$@"
}

# release REPO: makes the release commits and tags in REPO.
#  1. each released module requires the repository's modules at $version;
#     commit; tag every library module (no main package) on it;
#  2. a module with a main package (go install m@version refuses a go.mod
#     with replace directives) drops its replace directives of ours and is
#     tidied against the tags of step 1; commit; tag it.
release() {
	local repo=$1 d p rd m ok
	for d in "${mods[@]}"; do
		for p in $(requires "$repo/$d/go.mod"); do
			rd=${p#"$base"}
			rd=${rd#/}
			[[ -z $rd ]] && rd=.
			ok=0
			for m in "${mods[@]}"; do [[ $m == "$rd" ]] && ok=1; done
			if ((!ok)); then
				echo "release.sh: $d/go.mod requires $p, which is not released" >&2
				return 1
			fi
			(cd "$repo/$d" && go mod edit -require="$p@$version")
		done
	done
	if [[ -n $(git -C "$repo" status --porcelain) ]]; then
		git -C "$repo" add -- $(for d in "${mods[@]}"; do echo "$d/go.mod"; done)
		git_id "$repo" commit -q -m "release $version: the released modules require each other at $version"
	fi
	for d in "${libs[@]}"; do
		(cd "$repo/$d" && GOWORK=off go build ./...) || {
			echo "release.sh: $(path_of "$d") does not build on its own at the release commit" >&2
			return 1
		}
		git_id "$repo" tag -a "$(tag_of "$d")" -m "$(path_of "$d") $version"
	done
	((${#cmds[@]})) || return 0
	for d in "${cmds[@]}"; do
		for p in $(cd "$repo/$d" && go mod edit -json | sed -n 's|^[[:space:]]*"Path": "\('"${base//./\\.}"'[^"]*\)".*|\1|p' | sort -u); do
			go mod edit -dropreplace="$p" "$repo/$d/go.mod"
		done
		(cd "$repo/$d" && resolving "$repo" go mod tidy >>"$tmp/tidy.log" 2>&1 && resolving "$repo" go build ./...) || {
			cat "$tmp/tidy.log" >&2
			echo "release.sh: $(path_of "$d") does not build without its replace directives against the tags" >&2
			return 1
		}
	done
	git -C "$repo" add -- $(for d in "${cmds[@]}"; do echo "$d/go.mod $d/go.sum"; done)
	if ! git -C "$repo" diff --cached --quiet; then
		git_id "$repo" commit -q -m "release $version: $(for d in "${cmds[@]}"; do printf '%s ' "$d"; done)requires the released modules, without replace directives"
	fi
	for d in "${cmds[@]}"; do
		git_id "$repo" tag -a "$(tag_of "$d")" -m "$(path_of "$d") $version"
	done
}

# library and command modules, told apart in the working tree (a command
# module has a main package outside internal/)
libs=()
cmds=()
for d in "${mods[@]}"; do
	if (cd "$d" && go list -f '{{.Name}} {{.ImportPath}}' ./... | grep -v '/internal\(/\| \|$\)' | grep -q '^main '); then
		cmds+=("$d")
	else
		libs+=("$d")
	fi
done

clone=$tmp/repo
git clone -q --no-hardlinks "$root" "$clone"
echo "release.sh: dry run in $clone"
release "$clone"
echo "release.sh: tagged in the clone: $(for d in "${mods[@]}"; do printf '%s ' "$(tag_of "$d")"; done)"

# a scratch module resolves the tags from the clone and builds them
scratch=$tmp/scratch
mkdir -p "$scratch"
imports=()
mains=()
for d in "${mods[@]}"; do
	while IFS=' ' read -r name ip; do
		case $ip in */internal | */internal/*) continue ;; esac
		if [[ $name == main ]]; then mains+=("$ip"); else imports+=("$ip"); fi
	done < <(cd "$clone/$d" && go list -f '{{.Name}} {{.ImportPath}}' ./...)
done
(
	cd "$scratch"
	log=$tmp/scratch.log
	resolving "$clone" go mod init example.com/scratch >"$log" 2>&1
	{
		echo "// Program scratch imports every exported package of scriptlock $version."
		echo "package main"
		echo
		echo "import ("
		for ip in "${imports[@]}"; do echo "	_ \"$ip\""; done
		echo ")"
		echo
		echo "func main() {}"
	} >main.go
	resolving "$clone" go get $(for d in "${mods[@]}"; do printf '%s@%s ' "$(path_of "$d")" "$version"; done) >>"$log" 2>&1 || {
		cat "$log" >&2
		exit 1
	}
	for d in "${mods[@]}"; do
		got=$(resolving "$clone" go list -m -f '{{.Version}}{{if .Replace}} replaced{{end}}' "$(path_of "$d")")
		if [[ $got != "$version" ]]; then
			echo "release.sh: the scratch module resolved $(path_of "$d") to \"$got\", not $version" >&2
			exit 1
		fi
	done
	resolving "$clone" go mod tidy >>"$log" 2>&1 || {
		cat "$log" >&2
		exit 1
	}
	resolving "$clone" go build -o /dev/null .
	for ip in "${mains[@]}"; do
		GOBIN=$tmp/bin resolving "$clone" go install "$ip@$version"
	done
) || {
	echo "release.sh: a module outside the repository does not resolve or build the tagged modules (in $scratch)" >&2
	exit 1
}
echo "release.sh: a scratch module resolved every module at $version from the tags, built ${#imports[@]} packages and installed ${#mains[@]} command(s)"

if ((dry)); then
	echo "release.sh: dry run passed; nothing changed in $root"
	exit 0
fi
release "$root"
if [[ $(git rev-parse 'HEAD^{tree}') != $(git -C "$clone" rev-parse 'HEAD^{tree}') ]]; then
	echo "release.sh: the release commits here differ from the dry run's; check the tags made here" >&2
	exit 1
fi
echo "release.sh: tagged $(git rev-parse HEAD) and its parent here. Publish with:"
echo "  git push origin HEAD $(for d in "${mods[@]}"; do printf '%s ' "$(tag_of "$d")"; done)"
