package conformance

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/scriptlock/scriptlock/internal/redisserver"
	"github.com/scriptlock/scriptlock/locker"
	"github.com/stretchr/testify/require"
)

func init() {
	faultCases = append(faultCases,
		testCase{
			name:        "Fault/ScriptLoadDeadReplica",
			needs:       "kills and restarts a replica of the Cluster",
			rule:        "With one replica of the Cluster down (killed, still in the client's view) and the script cache flushed on every master, every operation (TryLock, TTL, Extend, Unlock, Lock, TryRLock, RWMutex TryLock, Claim) succeeds on its first call: SCRIPT LOAD goes to masters only.",
			check:       checkScriptLoadDeadReplica,
			exclusive:   "kills and restarts a replica of the Cluster",
			clusterOnly: true,
		},
		testCase{
			name:      "Fault/ScriptLoadFails",
			needs:     "empties every client's script cache (SCRIPT FLUSH)",
			rule:      "When SCRIPT LOAD fails after NOSCRIPT (the cache flushed), every operation still succeeds on its first call: the core falls back to EVAL within the call.",
			check:     checkScriptLoadFails,
			exclusive: "SCRIPT FLUSH empties every client's script cache",
		},
	)
}

// failingLoad is a Scripter whose ScriptLoad always fails, as a driver's
// does when a node of the Cluster cannot be reached.
type failingLoad struct{ *countingScripter }

var errLoadRefused = errors.New("conformance: SCRIPT LOAD failed on purpose")

func (f failingLoad) ScriptLoad(context.Context, string) (string, error) {
	f.load.Add(1)
	return "", errLoadRefused
}

// killReplica kills one replica of the Cluster (a crash: SIGKILL) and
// registers a cleanup that restarts it and waits until the Cluster is
// healthy again, so later cases find every node up.
func killReplica(t *testing.T, cl *redisserver.Cluster) *redisserver.Server {
	t.Helper()
	master := cl.Masters()[0]
	r, err := cl.ReplicaOf(master)
	require.NoError(t, err, "call: ReplicaOf(%s)", master.Addr)
	require.NoError(t, r.Kill(), "call: kill replica %s", r.Addr)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		require.NoError(t, r.Restart(ctx), "call: restart replica %s after the case", r.Addr)
	})
	return r
}

func checkScriptLoadDeadReplica(t *testing.T, e *env) {
	e.needsOwnedServer("kills a replica of the Cluster (SIGKILL) and restarts it")
	cl := e.d.admin.cluster()
	cs := &countingScripter{Scripter: e.s}
	c := e.clientOn(cs, nil)
	dead := killReplica(t, cl)
	t.Logf("killed replica %s", dead.Addr)
	// The operations run right after the kill, while the Cluster has not
	// yet agreed that the replica failed: clients still list it.
	runFlushedSteps(t, e, c, cs, "replica "+dead.Addr+" down", func(before string) {
		for _, m := range cl.Masters() {
			require.NoError(t, m.ScriptFlush(e.ctx), "call: admin SCRIPT FLUSH on master %s before %s", m.Addr, before)
		}
	})
}

func checkScriptLoadFails(t *testing.T, e *env) {
	cs := &countingScripter{Scripter: e.s}
	c := e.clientOn(failingLoad{cs}, nil)
	runFlushedSteps(t, e, c, cs, "SCRIPT LOAD failing", func(before string) {
		require.NoError(t, e.d.admin.ScriptFlush(e.ctx), "call: admin SCRIPT FLUSH before %s", before)
	})
}

// runFlushedSteps runs each lock operation once on c, each right after
// flush, and requires every one to succeed on its first call; cs counts
// the calls that reach the driver, and fault says what is wrong.
func runFlushedSteps(t *testing.T, e *env, c *locker.Client, cs *countingScripter, fault string, flush func(before string)) {
	t.Helper()
	m := e.mutex(c, "flushed", 10*time.Second, nil)
	rw := e.rw(c, "flushed-rw", 10*time.Second, nil)
	var l *locker.Lease
	steps := []struct {
		call string
		op   func() error
	}{
		{"TryLock", func() (err error) { l, err = m.TryLock(e.ctx); return err }},
		{"TTL", func() error { _, err := l.TTL(e.ctx); return err }},
		{"Extend(20s)", func() error { return l.Extend(e.ctx, 20*time.Second) }},
		{"Unlock", func() error { return l.Unlock(e.ctx) }},
		{"Lock", func() (err error) { l, err = m.Lock(e.ctx); return err }},
		{"Unlock after Lock", func() error { return l.Unlock(e.ctx) }},
		{"TryRLock", func() (err error) { l, err = rw.TryRLock(e.ctx); return err }},
		{"Unlock of the read lease", func() error { return l.Unlock(e.ctx) }},
		{"RWMutex TryLock", func() (err error) { l, err = rw.TryLock(e.ctx); return err }},
		{"Unlock of the write lease", func() error { return l.Unlock(e.ctx) }},
		{"Claim", func() error {
			first, err := c.Claim(e.ctx, "flushed-claim", time.Second)
			if err == nil && !first {
				return errors.New("call: Claim on a fresh key returned false, want true")
			}
			return err
		}},
	}
	var counts []string
	for _, s := range steps {
		flush(s.call)
		cs.reset()
		err := s.op()
		evalsha, eval, load := cs.counts()
		require.NoError(t, err, "call: %s with %s and the scripts flushed: got error, want success on the first call (EvalSha %d, Eval %d, ScriptLoad %d calls)", s.call, fault, evalsha, eval, load)
		counts = append(counts, fmt.Sprintf("%s %d/%d/%d", s.call, evalsha, eval, load))
	}
	t.Logf("calls (EvalSha/Eval/ScriptLoad) per operation: %s", strings.Join(counts, ", "))
}
