package conformance

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/scriptlock/scriptlock/locker"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// chaosCases inject faults while 8 goroutines take locks in a loop; every
// one ends by running the history checker.
var chaosCases = []testCase{
	{
		name:      "Chaos/ScriptFlush",
		needs:     "empties the script cache of every node every 100 ms (SCRIPT FLUSH)",
		rule:      "With SCRIPT FLUSH on every node every 100 ms, every lock and unlock still succeeds and the history shows no overlap and no fence inversion.",
		check:     checkChaosScriptFlush,
		exclusive: "SCRIPT FLUSH on every node, every 100 ms",
	},
	{
		name:      "Chaos/ClientKill",
		needs:     "kills every client connection of every node (CLIENT KILL)",
		rule:      "With CLIENT KILL TYPE normal on every node every 200 ms, operations succeed or fail cleanly and the history shows no overlap and no fence inversion.",
		check:     checkChaosClientKill,
		exclusive: "CLIENT KILL of every normal connection on every node",
	},
	{
		name:      "Chaos/RWClientKill",
		needs:     "kills every client connection of every node (CLIENT KILL)",
		rule:      "With CLIENT KILL TYPE normal on every node every 200 ms while 6 readers and 2 writers take a read-write lock in a loop, no reader overlaps a writer, writers never overlap, and write fences increase.",
		check:     checkChaosRWClientKill,
		exclusive: "CLIENT KILL of every normal connection on every node",
	},
	{
		name:      "Chaos/PausePastTTL",
		needs:     "pauses every client of the node (CLIENT PAUSE)",
		rule:      "With CLIENT PAUSE longer than the TTL while auto-refreshed locks are held, every holder reports Lost by its validity deadline, and the history shows no overlap.",
		check:     checkChaosPause,
		exclusive: "CLIENT PAUSE stops every client of the node; and every holder must report Lost by its validity deadline (250 ms slack)",
	},
	{
		name:      "Chaos/Restart",
		needs:     "restarts the node without persistence",
		rule:      "When Redis restarts without persistence while auto-refreshed locks are held, every lease reports Lost by its validity deadline, and new holders get larger fences although the lock's state was lost.",
		check:     checkChaosRestart,
		exclusive: "restarts the node without persistence (every key and script is lost); and every holder must report Lost by its validity deadline (250 ms slack)",
	},
}

const chaosRun = 2 * time.Second

func checkChaosScriptFlush(t *testing.T, e *env) {
	w := newWorkload(e, time.Second, nil)
	w.run(8, chaosRun, func(ctx context.Context) {
		every(ctx, 100*time.Millisecond, func() {
			assert.NoError(t, e.d.admin.ScriptFlush(e.ctx), "call: admin SCRIPT FLUSH")
		})
	})
	w.summary(t)
	assert.Zero(t, w.bad.Load(), "call: failed operations under SCRIPT FLUSH (first: %v)", w.errs)
}

func checkChaosClientKill(t *testing.T, e *env) {
	w := newWorkload(e, time.Second, nil)
	w.run(8, chaosRun, func(ctx context.Context) {
		every(ctx, 200*time.Millisecond, func() {
			assert.NoError(t, e.d.admin.ClientKill(e.ctx, "normal"), "call: admin CLIENT KILL TYPE normal")
		})
	})
	w.summary(t)
}

// holdAutoRefreshed takes n auto-refreshed leases on distinct names.
func holdAutoRefreshed(t *testing.T, e *env, c *locker.Client, n int, ttl time.Duration) []*locker.Lease {
	t.Helper()
	var ls []*locker.Lease
	for i := range n {
		m := e.mutex(c, "held-"+strconv.Itoa(i), ttl, autoRefresh)
		l, err := m.TryLock(e.ctx)
		for try := 0; err != nil && try < 3; try++ {
			// A connection killed by an earlier case may fail one call:
			// drivers do not retry.
			time.Sleep(50 * time.Millisecond)
			l, err = m.TryLock(e.ctx)
		}
		require.NoError(t, err, "call: TryLock held-%d", i)
		ls = append(ls, l)
	}
	return ls
}

// lostWatch records when each lease's Lost fires, from now on.
type lostWatch struct {
	ls []*locker.Lease
	at []time.Time
	ok []chan struct{}
}

