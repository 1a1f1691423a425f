package main

// End-to-end tests of the CLI: run() against real redis-server processes
// (standalone and a 3-master Cluster) started by internal/redisserver,
// with locks taken through the go-redis driver as an application would.

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/scriptlock/scriptlock/drivers/goredis"
	"github.com/scriptlock/scriptlock/internal/leak"
	"github.com/scriptlock/scriptlock/internal/redisserver"
	"github.com/scriptlock/scriptlock/locker"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMain(m *testing.M) {
	redis.SetLogger(quiet{})
	leak.VerifyTestMain(m)
}

// deployment is one Redis deployment under test: the CLI's connection
// flags and an application's lock Client on it.
type deployment struct {
	name   string
	flags  []string // --url or --cluster, and --prefix
	prefix string
	locks  *locker.Client
	admin  func(ctx context.Context, key string, args ...string) (any, error)
	master func(ctx context.Context, key string) string // the address of key's master
}

// deployments starts a standalone server and a Cluster and runs f on each.
func deployments(t *testing.T, f func(t *testing.T, d *deployment)) {
	t.Run("deployment=standalone", func(t *testing.T) {
		srv := redisserver.StartStandalone(t)
		rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, ContextTimeoutEnabled: true})
		t.Cleanup(func() { _ = rdb.Close() })
		d := newDeployment(t, "standalone", goredis.New(rdb), []string{"--url", "redis://" + srv.Addr})
		d.admin = func(ctx context.Context, _ string, args ...string) (any, error) { return srv.Do(ctx, args...) }
		d.master = func(context.Context, string) string { return srv.Addr }
		f(t, d)
	})
	t.Run("deployment=cluster", func(t *testing.T) {
		c := redisserver.StartCluster(t)
		rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs, ContextTimeoutEnabled: true})
		t.Cleanup(func() { _ = rdb.Close() })
		d := newDeployment(t, "cluster", goredis.New(rdb), []string{"--cluster", strings.Join(c.Addrs, ",")})
		d.admin = func(ctx context.Context, key string, args ...string) (any, error) {
			n, err := c.NodeFor(ctx, key)
			if err != nil {
				return nil, err
			}
			return n.Do(ctx, args...)
		}
		d.master = func(ctx context.Context, key string) string {
			n, err := c.NodeFor(ctx, key)
			require.NoError(t, err)
			return n.Addr
		}
		f(t, d)
	})
}

func newDeployment(t *testing.T, name string, s locker.Scripter, flags []string) *deployment {
	var b [4]byte
	_, _ = rand.Read(b[:])
	prefix := "clitest:" + hex.EncodeToString(b[:]) + ":"
	locks, err := locker.New(s, &locker.Options{Prefix: prefix})
	require.NoError(t, err)
	t.Cleanup(func() { _ = locks.Close() })
	return &deployment{name: name, flags: append(flags, "--prefix", prefix), prefix: prefix, locks: locks}
}

// result is what one run of the CLI printed and returned.
type result struct {
	code           int
	stdout, stderr string
}

// cli runs the CLI with args and the deployment's connection flags.
func (d *deployment) cli(t *testing.T, args ...string) result {
	t.Helper()
	return runCLI(t, append(append([]string{}, args...), d.flags...)...)
}

