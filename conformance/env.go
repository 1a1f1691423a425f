package conformance

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/scriptlock/scriptlock/internal/redisserver"
	"github.com/scriptlock/scriptlock/locker"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testCase is one rule of the suite.
type testCase struct {
	name        string // subtest name, "Group/Rule"
	rule        string // the rule, one sentence
	check       func(t *testing.T, e *env)
	clusterOnly bool // runs on the Cluster deployment only
	// exclusive, when set, says why the case must have its deployment to
	// itself: it disturbs the whole server or deployment (CLIENT KILL,
	// SCRIPT FLUSH, CLIENT PAUSE, DEBUG SLEEP, a restart, a failover, a
	// slot migration, CONFIG SET, ACL users), reads figures of the whole
	// server (INFO commandstats), or asserts a bound on how soon something
	// happens, which the load of the deployment's other cases could break.
	// Such cases run first on their deployment, one at a time; the cases
	// of other deployments (other servers) may run meanwhile.
	exclusive string
	// quiet, when set, says why the case must have the whole process to
	// itself: it counts every goroutine of the process, or the restarts
	// of other deployments' cases broke it (Quorum/MinorityDown). Such
	// cases run first on their deployment too, each with no other case of
	// any deployment running.
	quiet string
	// timed, when set, says why the case bounds how long calls take
	// tightly enough that the load of other deployments' cases broke it
	// (Quorum/SilentMinority). It runs as a quiet case does, except that
	// up to timedConcurrency timed cases (of other deployments) run at
	// once: no other case runs beside them (see processGate).
	timed string
	// needs, when set, says what the rule does that needs more than an
	// application's ACL user (admin commands such as DEBUG, CLIENT PAUSE or
	// KILL, SCRIPT FLUSH, CONFIG, INFO, ACL, Cluster administration; or
	// servers the suite starts, stops or restarts itself), as a phrase
	// following "it": the safe profile (see EnvSuite) reports such a rule
	// not applicable with that reason, and runs only rules without it.
	needs string
}

// caseTimeout bounds every case.
const caseTimeout = 60 * time.Second

// deployment is one Redis deployment under test with the driver's Scripter.
type deployment struct {
	name string
	// connect returns a new Scripter of the driver on the deployment,
	// closed by t.Cleanup: every case gets its own client, so that its
	// connections, subscriptions and goroutines are its own.
	connect func(t testing.TB) locker.Scripter
	// conn is how connect connects (the deployment's URL settings).
	conn   Conn
	admin  admin
	driver Driver
	addrs  []string
	// owned is set when the suite started the deployment's servers itself
	// (no SCRIPTLOCK_REDIS_ADDR / SCRIPTLOCK_CLUSTER_ADDRS): only then may
	// a rule restart or kill a node, or move its slots or masters.
	owned bool
	// profile is the profile the deployment runs (ProfileSafe or
	// ProfileFull), and profileWhy why.
	profile, profileWhy string
	// server names the deployment's server, "Redis 7.0.15", or "".
	server string
	// names starts every key and channel name of the deployment's run:
	// the application's prefix (EnvPrefix) and runPrefix.
	names string
	// app is the admin as the user the drivers connect as (admin may log
	// in as EnvSuiteUser instead): checkAccess asks with it.
	app admin

	// record, when set, is told each case's outcome once it ended: whether
	// it was skipped, and why when it was found not applicable.
	record func(rule string, skipped bool, reason string)

	debugMu    sync.Mutex
	debugKnown bool  // debugErr is known (see env.debugRefusal)
	debugErr   error // the server's refusal of DEBUG, or nil
}

// admin is what the suite does to the server behind the driver's back.
type admin interface {
	// ScriptFlush drops the script cache on every node.
	ScriptFlush(ctx context.Context) error
	// Keys lists keys matching pattern on every node.
	Keys(ctx context.Context, pattern string) ([]string, error)
	// Do runs a command on the node that owns key.
	Do(ctx context.Context, key string, args ...string) (any, error)
	// ClientKill closes every client connection of type typ on every node.
	ClientKill(ctx context.Context, typ string) error
	// Restart restarts the node that owns key without persistence: its
	// keys and scripts are lost.
	Restart(ctx context.Context, key string) error
	// CreateACLUser creates (or replaces) an ACL user on every node.
	CreateACLUser(ctx context.Context, user, password string, rules ...string) error
	// DeleteACLUser deletes an ACL user on every node (none is not an error).
	DeleteACLUser(ctx context.Context, user string) error
	// Node returns the server (the master, on a Cluster) that owns key.
	Node(ctx context.Context, key string) (*redisserver.Server, error)
	// cluster returns the Cluster, or nil on a standalone server.
	cluster() *redisserver.Cluster
}