func watchLost(ls []*locker.Lease) *lostWatch {
	w := &lostWatch{ls: ls, at: make([]time.Time, len(ls)), ok: make([]chan struct{}, len(ls))}
	for i, l := range ls {
		w.ok[i] = make(chan struct{})
		go func() {
			select {
			case <-l.Lost():
				w.at[i] = time.Now()
				close(w.ok[i])
			case <-l.Context().Done(): // unlocked, not lost: stop watching
			}
		}()
	}
	return w
}

// assertByDeadline waits (at most 10s) for every lease's Lost and judges
// it fired no later than the lease's validity deadline plus scheduling
// slack: the lease's timer and the watching goroutine must each be
// scheduled, and with two suite processes at once on 2 cores (compat.sh)
// that took 106 ms once.
func (w *lostWatch) assertByDeadline(t *testing.T, e *env, fault string) bool {
	t.Helper()
	const slack = 250 * time.Millisecond
	for i, l := range w.ls {
		select {
		case <-w.ok[i]:
		case <-time.After(10 * time.Second):
			return e.timely(t, false, fmt.Sprintf("call: lease %d: Lost() after %s: not fired within 10s", i, fault))
		}
		if !e.within(t, fmt.Sprintf("call: lease %d: Lost() after %s, past its validity deadline %v", i, fault, l.ValidUntil().Format("15:04:05.000")), w.at[i].Sub(l.ValidUntil()), slack) {
			return false
		}
	}
	return true
}

func checkChaosPause(t *testing.T, e *env) {
	const ttl = 500 * time.Millisecond
	c := e.client(nil)
	held := holdAutoRefreshed(t, e, c, 4, ttl)
	lost := watchLost(held)
	w := newWorkload(e, ttl, nil)
	w.run(8, chaosRun, func(ctx context.Context) {
		time.Sleep(200 * time.Millisecond)
		names := w.names
		for _, l := range held {
			names = append(names, l.Name())
		}
		for _, name := range names {
			_, err := e.d.admin.Do(e.ctx, c.Key(name), "CLIENT", "PAUSE", strconv.Itoa(int(3*ttl/time.Millisecond)), "WRITE")
			assert.NoError(t, err, "call: admin CLIENT PAUSE 1500 WRITE on %s's node", name)
		}
	})
	if !lost.assertByDeadline(t, e, "CLIENT PAUSE past the TTL") {
		return
	}
	for _, l := range held {
		w.h.add(l, "mutex", 0) // the held leases take part in the exclusion check
	}
	w.summary(t)
}

func checkChaosRestart(t *testing.T, e *env) {
	e.needsOwnedServer("restarts the locks' node without persistence")
	const ttl = time.Second
	c := e.client(nil)
	held := holdAutoRefreshed(t, e, c, 4, ttl)
	before := map[string]int64{}
	for _, l := range held {
		before[l.Name()] = l.Fence()
	}
	lost := watchLost(held)
	for _, l := range held {
		require.NoError(t, e.d.admin.Restart(e.ctx, c.Key(l.Name())), "call: admin restart of %s's node without persistence", l.Name())
	}
	if !lost.assertByDeadline(t, e, "a restart without persistence") {
		return
	}
	for _, l := range held {
		assert.ErrorIs(t, l.Err(), locker.ErrExpired, "call: Err() of a lease lost with the restart")
		n, err := e.mutex(c, l.Name(), ttl, nil).Lock(e.ctx)
		require.NoError(t, err, "call: Lock %s after the restart", l.Name())
		assert.Greater(t, n.Fence(), before[l.Name()], "call: fence of the first grant after the restart (the lock's state was lost; fences rest on the server clock)")
		e.unlockShort(t, n, "call: Unlock "+l.Name())
	}
}

// clusterChaosCases run on the Cluster deployment only.
var clusterChaosCases = []testCase{
	{
		name:        "Chaos/ClusterFailover",
		needs:       "fails a master over to its replica (CLUSTER FAILOVER)",
		rule:        "With CLUSTER FAILOVER moving the locks' master to its replica mid-run, operations recover (scripts reloaded on the new master), the history shows no overlap, and whether a held lock was lost in the switch is recorded.",
		check:       checkChaosFailover,
		exclusive:   "fails a master over to its replica",
		clusterOnly: true,
	},
	{
		name:        "Chaos/Reshard",
		needs:       "migrates a slot to another master (CLUSTER SETSLOT, MIGRATE)",
		rule:        "With the locks' slot migrated to another master mid-run (IMPORTING/MIGRATING, keys moved, slot reassigned), operations follow ASK and MOVED and the history shows no overlap and no fence inversion.",
		check:       checkChaosReshard,
		exclusive:   "migrates a slot to another master",
		clusterOnly: true,
	},
}

