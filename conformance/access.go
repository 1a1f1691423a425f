package conformance

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

// EnvPrefix is the key and channel prefix of the application whose Redis
// user certifies: set to "scriptlock:", every key and channel of the run
// is named "scriptlock:sltest:<run>:...", inside that user's ~scriptlock:*
// and &scriptlock:* patterns. Unset, names start with "sltest:".
const EnvPrefix = "SCRIPTLOCK_PREFIX"

// EnvSuiteUser, "user:password", is the user the suite's own connections to
// an existing deployment log in as: its checks of what a run leaves behind
// and the states some rules arrange (SCAN, TYPE, TTL and the like, under
// the run's prefix). Set it when the URL names the application's own user,
// which may run only what scriptlock needs; unset, they log in as the URL's
// user.
const EnvSuiteUser = "SCRIPTLOCK_SUITE_USER"

// suiteUserOf is suiteUser, failing t on a malformed value.
func suiteUserOf(t testing.TB) (user, password string, set bool) {
	t.Helper()
	user, password, set, err := suiteUser()
	if err != nil {
		t.Fatal(err)
	}
	return user, password, set
}

// appPrefix returns EnvPrefix, or an error when it holds a character that
// SCAN MATCH and ACL patterns read as a pattern.
func appPrefix() (string, error) {
	p := os.Getenv(EnvPrefix)
	if strings.ContainsAny(p, "*?[]\\ ") {
		return "", fmt.Errorf("conformance: %s=%q: want a plain prefix (no *, ?, [, ], \\ or space)", EnvPrefix, p)
	}
	return p, nil
}

// suiteUser returns EnvSuiteUser's user and password; set is false when it
// is unset.
func suiteUser() (user, password string, set bool, err error) {
	v := os.Getenv(EnvSuiteUser)
	if v == "" {
		return "", "", false, nil
	}
	user, password, ok := strings.Cut(v, ":")
	if !ok || user == "" || password == "" {
		return "", "", false, fmt.Errorf("conformance: %s: want user:password", EnvSuiteUser)
	}
	return user, password, true, nil
}

// Checking access.
//
// Before its first rule on a deployment, the suite asks the server whether
// the user the drivers connect as may do what scriptlock does, and whether
// its own connections may do what its checks do, so that a user short of a
// permission stops the run in seconds, naming it, instead of failing every
// rule with NOPERM. A command the ACL refuses answers NOPERM before it
// runs (inside a script too, where Redis 6.2 words it "The user executing
// the script can't ..."); any other answer (a wrong type, MOVED) means it
// is allowed. The probes touch only a key and a channel under the run's
// prefix, and the key expires within a minute whatever they could delete.

// accessProbe runs, inside a script, every command scriptlock's scripts run
// on KEYS[1] and publishes on ARGV[1] (SPUBLISH when ARGV[2] is "1"), and
// returns "command: error" for each the ACL refused.
const accessProbe = `
local k, ch = KEYS[1], ARGV[1]
local refused = {}
local function try(...)
	local r = redis.pcall(...)
	if type(r) == 'table' and r.err and (string.find(r.err, 'NOPERM', 1, true) or string.find(r.err, 'no permissions', 1, true) or string.find(r.err, "can't", 1, true)) then
		table.insert(refused, string.lower((select(1, ...))) .. ': ' .. r.err)
	end
end
try('SET', k, '1', 'PX', '60000')
try('PEXPIRE', k, 60000)
try('GET', k) try('EXISTS', k) try('PTTL', k) try('PERSIST', k) try('PEXPIRE', k, 60000) try('TIME')
try('DEL', k)
try('HSET', k, 'f', '1') try('PEXPIRE', k, 60000)
try('HSETNX', k, 'g', '1') try('HGET', k, 'f') try('HMGET', k, 'f') try('HLEN', k) try('HEXISTS', k, 'f')
try('HINCRBY', k, 'n', 1) try('HGETALL', k) try('HDEL', k, 'g')
try('DEL', k)
try('ZADD', k, 1, 'm') try('PEXPIRE', k, 60000)
try('ZRANGE', k, 0, -1) try('ZRANGEBYSCORE', k, '-inf', '+inf') try('ZREVRANGE', k, 0, -1)
try('ZCOUNT', k, '-inf', '+inf') try('ZSCORE', k, 'm') try('ZREMRANGEBYSCORE', k, '-inf', '(0') try('ZREM', k, 'm')
try('DEL', k)
if ARGV[2] == '1' then try('SPUBLISH', ch, 'access') else try('PUBLISH', ch, 'access') end
return refused
`

// refused reports whether err is the ACL's refusal of a command.
func refused(err error) bool {
	return err != nil && (strings.Contains(err.Error(), "NOPERM") || strings.Contains(err.Error(), "no permissions"))
}