func runCLI(t *testing.T, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out, errOut bytes.Buffer
	code := run(ctx, args, &out, &errOut)
	r := result{code, out.String(), errOut.String()}
	t.Logf("scriptlock %s\n-> exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
	return r
}

func TestUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "usage: scriptlock"},
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"inspect"}, "give at least one lock NAME"},
		{[]string{"inspect", "--no-such-flag", "x"}, "flag provided but not defined"},
		{[]string{"inspect", "--url", "http://localhost:6379", "x"}, "use redis://"},
		{[]string{"inspect", "--timeout", "0s", "x"}, "--timeout must be positive"},
		{[]string{"list", "extra"}, "list takes no NAME"},
		{[]string{"watch", "a", "b"}, "give exactly one lock NAME"},
		{[]string{"release", "a", "b"}, "give exactly one lock NAME"},
		{[]string{"watch"}, "give exactly one lock NAME"},
		{[]string{"release", "--", ""}, "give exactly one lock NAME"},
		{[]string{"leader", "a", "b"}, "give exactly one election NAME"},
		{[]string{"leader", strings.Repeat("n", locker.MaxNameLen+1)}, "give exactly one election NAME"},
		{[]string{"inspect", "--prefix", "bad{", "x"}, "--prefix"},
		// shared flags before the command
		{[]string{"--timeout", "0s", "inspect", "x"}, "--timeout must be positive"},
		{[]string{"--prefix", "bad{", "list"}, "--prefix"},
		{[]string{"--url", "http://localhost:6379", "inspect", "x"}, "use redis://"},
		{[]string{"--json"}, "give a command after the flags"},
		{[]string{"--url"}, "flag needs an argument"},
		{[]string{"--force", "release", "x"}, "before the command only the shared flags"},
		{[]string{"--json", "frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"--json", "list", "extra"}, "list takes no NAME"},
	} {
		r := runCLI(t, tc.args...)
		assert.Equal(t, exitUsage, r.code, "scriptlock %v: exit status", tc.args)
		assert.Contains(t, r.stderr, tc.want, "scriptlock %v: stderr", tc.args)
		assert.Empty(t, r.stdout, "scriptlock %v: stdout", tc.args)
	}
	for _, args := range [][]string{{"watch", "-h"}, {"leader", "-h"}, {"release", "-h"}} {
		r := runCLI(t, args...)
		assert.Equal(t, exitOK, r.code, "scriptlock %v: -h is not an error", args)
		assert.Contains(t, r.stderr, "usage: scriptlock "+args[0], "scriptlock %v: the command's usage", args)
	}
	for _, args := range [][]string{{"help"}, {"-h"}, {"--help"}, {"--json", "-h"}} {
		r := runCLI(t, args...)
		assert.Equal(t, exitOK, r.code, "scriptlock %v", args)
		assert.Contains(t, r.stdout, "release --force --yes-really NAME", "scriptlock %v", args)
		assert.Contains(t, r.stdout, "usage: scriptlock [flags] <command>", "scriptlock %v", args)
	}
}

func TestUnreachable(t *testing.T) {
	for _, args := range [][]string{
		{"inspect", "--url", "redis://127.0.0.1:1", "--timeout", "2s", "x"},
		{"--url", "redis://127.0.0.1:1", "--timeout", "2s", "inspect", "x"},
		{"--url", "redis://127.0.0.1:1", "inspect", "x", "--timeout", "2s"},
	} {
		r := runCLI(t, args...)
		assert.Equal(t, exitFail, r.code, "scriptlock %v: exit status with no server", args)
		assert.Contains(t, r.stderr, "cannot reach Redis at 127.0.0.1:1", "scriptlock %v", args)
		assert.Contains(t, r.stderr, "check --url", "scriptlock %v: the error says what to do", args)
	}
}

func TestCommandFirst(t *testing.T) {
	for _, tc := range []struct {
		args, want []string
	}{
		{[]string{"list", "--json"}, []string{"list", "--json"}},
		{[]string{"--url", "redis://h:1", "list"}, []string{"list", "--url", "redis://h:1"}},
		{[]string{"--url=redis://h:1", "--json", "inspect", "a", "--prefix", "p:", "b"},
			[]string{"inspect", "--url=redis://h:1", "--json", "a", "--prefix", "p:", "b"}},
		{[]string{"-json", "--", "inspect", "--", "-a"}, []string{"inspect", "-json", "--", "-a"}},
		{[]string{"--timeout", "1s", "release", "--force", "--yes-really", "x"},
			[]string{"release", "--timeout", "1s", "--force", "--yes-really", "x"}},
		{[]string{"-h"}, []string{"-h"}},
	} {
		got, err := commandFirst(tc.args)
		require.NoError(t, err, "commandFirst(%q)", tc.args)
		assert.Equal(t, tc.want, got, "commandFirst(%q)", tc.args)
	}
}

func TestClusterNodeWithoutClusterFlag(t *testing.T) {
	c := redisserver.StartCluster(t)
	r := runCLI(t, "inspect", "--url", "redis://"+c.Addrs[0], "x")
	assert.Equal(t, exitUsage, r.code)
	assert.Contains(t, r.stderr, "connect with --cluster "+c.Addrs[0])
}

func TestParseInterleaved(t *testing.T) {
	var cfg config
	var stderr bytes.Buffer
	fs := newFlags("inspect", "inspect NAME...", &cfg, &stderr)
	pos, err := parse(fs, []string{"a", "--json", "b", "--prefix", "p:", "--", "--c"})
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b", "--c"}, pos)
	assert.True(t, cfg.json)
	assert.Equal(t, "p:", cfg.prefix)
}

func TestRedact(t *testing.T) {
	assert.Equal(t, "redis://u:xxxxx@h:1", redact("redis://u:secret@h:1"))
	assert.Equal(t, "redis://h:1", redact("redis://h:1"))
}
