package redisserver_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/scriptlock/scriptlock/internal/redisserver"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// slotMove returns the slot of key, the master that holds it and another
// master to move it to, with key set on the first.
func slotMove(ctx context.Context, t *testing.T, c *redisserver.Cluster, key string) (slot int, from, to *redisserver.Server) {
	t.Helper()
	slot, err := c.SlotOf(ctx, key)
	require.NoError(t, err)
	from, err = c.NodeForSlot(ctx, slot)
	require.NoError(t, err)
	to, err = c.OtherMaster(ctx, slot)
	require.NoError(t, err)
	_, err = from.Do(ctx, "SET", key, "1")
	require.NoError(t, err)
	return slot, from, to
}

func TestStandalone(t *testing.T) {
	t.Parallel()
	start := time.Now()
	s := redisserver.StartStandalone(t)
	t.Logf("standalone start: %v", time.Since(start))
	ctx := testCtx(t)

	t.Run("Version", func(t *testing.T) {
		v, err := s.Version(ctx)
		require.NoError(t, err)
		assert.Regexp(t, `^\d+\.\d+\.\d+`, v)
	})

	t.Run("SetGet", func(t *testing.T) {
		got, err := s.Do(ctx, "SET", "setget", "v\r\n1")
		require.NoError(t, err)
		assert.Equal(t, "OK", got)
		got, err = s.Do(ctx, "GET", "setget")
		require.NoError(t, err)
		assert.Equal(t, "v\r\n1", got)
		got, err = s.Do(ctx, "INCRBY", "counter", "5")
		require.NoError(t, err)
		assert.Equal(t, int64(5), got)
		got, err = s.Do(ctx, "RPUSH", "list", "a", "")
		require.NoError(t, err)
		assert.Equal(t, int64(2), got)
		got, err = s.Do(ctx, "LRANGE", "list", "0", "-1")
		require.NoError(t, err)
		assert.Equal(t, []any{"a", ""}, got)
	})

	t.Run("Nil", func(t *testing.T) {
		got, err := s.Do(ctx, "GET", "missing")
		require.NoError(t, err)
		assert.Nil(t, got)
		got, err = s.Do(ctx, "EVAL", "return {1, false, 'x'}", "0")
		require.NoError(t, err)
		assert.Equal(t, []any{int64(1), nil, "x"}, got)
	})

	t.Run("ErrorReply", func(t *testing.T) {
		_, err := s.Do(ctx, "NOSUCHCOMMAND")
		var re *redisserver.RedisError
		require.ErrorAs(t, err, &re)
		assert.True(t, strings.HasPrefix(re.Msg, "ERR unknown command"), re.Msg)
		assert.Equal(t, re.Msg, err.Error())

		_, err = s.Do(ctx, "EVALSHA", strings.Repeat("0", 40), "0")
		require.ErrorAs(t, err, &re)
		assert.True(t, strings.HasPrefix(re.Msg, "NOSCRIPT"), re.Msg)

		_, err = s.Do(ctx)
		require.Error(t, err)
	})

	t.Run("ScriptFlush", func(t *testing.T) {
		sha, err := s.Do(ctx, "SCRIPT", "LOAD", "return 1")
		require.NoError(t, err)
		got, err := s.Do(ctx, "SCRIPT", "EXISTS", sha.(string))
		require.NoError(t, err)
		assert.Equal(t, []any{int64(1)}, got)
		require.NoError(t, s.ScriptFlush(ctx))
		got, err = s.Do(ctx, "SCRIPT", "EXISTS", sha.(string))
		require.NoError(t, err)
		assert.Equal(t, []any{int64(0)}, got)
	})

	t.Run("Keys", func(t *testing.T) {
		for i := range 1200 {
			_, err := s.Do(ctx, "SET", fmt.Sprintf("scan:%04d", i), "x")
			require.NoError(t, err)
		}
		keys, err := s.Keys(ctx, "scan:*")
		require.NoError(t, err)
		require.Len(t, keys, 1200)
		assert.Equal(t, "scan:0000", keys[0])
		assert.Equal(t, "scan:1199", keys[1199])
		keys, err = s.Keys(ctx, "nothing:*")
		require.NoError(t, err)
		assert.Empty(t, keys)
	})

	t.Run("ClientKill", func(t *testing.T) {
		nc, err := net.Dial("tcp", s.Addr)
		require.NoError(t, err)
		defer nc.Close()
		r := bufio.NewReader(nc)
		_, err = nc.Write([]byte("PING\r\n"))
		require.NoError(t, err)
		line, err := r.ReadString('\n')
		require.NoError(t, err)
		require.Equal(t, "+PONG\r\n", line)

		require.NoError(t, s.ClientKill(ctx, "normal"))

		_, _ = nc.Write([]byte("PING\r\n"))
		_, err = r.ReadString('\n')
		require.Error(t, err, "the killed connection must be closed")

		err = s.ClientKill(ctx, "nosuchtype")
		var re *redisserver.RedisError
		require.ErrorAs(t, err, &re)
	})

	t.Run("FlushAll", func(t *testing.T) {
		_, err := s.Do(ctx, "SET", "flushme", "1")
		require.NoError(t, err)
		require.NoError(t, s.FlushAll(ctx))
		n, err := s.Do(ctx, "DBSIZE")
		require.NoError(t, err)
		assert.Equal(t, int64(0), n)
	})
}

