package redisserver_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/scriptlock/scriptlock/internal/redisserver"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestClusterWithReplicas shares one cluster of three masters and three
// replicas across subtests that run in order, as each changes the topology.
func TestClusterWithReplicas(t *testing.T) {
	t.Parallel()
	start := time.Now()
	c := redisserver.StartClusterWithReplicas(t)
	t.Logf("cluster with replicas start: %v", time.Since(start))
	ctx := testCtx(t)
	require.Len(t, c.Nodes, 3)
	require.Len(t, c.Replicas, 3)
	require.Len(t, c.Addrs, 6)

	t.Run("Topology", func(t *testing.T) {
		for i, m := range c.Masters() {
			r, err := c.ReplicaOf(m)
			require.NoError(t, err)
			assert.Same(t, c.Replicas[i], r)
			assert.Equal(t, "master", role(ctx, t, m))
			assert.Equal(t, "slave", role(ctx, t, r))
		}
		_, err := c.ReplicaOf(c.Replicas[0])
		require.Error(t, err, "a replica has no replica")
		for _, s := range append(c.Masters(), c.Replicas...) {
			v, err := s.Do(ctx, "CLUSTER", "SLOTS")
			require.NoError(t, err)
			for _, e := range v.([]any) {
				assert.Len(t, e, 4, "%s: every range lists its master and its replica: %v", s.Addr, e)
			}
		}
	})

	t.Run("External", func(t *testing.T) {
		ext, err := redisserver.ExternalClusterWithReplicas(ctx, c.Addrs[4])
		require.NoError(t, err)
		require.Len(t, ext.Replicas, 3)
		for i, m := range ext.Nodes {
			assert.Equal(t, c.Nodes[i].Addr, m.Addr)
			assert.Equal(t, c.Replicas[i].Addr, ext.Replicas[i].Addr)
		}
		require.Error(t, ext.Nodes[0].Kill())
	})

	t.Run("Failover", func(t *testing.T) {
		const key = "fo:key"
		old, err := c.NodeFor(ctx, key)
		require.NoError(t, err)
		replica, err := c.ReplicaOf(old)
		require.NoError(t, err)
		_, err = old.Do(ctx, "SET", key, "before")
		require.NoError(t, err)

		start := time.Now()
		nm, err := c.Failover(ctx, old)
		require.NoError(t, err)
		t.Logf("failover: %v", time.Since(start))

		assert.Same(t, replica, nm)
		assert.Equal(t, "master", role(ctx, t, nm))
		assert.Equal(t, "slave", role(ctx, t, old))
		assert.Contains(t, c.Masters(), nm)
		assert.NotContains(t, c.Masters(), old)
		r, err := c.ReplicaOf(nm)
		require.NoError(t, err)
		assert.Same(t, old, r, "the old master replicates the new one")

		got, err := nm.Do(ctx, "GET", key)
		require.NoError(t, err)
		assert.Equal(t, "before", got, "a write acknowledged before the failover survives it")
		owner, err := c.NodeFor(ctx, key)
		require.NoError(t, err)
		assert.Same(t, nm, owner)
		assertMoved(t, get(ctx, old, key), nm)
		keys, err := c.Keys(ctx, "fo:*")
		require.NoError(t, err)
		assert.Equal(t, []string{key}, keys)
		require.NoError(t, c.ScriptFlush(ctx))

		// Fail back at once: the vote rule that delays a second failover of
		// the same master does not apply to the other member of the pair.
		// Readers of the topology may run alongside (checked under -race).
		stop := make(chan struct{})
		readers := make(chan error, 1)
		go func() {
			defer close(readers)
			for {
				select {
				case <-stop:
					return
				case <-time.After(5 * time.Millisecond):
				}
				for _, m := range c.Masters() {
					if _, err := c.ReplicaOf(m); err != nil {
						readers <- err
						return
					}
				}
			}
		}()
		start = time.Now()
		back, err := c.Failover(ctx, nm)
		close(stop)
		require.NoError(t, <-readers)
		require.NoError(t, err)
		t.Logf("failover back: %v", time.Since(start))
		assert.Same(t, old, back)
		got, err = old.Do(ctx, "GET", key)
		require.NoError(t, err)
		assert.Equal(t, "before", got)

		_, err = c.Failover(ctx, replica)
		require.Error(t, err, "a replica cannot be failed over")
	})

	t.Run("MigrateSlot", func(t *testing.T) {
		keys := []string{"{mig}a", "{mig}b", "{mig}c"}
		slot, err := c.SlotOf(ctx, keys[0])
		require.NoError(t, err)
		from, err := c.NodeForSlot(ctx, slot)
		require.NoError(t, err)
		for _, k := range keys {
			_, err := from.Do(ctx, "SET", k, "v:"+k, "PX", "600000")
			require.NoError(t, err)
		}
		to, err := c.OtherMaster(ctx, slot)
		require.NoError(t, err)
		require.NotSame(t, from, to)

		start := time.Now()
		require.NoError(t, c.MigrateSlot(ctx, slot, to))
		t.Logf("migrate slot: %v", time.Since(start))

		owner, err := c.NodeFor(ctx, keys[0])
		require.NoError(t, err)
		assert.Same(t, to, owner)
		for _, k := range keys {
			got, err := to.Do(ctx, "GET", k)
			require.NoError(t, err)
			assert.Equal(t, "v:"+k, got)
			ttl, err := to.Do(ctx, "PTTL", k)
			require.NoError(t, err)
			assert.Greater(t, ttl, int64(0), "the key keeps its TTL")
			assertMoved(t, get(ctx, from, k), to)
		}
		got, err := from.Keys(ctx, "{mig}*")
		require.NoError(t, err)
		assert.Empty(t, got)

		require.NoError(t, c.MigrateSlot(ctx, slot, to), "moving a slot to its owner does nothing")
		require.Error(t, c.MigrateSlot(ctx, slot, c.Replicas[0]), "a replica cannot take slots")
		require.Error(t, c.MigrateSlot(ctx, clusterSlots, to))
	})

	t.Run("MigrateSlotSlowly", func(t *testing.T) {
		const present, missing = "{slow}here", "{slow}new"
		slot, from, to := slotMove(ctx, t, c, present)

		done := make(chan error, 1)
		start := time.Now()
		go func() { done <- c.MigrateSlotSlowly(ctx, slot, to, 300*time.Millisecond) }()
		var asked, servedDuring atomic.Bool
		for finished := false; !finished; {
			select {
			case err := <-done:
				require.NoError(t, err)
				finished = true
			case <-time.After(5 * time.Millisecond):
				_, err := from.Do(ctx, "GET", missing)
				if err != nil && strings.HasPrefix(err.Error(), "ASK ") {
					assert.True(t, strings.HasSuffix(err.Error(), " "+to.Addr), err.Error())
					asked.Store(true)
				}
				if got, err := from.Do(ctx, "GET", present); err == nil && got == "1" && asked.Load() {
					servedDuring.Store(true)
				}
			}
		}
		t.Logf("migrate slot slowly (2 x 300ms pauses): %v", time.Since(start))
		assert.True(t, asked.Load(), "the source must answer ASK for a missing key during the move")
		assert.True(t, servedDuring.Load(), "the source serves keys it still holds during the move")
		assertMoved(t, get(ctx, from, present), to)
		got, err := to.Do(ctx, "GET", present)
		require.NoError(t, err)
		assert.Equal(t, "1", got)
	})

	t.Run("ACL", func(t *testing.T) {
		require.NoError(t, c.CreateACLUser(ctx, "locker", "pw", "~acl:*", "+get", "+set"))
		owner, err := c.NodeFor(ctx, "acl:k")
		require.NoError(t, err)
		_, err = owner.DoAs(ctx, "locker", "pw", "SET", "acl:k", "1")
		require.NoError(t, err)
		r, err := c.ReplicaOf(owner)
		require.NoError(t, err)
		// The replica knows the user too: it answers MOVED, not NOPERM.
		_, err = r.DoAs(ctx, "locker", "pw", "GET", "acl:k")
		assertMoved(t, err, owner)
		_, err = owner.DoAs(ctx, "locker", "pw", "DEL", "acl:k")
		assertNoPerm(t, err)
		for _, s := range append(c.Masters(), c.Replicas...) {
			_, err = s.DoAs(ctx, "locker", "wrong", "PING")
			assertWrongPass(t, err)
		}
	})

	t.Run("RestartMaster", func(t *testing.T) {
		const key = "restart:key"
		m, err := c.NodeFor(ctx, key)
		require.NoError(t, err)
		r, err := c.ReplicaOf(m)
		require.NoError(t, err)
		_, err = m.Do(ctx, "SET", key, "1")
		require.NoError(t, err)
		start := time.Now()
		require.NoError(t, m.Restart(ctx))
		t.Logf("restart of a master with a replica: %v", time.Since(start))
		assert.Equal(t, "master", role(ctx, t, m), "a quick restart keeps the master")
		got, err := m.Do(ctx, "GET", key)
		require.NoError(t, err)
		assert.Nil(t, got, "data is lost")
		n, err := m.Do(ctx, "DBSIZE")
		require.NoError(t, err)
		_, err = m.Do(ctx, "WAIT", "1", "5000")
		require.NoError(t, err)
		assertMoved(t, get(ctx, r, key), m)
		keys, err := r.Keys(ctx, "*")
		require.NoError(t, err)
		assert.Len(t, keys, int(n.(int64)), "the replica resynchronised with the emptied master")
	})

	t.Run("KillMaster", func(t *testing.T) {
		const key = "kill:key"
		old, err := c.NodeFor(ctx, key)
		require.NoError(t, err)
		replica, err := c.ReplicaOf(old)
		require.NoError(t, err)
		_, err = old.Do(ctx, "SET", key, "1")
		require.NoError(t, err)
		n, err := old.Do(ctx, "WAIT", "1", "5000")
		require.NoError(t, err)
		require.Equal(t, int64(1), n, "the replica has the key")

		start := time.Now()
		require.NoError(t, old.Kill())
		require.Eventually(t, func() bool { return role(ctx, t, replica) == "master" }, 15*time.Second, 20*time.Millisecond,
			"the replica takes over a killed master")
		t.Logf("takeover after kill: %v", time.Since(start))
		start = time.Now()
		require.NoError(t, old.Restart(ctx))
		t.Logf("restart of the killed master: %v", time.Since(start))
		assert.Equal(t, "slave", role(ctx, t, old), "the restarted master rejoins as replica")
		assert.Contains(t, c.Masters(), replica, "WaitReady records the takeover")
		r, err := c.ReplicaOf(replica)
		require.NoError(t, err)
		assert.Same(t, old, r)
		got, err := replica.Do(ctx, "GET", key)
		require.NoError(t, err)
		assert.Equal(t, "1", got)
	})
}

// clusterSlots is the number of hash slots, one past the last slot.
const clusterSlots = 16384

// role returns s's role from INFO replication: "master" or "slave".
func role(ctx context.Context, t *testing.T, s *redisserver.Server) string {
	t.Helper()
	v, err := s.Do(ctx, "INFO", "replication")
	require.NoError(t, err)
	for _, line := range strings.Split(v.(string), "\r\n") {
		if r, ok := strings.CutPrefix(line, "role:"); ok {
			return r
		}
	}
	t.Fatalf("%s: INFO replication has no role", s.Addr)
	return ""
}

// get returns the error of GET key on s.
func get(ctx context.Context, s *redisserver.Server, key string) error {
	_, err := s.Do(ctx, "GET", key)
	return err
}

// assertMoved checks that err is a MOVED redirection to owner.
func assertMoved(t *testing.T, err error, owner *redisserver.Server) {
	t.Helper()
	var re *redisserver.RedisError
	require.ErrorAs(t, err, &re)
	assert.True(t, strings.HasPrefix(re.Msg, "MOVED "), re.Msg)
	assert.True(t, strings.HasSuffix(re.Msg, " "+owner.Addr), "%s, want owner %s", re.Msg, owner.Addr)
}