func checkChaosFailover(t *testing.T, e *env) {
	e.needsOwnedServer("fails a master over to its replica (CLUSTER FAILOVER) and leaves it so")
	cl := e.d.admin.cluster()
	c := e.client(nil)
	master, err := cl.NodeFor(e.ctx, c.Key("failover"))
	require.NoError(t, err, "call: NodeFor the workload's key")
	// Hold a lease on another name served by the same master.
	var held *locker.Lease
	for i := 0; held == nil && i < 200; i++ {
		name := "held-" + strconv.Itoa(i)
		if n, err := cl.NodeFor(e.ctx, c.Key(name)); err == nil && n == master {
			held, err = e.mutex(c, name, time.Second, autoRefresh).TryLock(e.ctx)
			require.NoError(t, err, "call: TryLock %s", name)
		}
	}
	require.NotNil(t, held, "call: no name among 200 on the workload's master")
	lost := watchLost([]*locker.Lease{held})
	w := newWorkload(e, time.Second, nil)
	w.names = []string{"failover"}
	var switched bool
	w.run(8, chaosRun, func(ctx context.Context) {
		time.Sleep(300 * time.Millisecond)
		_, err := cl.Failover(e.ctx, master)
		switched = assert.NoError(t, err, "call: CLUSTER FAILOVER on the replica of %s", master.Addr)
	})
	require.True(t, switched, "call: the failover must have happened during the run")
	select {
	case <-lost.ok[0]:
		t.Logf("recorded: the held lock was lost in the switch (%v)", held.Err())
	default:
		t.Logf("recorded: the held lock survived the switch (fence %d)", held.Fence())
		require.NoError(t, held.Unlock(e.ctx), "call: Unlock of the held lease after the failover")
	}
	w.h.add(held, "mutex", 0)
	w.summary(t)
}

func checkChaosReshard(t *testing.T, e *env) {
	e.needsOwnedServer("moves a slot to another master and leaves it there")
	cl := e.d.admin.cluster()
	c := e.client(nil)
	w := newWorkload(e, time.Second, nil)
	w.names = []string{"reshard"}
	var moved bool
	w.run(8, chaosRun, func(ctx context.Context) {
		time.Sleep(300 * time.Millisecond)
		slot, err := cl.SlotOf(e.ctx, c.Key("reshard"))
		if !assert.NoError(t, err, "call: CLUSTER KEYSLOT") {
			return
		}
		to, err := cl.OtherMaster(e.ctx, slot)
		if !assert.NoError(t, err, "call: OtherMaster(%d)", slot) {
			return
		}
		err = cl.MigrateSlotSlowly(e.ctx, slot, to, 200*time.Millisecond)
		moved = assert.NoError(t, err, "call: migrate slot %d to %s", slot, to.Addr)
	})
	require.True(t, moved, "call: the slot must have moved during the run")
	w.summary(t)
}

func checkChaosRWClientKill(t *testing.T, e *env) {
	w := newWorkload(e, time.Second, nil)
	w.rw, w.names = true, []string{"chaos-rw"}
	w.run(8, chaosRun, func(ctx context.Context) {
		every(ctx, 200*time.Millisecond, func() {
			assert.NoError(t, e.d.admin.ClientKill(e.ctx, "normal"), "call: admin CLIENT KILL TYPE normal")
		})
	})
	r := w.summary(t)
	kinds := map[string]int{}
	for _, g := range w.h.grants {
		kinds[g.kind]++
	}
	t.Logf("grants by kind: %v", kinds)
	_ = e.timely(t, kinds["read"] > 0, fmt.Sprintf("call: no read grant in the run (of %d)", r.grants)) &&
		e.timely(t, kinds["write"] > 0, fmt.Sprintf("call: no write grant in the run (of %d)", r.grants))
}