type standaloneAdmin struct{ s *redisserver.Server }

func (a standaloneAdmin) ScriptFlush(ctx context.Context) error { return a.s.ScriptFlush(ctx) }
func (a standaloneAdmin) Keys(ctx context.Context, p string) ([]string, error) {
	return a.s.Keys(ctx, p)
}
func (a standaloneAdmin) Do(ctx context.Context, _ string, args ...string) (any, error) {
	return a.s.Do(ctx, args...)
}

func (a standaloneAdmin) ClientKill(ctx context.Context, typ string) error {
	return a.s.ClientKill(ctx, typ)
}
func (a standaloneAdmin) Restart(ctx context.Context, _ string) error { return a.s.Restart(ctx) }
func (a standaloneAdmin) cluster() *redisserver.Cluster               { return nil }
func (a standaloneAdmin) Node(context.Context, string) (*redisserver.Server, error) {
	return a.s, nil
}
func (a standaloneAdmin) CreateACLUser(ctx context.Context, user, pw string, rules ...string) error {
	return a.s.CreateACLUser(ctx, user, pw, rules...)
}
func (a standaloneAdmin) DeleteACLUser(ctx context.Context, user string) error {
	return a.s.DeleteACLUser(ctx, user)
}

type clusterAdmin struct{ c *redisserver.Cluster }

func (a clusterAdmin) ClientKill(ctx context.Context, typ string) error {
	return a.c.ClientKill(ctx, typ)
}
func (a clusterAdmin) cluster() *redisserver.Cluster { return a.c }
func (a clusterAdmin) Node(ctx context.Context, key string) (*redisserver.Server, error) {
	return a.c.NodeFor(ctx, key)
}
func (a clusterAdmin) CreateACLUser(ctx context.Context, user, pw string, rules ...string) error {
	return a.c.CreateACLUser(ctx, user, pw, rules...)
}
func (a clusterAdmin) DeleteACLUser(ctx context.Context, user string) error {
	return a.c.DeleteACLUser(ctx, user)
}

func (a clusterAdmin) Restart(ctx context.Context, key string) error {
	n, err := a.c.NodeFor(ctx, key)
	if err != nil {
		return err
	}
	return n.Restart(ctx)
}

func (a clusterAdmin) ScriptFlush(ctx context.Context) error { return a.c.ScriptFlush(ctx) }
func (a clusterAdmin) Keys(ctx context.Context, p string) ([]string, error) {
	return a.c.Keys(ctx, p)
}
func (a clusterAdmin) Do(ctx context.Context, key string, args ...string) (any, error) {
	n, err := a.c.NodeFor(ctx, key)
	if err != nil {
		return nil, err
	}
	return n.Do(ctx, args...)
}

// env is what one case works with: the deployment, a fresh key prefix and
// a context bounded by caseTimeout.
type env struct {
	t      *testing.T
	d      *deployment
	s      locker.Scripter
	ctx    context.Context
	prefix string

	rawMu sync.Mutex
	raw   map[string]bool // raw keys handed out by key, deleted after the case

	naReason string // why the case is not applicable (see notApplicable), or ""

	start    time.Time  // when the case began (see measureLag)
	measure  func() lag // measures the lag for a timing check; nil: measureLag
	timingMu sync.Mutex
	timings  []timingNote // timing checks that did not pass (see within)
}

// newEnv returns the env of a case with the key prefix prefix (see
// newPrefix), connecting a new client of the driver for it.
func newEnv(t *testing.T, d *deployment, prefix string) *env {
	ctx, cancel := context.WithTimeout(context.Background(), caseTimeout)
	t.Cleanup(cancel)
	e := &env{t: t, d: d, s: d.connect(t), ctx: ctx, prefix: prefix, raw: map[string]bool{}, start: time.Now()}
	t.Cleanup(meter.hold())
	t.Cleanup(e.deleteRaw)
	return e
}

// newPrefix returns a fresh key prefix under names (a deployment's): 12
// random hex digits and ":".
func newPrefix(names string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return names + hex.EncodeToString(b[:]) + ":"
}