// TestPause runs on its own server: the pause blocks every client.
func TestPause(t *testing.T) {
	t.Parallel()
	s := redisserver.StartStandalone(t)
	ctx := testCtx(t)
	const pause = time.Second

	require.Error(t, s.Pause(ctx, -time.Second))
	before := time.Now()
	require.NoError(t, s.Pause(ctx, pause))

	// During the pause a write does not complete; giving up leaves no write.
	probeCtx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	_, err := s.Do(probeCtx, "SET", "paused", "early")
	cancel()
	require.ErrorIs(t, err, context.DeadlineExceeded)

	// A write sent during the pause completes once it ends.
	got, err := s.Do(ctx, "SET", "paused", "late", "NX")
	require.NoError(t, err)
	assert.Equal(t, "OK", got, "the abandoned write must not have run")
	assert.GreaterOrEqual(t, time.Since(before), pause/2, "the write must have waited for the pause")
	got, err = s.Do(ctx, "GET", "paused")
	require.NoError(t, err)
	assert.Equal(t, "late", got)
}

func TestRestart(t *testing.T) {
	t.Parallel()
	s := redisserver.StartStandalone(t)
	ctx := testCtx(t)
	addr := s.Addr

	_, err := s.Do(ctx, "SET", "k", "v")
	require.NoError(t, err)
	sha, err := s.Do(ctx, "SCRIPT", "LOAD", "return 1")
	require.NoError(t, err)

	start := time.Now()
	require.NoError(t, s.Restart(ctx))
	t.Logf("standalone restart: %v", time.Since(start))
	assert.Equal(t, addr, s.Addr)

	got, err := s.Do(ctx, "GET", "k")
	require.NoError(t, err)
	assert.Nil(t, got, "data must be lost")
	got, err = s.Do(ctx, "SCRIPT", "EXISTS", sha.(string))
	require.NoError(t, err)
	assert.Equal(t, []any{int64(0)}, got, "scripts must be lost")
	_, err = s.Do(ctx, "SET", "k", "again")
	require.NoError(t, err)

	require.NoError(t, s.Stop())
	require.NoError(t, s.Stop())
	_, err = s.Do(ctx, "PING")
	require.Error(t, err, "a stopped server does not answer")
	require.NoError(t, s.Restart(ctx))
	got, err = s.Do(ctx, "PING")
	require.NoError(t, err)
	assert.Equal(t, "PONG", got)
}

