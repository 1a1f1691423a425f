package conformance

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/scriptlock/scriptlock/internal/redisserver"
)

// EnvSuite selects the profile the suite runs, "safe" or "full". Unset,
// a deployment the suite starts itself runs "full" and one named by
// SCRIPTLOCK_REDIS_URL, SCRIPTLOCK_REDIS_ADDR, SCRIPTLOCK_CLUSTER_URLS or
// SCRIPTLOCK_CLUSTER_ADDRS runs "safe".
//
// The safe profile runs every rule that needs only what an application's
// ACL user has (the scripts, pub/sub, TIME, reads and writes of keys under
// the run's prefix, SCAN, HELLO, COMMAND INFO): it sends no DEBUG,
// CLIENT PAUSE or KILL, SCRIPT FLUSH, CONFIG, FLUSHALL, KEYS, INFO, ACL or
// Cluster administration, and starts, stops or restarts no server. The
// other rules are reported not applicable, with what they need. The full
// profile runs every rule.
const EnvSuite = "SCRIPTLOCK_SUITE"

// The profiles EnvSuite selects.
const (
	// ProfileSafe runs the rules an application's ACL user may run.
	ProfileSafe = "safe"
	// ProfileFull runs every rule, for servers the suite may disturb.
	ProfileFull = "full"
)

// profileOf returns the profile a deployment runs (owned: the suite
// started it) and why, or an error naming a bad EnvSuite value.
func profileOf(owned bool) (profile, why string, err error) {
	switch v := strings.TrimSpace(os.Getenv(EnvSuite)); v {
	case ProfileSafe, ProfileFull:
		return v, EnvSuite + "=" + v, nil
	case "":
		if owned {
			return ProfileFull, "the suite started the servers (" + EnvSuite + " unset)", nil
		}
		return ProfileSafe, fmt.Sprintf("%v names an existing deployment (%s unset; %s=full runs every rule there)", redisserver.ExternalEnv(), EnvSuite, EnvSuite), nil
	default:
		return "", "", fmt.Errorf("conformance: %s=%q: want %q or %q", EnvSuite, v, ProfileSafe, ProfileFull)
	}
}

// safeCommands are the commands the suite itself (not the driver) may
// send to a deployment in the safe profile, besides SCAN for its key
// checks: reads and writes of its own keys, and what tells the server's
// version and commands.
var safeCommands = map[string]bool{
	"DEL": true, "EXISTS": true, "GET": true, "SET": true, "TYPE": true, "PTTL": true, "TTL": true,
	"PEXPIRE": true, "EXPIRE": true, "PERSIST": true, "INCR": true,
	"HGET": true, "HSET": true, "HDEL": true, "HKEYS": true, "HGETALL": true, "HLEN": true, "HINCRBY": true,
	"ZADD": true, "ZREM": true, "ZCARD": true, "ZRANGE": true, "ZSCORE": true,
	"TIME": true, "PING": true, "HELLO": true, "COMMAND INFO": true, "SCRIPT EXISTS": true,
}

// safeAdmin is the admin of a deployment in the safe profile: it refuses,
// with an error that fails the case, whatever needs more than an
// application's ACL user, so that a rule missing its testCase.needs is
// found by its failure rather than by the server's owner.
type safeAdmin struct{ a admin }

// errUnsafe is the error of an admin operation the safe profile refuses.
func errUnsafe(op string) error {
	return fmt.Errorf("conformance: the safe profile sends no %s (more than an application's ACL user may do): the rule must declare it in testCase.needs", op)
}

func (s safeAdmin) ScriptFlush(context.Context) error { return errUnsafe("SCRIPT FLUSH") }
func (s safeAdmin) Keys(ctx context.Context, pattern string) ([]string, error) {
	return s.a.Keys(ctx, pattern) // SCAN MATCH
}
func (s safeAdmin) Do(ctx context.Context, key string, args ...string) (any, error) {
	if len(args) == 0 {
		return s.a.Do(ctx, key, args...)
	}
	cmd := strings.ToUpper(args[0])
	if len(args) > 1 && (cmd == "SCRIPT" || cmd == "CLIENT" || cmd == "CONFIG" || cmd == "CLUSTER" || cmd == "ACL" || cmd == "COMMAND") {
		cmd += " " + strings.ToUpper(args[1])
	}
	if !safeCommands[cmd] {
		return nil, errUnsafe(cmd)
	}
	return s.a.Do(ctx, key, args...)
}
func (s safeAdmin) ClientKill(context.Context, string) error { return errUnsafe("CLIENT KILL") }
func (s safeAdmin) Restart(context.Context, string) error    { return errUnsafe("restart") }
func (s safeAdmin) CreateACLUser(context.Context, string, string, ...string) error {
	return errUnsafe("ACL SETUSER")
}
func (s safeAdmin) DeleteACLUser(context.Context, string) error { return errUnsafe("ACL DELUSER") }
func (s safeAdmin) Node(context.Context, string) (*redisserver.Server, error) {
	return nil, errUnsafe("command to a node of its choosing")
}
func (s safeAdmin) cluster() *redisserver.Cluster { return s.a.cluster() }

// knownEnv are the SCRIPTLOCK_* variables the suite reads, and those the
// repository's scripts and CLI read (they may share a shell with it).
var knownEnv = []string{
	redisserver.EnvRedisURL, redisserver.EnvRedisAddr, redisserver.EnvClusterURLs, redisserver.EnvClusterAddrs,
	"SCRIPTLOCK_TLS_CA", EnvSuite, EnvCases, EnvPrefix, EnvSuiteUser,
	"SCRIPTLOCK_URL", "SCRIPTLOCK_FUZZ", "SCRIPTLOCK_STATICCHECK", "SCRIPTLOCK_COMPAT_JOBS", "SCRIPTLOCK_COMPAT_OUT",
	"SCRIPTLOCK_COMPAT_PARALLEL", "SCRIPTLOCK_COMPAT_RUN", "SCRIPTLOCK_COMPAT_SERVERS", "SCRIPTLOCK_COMPAT_TIMEOUT",
}

// unknownEnv returns the SCRIPTLOCK_* variables of environ (as
// os.Environ gives it) that nothing reads: a misspelled SCRIPTLOCK_REDIS_URL
// would otherwise certify a server the suite started instead of the one
// meant.
func unknownEnv(environ []string) []string {
	var out []string
	for _, kv := range environ {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "SCRIPTLOCK_") && !slices.Contains(knownEnv, k) {
			out = append(out, k)
		}
	}
	return out
}