// runPrefix follows the application's prefix (EnvPrefix) in every key and
// channel name of this process's runs: "sltest:", 8 random hex digits and
// ":", so that runs sharing a deployment never see each other's keys.
var runPrefix = func() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return "sltest:" + hex.EncodeToString(b[:]) + ":"
}()

// deleteRaw deletes the raw keys of Scripter-level cases (they hold plain
// values with no expiry: not lock state, which must clean up after itself).
func (e *env) deleteRaw() {
	e.rawMu.Lock()
	keys := make([]string, 0, len(e.raw))
	for k := range e.raw {
		keys = append(keys, k)
	}
	e.rawMu.Unlock()
	// Each DEL tries again, for up to 30 s, when the admin connection
	// fails (a dial that times out on a busy machine).
	for _, k := range keys {
		var err error
		for end := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_, err = e.d.admin.Do(ctx, k, "DEL", k)
			cancel()
			if err == nil || time.Now().After(end) {
				break
			}
		}
		assert.NoError(e.t, err, "call: admin DEL %s (a raw key of the case)", k)
	}
}

// client returns a locker.Client on the case's prefix; opts may be nil.
func (e *env) client(opts *locker.Options) *locker.Client {
	e.t.Helper()
	return e.clientOn(e.s, opts)
}

// clientOn is client with another Scripter (a wrapper of the driver's).
func (e *env) clientOn(s locker.Scripter, opts *locker.Options) *locker.Client {
	e.t.Helper()
	o := locker.Options{}
	if opts != nil {
		o = *opts
	}
	o.Prefix = e.prefix
	c, err := locker.New(s, &o)
	require.NoError(e.t, err, "call: locker.New(driver, %+v)", o)
	e.t.Cleanup(func() { _ = c.Close() })
	return c
}

// mutex returns a Mutex on c, failing the case on error.
func (e *env) mutex(c *locker.Client, name string, ttl time.Duration, opts *locker.MutexOptions) *locker.Mutex {
	e.t.Helper()
	m, err := c.NewMutex(name, ttl, opts)
	require.NoError(e.t, err, "call: NewMutex(%q, %v, %+v)", name, ttl, opts)
	return m
}

// key returns a fresh raw key for Scripter-level cases; tag picks the hash
// tag (and so the Cluster slot). The key is deleted after the case.
func (e *env) key(tag string) string {
	k := e.prefix + "{" + tag + "}"
	e.rawMu.Lock()
	e.raw[k] = true
	e.rawMu.Unlock()
	return k
}

// keysLeft lists the keys under the case's prefix on every node.
func (e *env) keysLeft() []string {
	e.t.Helper()
	ks, err := e.d.admin.Keys(e.ctx, e.prefix+"*")
	require.NoError(e.t, err, "call: admin KEYS %s*", e.prefix)
	return ks
}

// lockKeysLeft lists the keys under the case's prefix, as keysLeft does:
// no lock key is exempt (there is no fence counter key that outlives its
// lock any more). Kept for the cases that call it.
func (e *env) lockKeysLeft() []string {
	e.t.Helper()
	return e.keysLeft()
}

// claimKeysLeft lists claim markers under the case's prefix.
func (e *env) claimKeysLeft() []string {
	e.t.Helper()
	var out []string
	for _, k := range e.keysLeft() {
		if strings.HasSuffix(k, ":claim") {
			out = append(out, k)
		}
	}
	return out
}

// keyWindow is how long after the last case a key under the suite's
// prefixes may still live: the longest TTL a case leaves behind (30 s) or
// the abandoned-call window (about 30 s), plus slack.
const keyWindow = 35 * time.Second

const noKeysLeftRule = "Once every case of a deployment ran (and its background clean-ups settled), every key left under the run's prefix ([application prefix]sltest:<run>:*) expires within the abandoned-call window (~30 s): no key without an expiry, none with a later one; so after the window none is left."

// keySettle is how long the key-leak check lets background clean-ups
// settle before it judges the keys left by their expiry.
const keySettle = 2 * time.Second

// keyWatch is a key-leak check running in the background: after every
// case of a deployment (and their clean-ups) ran, no key outlives its
// purpose.
type keyWatch struct {
	done   chan struct{}
	cancel context.CancelFunc
	found  string // the failure, or ""
	log    string
}