func TestKill(t *testing.T) {
	t.Parallel()
	s := redisserver.StartStandalone(t)
	ctx := testCtx(t)
	addr := s.Addr

	// A long-lived client: its connection breaks with the crash, and a new
	// one to the same address works once the server is back.
	nc, err := net.Dial("tcp", s.Addr)
	require.NoError(t, err)
	defer nc.Close()
	r := bufio.NewReader(nc)
	_, err = s.Do(ctx, "SET", "k", "v")
	require.NoError(t, err)

	require.NoError(t, s.Kill())
	require.NoError(t, s.Kill(), "killing a stopped server does nothing")
	_, err = s.Do(ctx, "PING")
	require.Error(t, err, "a killed server does not answer")
	_, _ = nc.Write([]byte("PING\r\n"))
	_, err = r.ReadString('\n')
	require.Error(t, err, "the crash closes client connections")

	start := time.Now()
	require.NoError(t, s.Restart(ctx))
	t.Logf("restart after kill: %v", time.Since(start))
	assert.Equal(t, addr, s.Addr)
	nc2, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer nc2.Close()
	_, err = nc2.Write([]byte("GET k\r\n"))
	require.NoError(t, err)
	line, err := bufio.NewReader(nc2).ReadString('\n')
	require.NoError(t, err)
	assert.Equal(t, "$-1\r\n", line, "data is lost")
}

func TestExternal(t *testing.T) {
	s := redisserver.StartStandalone(t)
	t.Setenv(redisserver.EnvRedisAddr, s.Addr)
	ext := redisserver.StartStandalone(t)
	assert.Equal(t, s.Addr, ext.Addr)
	ctx := testCtx(t)
	got, err := ext.Do(ctx, "PING")
	require.NoError(t, err)
	assert.Equal(t, "PONG", got)
	err = ext.Restart(ctx)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "external")
	require.Error(t, ext.Stop())
	require.Error(t, ext.Kill())
}

func TestMissingBinary(t *testing.T) {
	mode := os.Getenv("REDISSERVER_TEST_MISSING")
	if mode == "" {
		t.Skip("run by TestMissingBinaryMessage")
	}
	t.Setenv("PATH", t.TempDir())
	t.Setenv(redisserver.EnvRedisAddr, "")
	t.Setenv(redisserver.EnvClusterAddrs, "")
	if mode == "cluster" {
		redisserver.StartCluster(t)
	} else {
		redisserver.StartStandalone(t)
	}
}

// TestMissingBinaryMessage checks, through child test processes, that a
// missing redis-server fails the test with a message that names the fix.
func TestMissingBinaryMessage(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	require.NoError(t, err)
	ctx := testCtx(t)
	const fix = "redis-server not found in PATH: run scripts/test.sh (installs it with apt-get), or apt-get install redis-server redis-tools, or set "
	for mode, env := range map[string]string{"standalone": redisserver.EnvRedisAddr, "cluster": redisserver.EnvClusterAddrs} {
		cmd := exec.CommandContext(ctx, exe, "-test.run", "^TestMissingBinary$", "-test.v")
		cmd.Env = append(os.Environ(), "REDISSERVER_TEST_MISSING="+mode)
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee, "the child test must fail: %s", out)
		assert.Contains(t, string(out), fix+env, mode)
	}
}

