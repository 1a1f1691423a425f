package conformance

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/scriptlock/scriptlock/internal/redisserver"
	"github.com/scriptlock/scriptlock/locker"
)

// testCase is one rule of the suite.
type testCase struct {
	name        string // subtest name, "Group/Rule"
	rule        string // the rule, one sentence
	check       func(t *testing.T, e *env)
	clusterOnly bool // runs on the Cluster deployment only
}

// caseTimeout bounds every case.
const caseTimeout = 60 * time.Second

// deployment is one Redis deployment under test with the driver's Scripter.
type deployment struct {
	name     string
	scripter locker.Scripter
	admin    admin
	driver   Driver
	addrs    []string
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
func (a standaloneAdmin) CreateACLUser(ctx context.Context, user, pw string, rules ...string) error {
	return a.s.CreateACLUser(ctx, user, pw, rules...)
}

type clusterAdmin struct{ c *redisserver.Cluster }

func (a clusterAdmin) ClientKill(ctx context.Context, typ string) error {
	return a.c.ClientKill(ctx, typ)
}
func (a clusterAdmin) cluster() *redisserver.Cluster { return a.c }
func (a clusterAdmin) CreateACLUser(ctx context.Context, user, pw string, rules ...string) error {
	return a.c.CreateACLUser(ctx, user, pw, rules...)
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
}

func newEnv(t *testing.T, d *deployment) *env {
	ctx, cancel := context.WithTimeout(context.Background(), caseTimeout)
	t.Cleanup(cancel)
	var b [6]byte
	_, _ = rand.Read(b[:])
	return &env{t: t, d: d, s: d.scripter, ctx: ctx, prefix: "sltest:" + hex.EncodeToString(b[:]) + ":"}
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
// tag (and so the Cluster slot).
func (e *env) key(tag string) string {
	return e.prefix + "{" + tag + "}"
}

// keysLeft lists the keys under the case's prefix on every node.
func (e *env) keysLeft() []string {
	e.t.Helper()
	ks, err := e.d.admin.Keys(e.ctx, e.prefix+"*")
	require.NoError(e.t, err, "call: admin KEYS %s*", e.prefix)
	return ks
}

// lockKeysLeft is keysLeft without fence counters, which never expire by
// design.
func (e *env) lockKeysLeft() []string {
	e.t.Helper()
	var out []string
	for _, k := range e.keysLeft() {
		if !strings.HasSuffix(k, ":fence") {
			out = append(out, k)
		}
	}
	return out
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