// watchKeys starts polling every node of d for keys under d.names until
// there are none; it fails at keyWindow, or at once for a key that cannot
// be gone by then (no expiry, or a longer one: nothing runs any more that
// could delete it), listing each key with its type, remaining time and
// members. It uses only admin connections, so it may run while another
// deployment's cases do.
func watchKeys(d *deployment) *keyWatch {
	ctx, cancel := context.WithTimeout(context.Background(), keyWindow+30*time.Second)
	w := &keyWatch{done: make(chan struct{}), cancel: cancel}
	shared(func() {
		go func() {
			defer close(w.done)
			w.log, w.found = pollNoKeys(ctx, d)
		}()
	})
	return w
}

// stop ends the watch if its report did not run (a -run pattern left it
// out), so that no goroutine outlives the suite.
func (w *keyWatch) stop() {
	w.cancel()
	<-w.done
}

// report waits for the watch and reports it to t.
func (w *keyWatch) report(t *testing.T) {
	t.Logf("rule: %s", noKeysLeftRule)
	<-w.done
	t.Log(w.log)
	if w.found != "" {
		t.Error(w.found)
	}
}

func pollNoKeys(ctx context.Context, d *deployment) (log, found string) {
	pattern := d.names + "*"
	start := time.Now()
	deadline := start.Add(keyWindow)
	for {
		actx, cancel := context.WithTimeout(ctx, 5*time.Second)
		keys, err := d.admin.Keys(actx, pattern)
		cancel()
		if err != nil {
			// An admin connection that fails (a dial that times out on a
			// busy machine) proves no leak: try again until the deadline.
			if time.Now().After(deadline) || ctx.Err() != nil {
				return "", fmt.Sprintf("call: admin SCAN MATCH %s on every node: %v", pattern, err)
			}
			time.Sleep(time.Second)
			continue
		}
		if len(keys) == 0 {
			return fmt.Sprintf("no key left under %s (after waiting %v)", pattern, time.Since(start).Round(time.Millisecond)), ""
		}
		var lines, late []string
		for _, k := range keys {
			line, pttl := describeKey(ctx, d.admin, k)
			lines = append(lines, line)
			if pttl == -1 || pttl > 0 && time.Now().Add(time.Duration(pttl)*time.Millisecond).After(deadline) {
				late = append(late, line)
			}
		}
		if len(late) > 0 {
			return "", fmt.Sprintf("%d key(s) under %s would outlive the %v window (no expiry, or a later one), of %d left:\n%s\nall left:\n%s",
				len(late), pattern, keyWindow, len(keys), strings.Join(late, "\n"), strings.Join(lines, "\n"))
		}
		if time.Since(start) >= keySettle {
			// Every key left expires within the window, and nothing runs
			// any more that could extend one (the goroutine check after
			// each case sees to that): Redis removes them by the deadline.
			return fmt.Sprintf("%d key(s) left under %s after %v, each expiring within the %v window:\n%s",
				len(keys), pattern, keySettle, keyWindow, strings.Join(lines, "\n")), ""
		}
		if time.Now().After(deadline) {
			return "", fmt.Sprintf("%d key(s) left under %s %v after the last case:\n%s", len(keys), pattern, keyWindow, strings.Join(lines, "\n"))
		}
		select {
		case <-ctx.Done():
			return "", fmt.Sprintf("key-leak check: %v", ctx.Err())
		case <-time.After(time.Second):
		}
	}
}

// describeKey returns "<key> <type> pttl=<ms> [fields]" and the key's
// PTTL in ms (-1: no expiry, -2: gone meanwhile).
func describeKey(ctx context.Context, a admin, k string) (string, int64) {
	typ, _ := a.Do(ctx, k, "TYPE", k)
	r, _ := a.Do(ctx, k, "PTTL", k)
	pttl, _ := r.(int64)
	line := fmt.Sprintf("%q %v pttl=%dms", k, typ, pttl)
	switch typ {
	case "hash":
		if f, err := a.Do(ctx, k, "HKEYS", k); err == nil {
			line += fmt.Sprintf(" fields %v", f)
		}
	case "zset":
		if f, err := a.Do(ctx, k, "ZRANGE", k, "0", "-1", "WITHSCORES"); err == nil {
			line += fmt.Sprintf(" members %v", f)
		}
	}
	return line, pttl
}