func TestCluster(t *testing.T) {
	t.Parallel()
	start := time.Now()
	c := redisserver.StartCluster(t)
	t.Logf("cluster start: %v", time.Since(start))
	ctx := testCtx(t)
	require.Len(t, c.Nodes, 3)
	require.Len(t, c.Addrs, 3)

	// Keys spread over all three nodes.
	byNode := map[*redisserver.Server][]string{}
	for i := 0; len(byNode) < 3 || i < 30; i++ {
		key := fmt.Sprintf("ck:%d", i)
		n, err := c.NodeFor(ctx, key)
		require.NoError(t, err)
		byNode[n] = append(byNode[n], key)
	}

	t.Run("NodeFor", func(t *testing.T) {
		for n, keys := range byNode {
			for _, k := range keys {
				_, err := n.Do(ctx, "SET", k, "v:"+k)
				require.NoError(t, err)
				got, err := n.Do(ctx, "GET", k)
				require.NoError(t, err)
				assert.Equal(t, "v:"+k, got)
			}
			for _, other := range c.Nodes {
				if other == n {
					continue
				}
				_, err := other.Do(ctx, "GET", keys[0])
				var re *redisserver.RedisError
				require.ErrorAs(t, err, &re)
				assert.True(t, strings.HasPrefix(re.Msg, "MOVED "), re.Msg)
				assert.True(t, strings.HasSuffix(re.Msg, " "+n.Addr), re.Msg)
			}
		}
	})

	t.Run("Keys", func(t *testing.T) {
		var want []string
		for n, keys := range byNode {
			got, err := n.Keys(ctx, "ck:*")
			require.NoError(t, err)
			assert.ElementsMatch(t, keys, got, "a node sees only its own keys")
			want = append(want, keys...)
		}
		got, err := c.Keys(ctx, "ck:*")
		require.NoError(t, err)
		assert.ElementsMatch(t, want, got)
	})

	t.Run("ScriptFlush", func(t *testing.T) {
		var sha string
		for _, n := range c.Nodes {
			v, err := n.Do(ctx, "SCRIPT", "LOAD", "return 2")
			require.NoError(t, err)
			sha = v.(string)
		}
		require.NoError(t, c.ScriptFlush(ctx))
		for _, n := range c.Nodes {
			got, err := n.Do(ctx, "SCRIPT", "EXISTS", sha)
			require.NoError(t, err)
			assert.Equal(t, []any{int64(0)}, got, n.Addr)
		}
	})

	t.Run("ClientKill", func(t *testing.T) {
		require.NoError(t, c.ClientKill(ctx, "normal"))
	})

	t.Run("RestartNode", func(t *testing.T) {
		n := c.Nodes[1]
		key := byNode[n][0]
		start := time.Now()
		require.NoError(t, n.Restart(ctx))
		t.Logf("cluster node restart: %v", time.Since(start))
		got, err := n.Do(ctx, "GET", key)
		require.NoError(t, err, "the node must serve its slots again")
		assert.Nil(t, got, "data must be lost")
		_, err = n.Do(ctx, "SET", key, "again")
		require.NoError(t, err)
		owner, err := c.NodeFor(ctx, key)
		require.NoError(t, err)
		assert.Same(t, n, owner, "the node keeps its slots")
	})

	t.Run("FlushAll", func(t *testing.T) {
		require.NoError(t, c.FlushAll(ctx))
		got, err := c.Keys(ctx, "*")
		require.NoError(t, err)
		assert.Empty(t, got)
	})

	t.Run("External", func(t *testing.T) {
		ext, err := redisserver.ExternalCluster(ctx, c.Addrs[2]+", "+c.Addrs[0])
		require.NoError(t, err)
		assert.Equal(t, []string{c.Addrs[2], c.Addrs[0]}, ext.Addrs)
		require.Len(t, ext.Nodes, 3)
		n, err := ext.NodeFor(ctx, "ext")
		require.NoError(t, err)
		_, err = n.Do(ctx, "SET", "ext", "1")
		require.NoError(t, err)
		require.Error(t, n.Restart(ctx))

		_, err = redisserver.ExternalClusterWithReplicas(ctx, c.Addrs[0])
		require.Error(t, err)
		assert.Contains(t, err.Error(), "has no healthy replica")
		_, err = ext.Failover(ctx, ext.Nodes[0])
		require.ErrorContains(t, err, "no replicas")
	})
}