// checkAccess asks d's server whether the drivers' user (d.app) may run
// every command scriptlock sends, on the run's keys and channels, and
// whether the suite's own user (d.admin) may run those of its checks. It
// returns nil, or an error naming each refused command with the ACL
// SETUSER line that grants it.
func (d *deployment) checkAccess(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	sharded, err := shardedPubSub(ctx, d.admin, d.names)
	if err != nil {
		return err
	}
	// A key and channel of its own: deployments of one run may check at
	// once on a shared server.
	tag := "{access-" + strings.TrimSuffix(newPrefix(""), ":") + "}"
	key, ch := d.names+tag, d.names+tag+":ch"
	pub, sub, unsub := "0", "SUBSCRIBE", "UNSUBSCRIBE"
	if sharded {
		pub, sub, unsub = "1", "SSUBSCRIBE", "SUNSUBSCRIBE"
	}
	var app []string
	try := func(name string, args ...string) (any, error) {
		v, err := d.app.Do(ctx, key, args...)
		if refused(err) {
			app = append(app, name+": "+err.Error())
		}
		return v, err
	}
	if _, err := try("ping", "PING"); err != nil && !refused(err) {
		return fmt.Errorf("conformance: checking access: PING: %w", err)
	}
	try("hello", "HELLO")
	try("client|setname", "CLIENT", "SETNAME", "sltest-access")
	try("command", "COMMAND", "COUNT")
	try("script|load", "SCRIPT", "LOAD", accessProbe)
	try("evalsha", "EVALSHA", sha1hex(accessProbe), "1", key, ch, pub)
	if v, err := try("eval", "EVAL", accessProbe, "1", key, ch, pub); err == nil {
		list, _ := v.([]any)
		for _, r := range list {
			app = append(app, fmt.Sprint(r))
		}
	}
	for _, c := range []string{sub, unsub} {
		if _, err := d.app.Do(ctx, ch, c, ch); refused(err) {
			app = append(app, strings.ToLower(c)+": "+err.Error())
		}
	}
	own := d.checkSuiteAccess(ctx, key)
	if len(app) == 0 && len(own) == 0 {
		return nil
	}
	var b strings.Builder
	prefix := strings.TrimSuffix(d.names, runPrefix) // the application's
	user := d.conn.Username
	if user == "" {
		user = "default"
	}
	if len(app) > 0 {
		grant := ACLCommandsPlainPubSub
		if sharded {
			grant = ACLCommands
		}
		fmt.Fprintf(&b, "conformance: the user %q the drivers connect as may not do what scriptlock does on the run's keys and channels (%s*):\n  %s\n"+
			"a user scriptlock can use, for the application's prefix %q (%s):\n  ACL SETUSER %s on >password ~%s* &%s* -@all %s\n",
			user, d.names, strings.Join(app, "\n  "), prefix, EnvPrefix, user, prefix, prefix, strings.Join(grant, " "))
	}
	if len(own) > 0 {
		fmt.Fprintf(&b, "conformance: the suite's own connections may not run what its checks of the run's keys need:\n  %s\n"+
			"these are not the application's commands: set %s=user:password to a user that may, such as\n  ACL SETUSER sltest-suite on >password ~%s* &%s* +@all -@admin -@dangerous +scan\n",
			strings.Join(own, "\n  "), EnvSuiteUser, prefix, prefix)
	}
	return errors.New(strings.TrimSuffix(b.String(), "\n"))
}

// checkSuiteAccess returns the commands of the suite's checks (safeCommands
// and SCAN) that d.admin's user may not run on key, each with the refusal.
func (d *deployment) checkSuiteAccess(ctx context.Context, key string) []string {
	probes := [][]string{
		{"SET", key, "1", "PX", "60000"}, {"GET", key}, {"EXISTS", key}, {"TYPE", key}, {"PTTL", key}, {"TTL", key},
		{"PERSIST", key}, {"INCR", key}, {"PEXPIRE", key, "60000"}, {"EXPIRE", key, "60"},
		{"HGET", key, "f"}, {"HSET", key, "f", "1"}, {"HDEL", key, "f"}, {"HKEYS", key}, {"HGETALL", key}, {"HLEN", key}, {"HINCRBY", key, "f", "1"},
		{"ZADD", key, "1", "m"}, {"ZREM", key, "m"}, {"ZCARD", key}, {"ZRANGE", key, "0", "-1"}, {"ZSCORE", key, "m"},
		{"TIME"}, {"PING"}, {"HELLO"}, {"COMMAND", "INFO", "GET"}, {"SCRIPT", "EXISTS", sha1hex(accessProbe)},
		{"DEL", key},
	}
	var own []string
	for _, p := range probes {
		if _, err := d.admin.Do(ctx, key, p...); refused(err) {
			name := strings.ToLower(p[0])
			if len(p) > 1 && (p[0] == "COMMAND" || p[0] == "SCRIPT") {
				name += "|" + strings.ToLower(p[1])
			}
			own = append(own, name+": "+err.Error())
		}
	}
	if _, err := d.admin.Keys(ctx, d.names+"*"); refused(err) {
		own = append(own, "scan: "+err.Error())
	}
	return slices.Compact(own)
}
