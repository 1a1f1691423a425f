package redisserver

import (
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Version is what a server binary says about itself with --version: its
// product ("Redis" or "Valkey") and its version.
type Version struct {
	Product             string // "Redis" or "Valkey"
	Major, Minor, Patch int
}

// String returns the product and version, as "Redis 6.2.16".
func (v Version) String() string {
	return fmt.Sprintf("%s %d.%d.%d", v.Product, v.Major, v.Minor, v.Patch)
}

// AtLeast reports whether v is major.minor or later. Valkey carries on
// Redis's numbering (Valkey 7.2 is Redis 7.2's fork, Valkey 8 is later), so
// the comparison holds for both products.
func (v Version) AtLeast(major, minor int) bool {
	return v.Major > major || v.Major == major && v.Minor >= minor
}

// ShardedPubSub reports whether the server has sharded pub/sub (SPUBLISH,
// SSUBSCRIBE): Redis and Valkey 7.0 and later.
func (v Version) ShardedPubSub() bool { return v.AtLeast(7, 0) }

// hasDebugConfig reports whether the server has the enable-debug-command
// directive (7.0 and later; before it DEBUG is always allowed).
func (v Version) hasDebugConfig() bool { return v.AtLeast(7, 0) }

// hasClusterPort reports whether the server has the cluster-port directive
// (7.0 and later; before it the cluster bus listens on the port + 10000).
func (v Version) hasClusterPort() bool { return v.AtLeast(7, 0) }

// hasAddSlotsRange reports whether the server has CLUSTER ADDSLOTSRANGE
// (7.0 and later).
func (v Version) hasAddSlotsRange() bool { return v.AtLeast(7, 0) }

// versionLine matches redis-server --version: "Redis server v=6.2.16 sha=..."
// or "Valkey server v=8.0.1 sha=...".
var versionLine = regexp.MustCompile(`^(\w+) server v=(\d+)\.(\d+)\.(\d+)`)

// ParseVersion parses the output of redis-server --version (or
// valkey-server --version).
func ParseVersion(out string) (Version, error) {
	m := versionLine.FindStringSubmatch(strings.TrimSpace(out))
	if m == nil {
		return Version{}, fmt.Errorf("redisserver: cannot parse the server's version from %q", strings.TrimSpace(out))
	}
	v := Version{Product: m[1]}
	v.Major, _ = strconv.Atoi(m[2])
	v.Minor, _ = strconv.Atoi(m[3])
	v.Patch, _ = strconv.Atoi(m[4])
	return v, nil
}

var versions sync.Map // binary path -> versionResult

type versionResult struct {
	v   Version
	err error
}

// binaryVersion runs bin --version once per path and caches the answer.
func binaryVersion(bin string) (Version, error) {
	if r, ok := versions.Load(bin); ok {
		return r.(versionResult).v, r.(versionResult).err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "--version").Output()
	var r versionResult
	if err != nil {
		r.err = fmt.Errorf("redisserver: %s --version: %w", bin, err)
	} else {
		r.v, r.err = ParseVersion(string(out))
	}
	versions.Store(bin, r)
	return r.v, r.err
}

// BinaryVersion returns the version of the redis-server found in PATH, the
// one the start functions run. It fails, naming the fix, when there is
// none.
func BinaryVersion() (Version, error) {
	bin, err := lookPath(EnvRedisAddr)
	if err != nil {
		return Version{}, err
	}
	return binaryVersion(bin)
}

// serverInfoVersion parses the version INFO reports: redis_version, or
// valkey_version for Valkey (which also reports a redis_version of 7.2.4,
// the Redis release it is compatible with).
func serverInfoVersion(info map[string]string) (Version, error) {
	product, ver := "Redis", info["redis_version"]
	if v := info["valkey_version"]; v != "" {
		product, ver = "Valkey", v
	}
	return ParseVersion(product + " server v=" + ver)
}

// Release returns the product and version of the server: of its binary for
// a server this package started, from INFO for an external one (Valkey
// reported as Valkey, unlike [Server.Version]). It may block on the network
// until ctx is done.
func (s *Server) Release(ctx context.Context) (Version, error) {
	if !s.external && s.bin != "" {
		return s.ver, nil
	}
	info, err := s.info(ctx, "server")
	if err != nil {
		return Version{}, err
	}
	return serverInfoVersion(info)
}
