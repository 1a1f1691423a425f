package conformance

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/scriptlock/scriptlock/internal/redisserver"
	"github.com/scriptlock/scriptlock/locker"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ackCases check the optional locker.Acknowledger (a script call and WAIT
// or WAITAOF on one connection) and Options.Ack on top of it. The
// standalone server has no replica; each Cluster master has one.
var ackCases = []testCase{
	{
		name:      "Ack/ScripterAcks",
		needs:     "reads the node's settings (CONFIG GET) and stalls a replica (DEBUG SLEEP)",
		rule:      "EvalShaAck and EvalAck return the script's reply and the wait's count (at least 1 replica on the Cluster, 0 on a server without replicas, and 0 on the Cluster while the key's replica is stalled, so the wait ran on the key's master), ErrNoScript for a missing script, the script's own error as err, and a failed wait (WAITAOF without appendonly, or unknown before Redis 7.2) as Acked.Err.",
		check:     checkAckScripter,
		exclusive: "stalls the key's replica (DEBUG SLEEP), and bounds how soon the wait returns",
	},
	{
		name:  "Ack/Grant",
		rule:  "With Options.Ack (1 replica), Lock, Extend and Unlock work on the Cluster and the grant is on the master's replica as soon as Lock returns (and gone from it once Unlock returns); on a server without replicas TryLock fails with an AckError (ErrNotAcknowledged) and its grant is undone in the background, leaving only the abandoned-call record (:x) and a free lock.",
		check: checkAckGrant,
	},
	{
		name:        "Ack/Moved",
		needs:       "migrates a slot to another master and stalls its replica (DEBUG SLEEP)",
		rule:        "After the key's slot moved to another master behind the client's back, and with that master's replica stalled, EvalShaAck either returns the MOVED (or ASK) error without running the script or runs it on the new master and reports 0 replicas: never a wait answered by the old master; once the replica is back the calls succeed with at least 1.",
		check:       checkAckMoved,
		exclusive:   "migrates a slot to another master and stalls its replica (DEBUG SLEEP)",
		clusterOnly: true,
	},
	{
		name:      "Ack/Fsync",
		needs:     "turns appendonly on (CONFIG SET)",
		rule:      "With appendonly on the key's node (set with CONFIG SET after reading it, and set back to what it was after the case), EvalShaAck with Ack{Fsync: true} (WAITAOF 1 0) reports the node's own fsync (Acked.Local 1) and a lock granted with that Options.Ack succeeds, on servers that have WAITAOF (Redis 7.2+, Valkey); on older servers the wait fails with the server's error and the grant is an AckError.",
		check:     checkAckFsync,
		exclusive: "turns appendonly on (CONFIG SET), which starts an AOF rewrite",
	},
	{
		name:  "Ack/NeedsDriver",
		rule:  "locker.New with Options.Ack fails with ErrInvalidOption over a Scripter that does not implement Acknowledger, and for an Ack out of range (Replicas below 1 without Fsync, negative, Timeout outside [1ms, 1m]); in-range values are accepted.",
		check: checkAckNeedsDriver,
	},
}

// acker returns the driver's Acknowledger, or skips the case when the
// driver has none.
func (e *env) acker() locker.Acknowledger {
	e.t.Helper()
	a, ok := e.s.(locker.Acknowledger)
	if !ok {
		e.notApplicable("driver %s declares no acknowledgement support (its Scripter does not implement locker.Acknowledger)", e.d.driver.Name)
	}
	return a
}

// replicaOf returns the Cluster replica of key's master.
func (e *env) replicaOf(cl *redisserver.Cluster, key string) *redisserver.Server {
	e.t.Helper()
	master, err := cl.NodeFor(e.ctx, key)
	require.NoError(e.t, err, "call: admin NodeFor(%q)", key)
	r, err := cl.ReplicaOf(master)
	require.NoError(e.t, err, "call: admin ReplicaOf(%s)", master.Addr)
	return r
}

// onNode reports whether key exists on s. It scans (SCAN MATCH), which a
// Cluster replica serves without READONLY; key must hold no glob
// characters.
func (e *env) onNode(s *redisserver.Server, key string) bool {
	e.t.Helper()
	ks, err := s.Keys(e.ctx, key)
	require.NoError(e.t, err, "call: admin SCAN MATCH %s on %s", key, s.Addr)
	return slices.Contains(ks, key)
}

// incrSrc is the raw script the Ack rules acknowledge: INCR KEYS[1].
const incrSrc = "return redis.call('INCR', KEYS[1])"

// loadIncr loads incrSrc and returns its SHA-1.
func (e *env) loadIncr() string {
	e.t.Helper()
	sha, err := e.s.ScriptLoad(e.ctx, incrSrc)
	require.NoError(e.t, err, "call: ScriptLoad(INCR)")
	return sha
}

func checkAckScripter(t *testing.T, e *env) {
	a := e.acker()
	cl := e.d.admin.cluster()
	k := e.key("ack")
	sha := e.loadIncr()

	ack := locker.Ack{Replicas: 1, Timeout: 5 * time.Second}
	if cl == nil {
		ack.Timeout = 50 * time.Millisecond // no replica will answer
	}
	wantAcked := func(call string, got locker.Acked) {
		t.Helper()
		assert.NoError(t, got.Err, "call: %s: Acked.Err: got %v, want nil", call, got.Err)
		if cl != nil {
			assert.GreaterOrEqual(t, got.Replicas, int64(1), "call: %s: Acked.Replicas: got %d, want at least 1 (every master has a replica)", call, got.Replicas)
		} else {
			assert.Equal(t, int64(0), got.Replicas, "call: %s: Acked.Replicas: got %d, want 0 (the server has no replica)", call, got.Replicas)
		}
		assert.Equal(t, int64(0), got.Local, "call: %s: Acked.Local: got %d, want 0 (WAIT, not WAITAOF)", call, got.Local)
	}

	call := fmt.Sprintf("EvalShaAck(INCR %s, %+v)", k, ack)
	r, got, err := a.EvalShaAck(e.ctx, sha, []string{k}, nil, ack)
	require.NoError(t, err, "call: %s", call)
	assert.Equal(t, int64(1), r, "call: %s: reply", call)
	wantAcked(call, got)
	if cl != nil {
		assert.True(t, e.onNode(e.replicaOf(cl, k), k), "call: %s: key %q on the master's replica right after the acknowledged call: missing", call, k)
	}

	call = fmt.Sprintf("EvalAck(INCR %s, %+v)", k, ack)
	r, got, err = a.EvalAck(e.ctx, incrSrc, []string{k}, nil, ack)
	require.NoError(t, err, "call: %s", call)
	assert.Equal(t, int64(2), r, "call: %s: reply", call)
	wantAcked(call, got)

	// A missing script, and a script's own error, are err (not Acked.Err).
	missing := fmt.Sprintf("return '%s never loaded'", e.prefix)
	r, _, err = a.EvalShaAck(e.ctx, sha1hex(missing), []string{k}, nil, ack)
	assert.True(t, errors.Is(err, locker.ErrNoScript), "call: EvalShaAck(unknown sha): got (%#v, %v), want an error matching locker.ErrNoScript", r, err)
	_, _, err = a.EvalAck(e.ctx, "return redis.error_reply('BOOM custom failure')", []string{k}, nil, ack)
	if assert.Error(t, err, "call: EvalAck(error_reply): got nil error, want the script's") {
		assert.Contains(t, err.Error(), "BOOM custom failure", "call: EvalAck(error_reply): the server's message must come back")
		assert.False(t, errors.Is(err, locker.ErrNoScript), "call: EvalAck(error_reply): got %v, which matches ErrNoScript", err)
	}

	// WAITAOF needs appendonly (off on the suite's own servers; a server
	// it did not start may have it on) and Redis 7.2: without either the
	// script runs and the wait fails.
	aof := e.appendonly(k)
	fs := locker.Ack{Replicas: 0, Timeout: 50 * time.Millisecond, Fsync: true}
	if aof == "yes" {
		fs.Timeout = 3 * time.Second // appendfsync everysec: up to a second
	}
	call = fmt.Sprintf("EvalShaAck(INCR %s, %+v) with appendonly %q", k, fs, aof)
	r, got, err = a.EvalShaAck(e.ctx, sha, []string{k}, nil, fs)
	require.NoError(t, err, "call: %s: the script's error", call)
	assert.Equal(t, int64(3), r, "call: %s: reply (the script ran)", call)
	switch {
	case aof == "yes" && !unknownCommand(got.Err):
		assert.NoError(t, got.Err, "call: %s: Acked.Err: got %v, want nil (appendonly is on and the server has WAITAOF)", call, got.Err)
		assert.Equal(t, int64(1), got.Local, "call: %s: Acked.Local (the node's own fsync)", call)
	case aof == "":
		t.Logf("%s: the server refuses CONFIG GET appendonly, so either outcome of the wait is right; got %+v", call, got)
	default:
		assert.Error(t, got.Err, "call: %s: Acked.Err: got nil (Acked %+v), want the server's refusal of WAITAOF", call, got)
		t.Logf("%s: the wait failed with: %v", call, got.Err)
	}

	ctx, cancel := context.WithCancel(e.ctx)
	cancel()
	_, _, err = a.EvalShaAck(ctx, sha, []string{k}, nil, ack)
	assert.Error(t, err, "call: EvalShaAck with a cancelled ctx: got nil error, want one")

	if cl != nil {
		if err := e.debugRefusal(); err != nil {
			e.notApplicable("in part: every check above passed, but the stalled-replica check needs DEBUG SLEEP, which the server refuses: %q", err.Error())
		}
		checkAckStalledReplica(t, e, a, sha, k)
	}
}

// appendonly returns the appendonly setting of key's node ("yes" or
// "no"), or "" when the server refuses CONFIG GET.
func (e *env) appendonly(key string) string {
	e.t.Helper()
	node, err := e.d.admin.Node(e.ctx, key)
	require.NoError(e.t, err, "call: admin node of %q", key)
	v, refused := e.configGet(e.ctx, node, "appendonly")
	if refused != nil {
		e.t.Logf("call: admin CONFIG GET appendonly on %s: refused: %v", node.Addr, refused)
		return ""
	}
	return v
}

// checkAckStalledReplica stalls the replica of k's master (DEBUG SLEEP)
// and requires that EvalShaAck reports 0 replicas: a wait sent to another
// master counts that master's (awake) replica, and one sent on a
// connection that has written nothing returns at once with every replica
// (a connection that ran any command since the write, on Redis 7.0, waits
// for that write too: this cannot tell such a connection apart).
func checkAckStalledReplica(t *testing.T, e *env, a locker.Acknowledger, sha, k string) {
	replica := e.replicaOf(e.d.admin.cluster(), k)
	for try, want := 1, int64(4); ; try, want = try+1, want+1 {
		start := time.Now()
		began := e.stall(replica)
		ack := locker.Ack{Replicas: 1, Timeout: 100 * time.Millisecond}
		call := fmt.Sprintf("EvalShaAck(INCR %s, %+v) while the key's replica sleeps", k, ack)
		sent := time.Now()
		r, got, err := a.EvalShaAck(e.ctx, sha, []string{k}, nil, ack)
		require.NoError(t, err, "call: %s", call)
		assert.Equal(t, want, r, "call: %s: reply", call)
		if !e.duringStall(t, try, call, start, sent, time.Now(), began) {
			continue
		}
		assert.NoError(t, got.Err, "call: %s: Acked.Err: got %v, want nil (WAIT times out with a count)", call, got.Err)
		assert.Equal(t, int64(0), got.Replicas, "call: %s: Acked.Replicas: got %d, want 0 (the only replica is asleep)", call, got.Replicas)
		return
	}
}

// duringStall reports whether a call sent at sent and returned at
// returned, after a stall started at start (began: see stall), ran while
// the server slept: it returned within stallLimit of start, and the sleep
// had begun when it was sent.
// A call that did not proves nothing, and the caller tries again; after
// three tries the machine ran too late for the rule (see timely).
func (e *env) duringStall(t *testing.T, try int, call string, start, sent, returned time.Time, began func() time.Time) bool {
	t.Helper()
	took := returned.Sub(start)
	b := began()
	if took <= stallLimit && !b.After(sent) {
		return true
	}
	if try >= 3 {
		e.tooLate(t, fmt.Sprintf("call: %s: three tries each ran outside the server's sleep (the last returned %v into a %ss stall; the sleep began %v after it was sent)", call, took.Round(time.Millisecond), stallSeconds, b.Sub(sent).Round(time.Millisecond)))
	}
	t.Logf("call: %s: ran outside the server's sleep (returned %v into it; the sleep began %v after it was sent): proves nothing, trying again", call, took.Round(time.Millisecond), b.Sub(sent).Round(time.Millisecond))
	return false
}

// stallSeconds is how long stall puts a replica to sleep: well below the
// Cluster's node timeout (2 s), so nothing fails over.
const (
	stallSeconds = "1.5"
	stallFor     = 1500 * time.Millisecond // stallSeconds
)

// stallLimit is how long after a stall began a call's reply still proves
// the replica was asleep when the wait ran.
const stallLimit = 1200 * time.Millisecond

// stall puts s to sleep (DEBUG SLEEP stallSeconds) and returns once s no
// longer answers PING; a cleanup of the case waits for it to wake. It
// skips the case, as not applicable, when the server refuses DEBUG (a
// server the suite did not start may). When no PING saw the sleep (s
// still answered 5 s after it was asked to sleep, or the sleep ended
// first) the machine ran too late to set the rule up: timing, and the
// case stops. A PING can also go unanswered on a machine running late:
// began waits for the sleep to end and returns the latest it can have
// begun (its reply's time less the sleep).
func (e *env) stall(s *redisserver.Server) (began func() time.Time) {
	e.t.Helper()
	type reply struct {
		err error
		at  time.Time
	}
	slept := make(chan reply, 1)
	go func() {
		_, err := s.Do(e.ctx, "DEBUG", "SLEEP", stallSeconds)
		slept <- reply{err, time.Now()}
	}()
	var r *reply
	wait := func() reply {
		if r == nil {
			got := <-slept
			r = &got
		}
		return *r
	}
	e.t.Cleanup(func() { wait() })
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
		select {
		case got := <-slept:
			r = &got
			if got.err != nil {
				e.notApplicable("call: admin DEBUG SLEEP %s on %s: %v (the stall this rule needs)", stallSeconds, s.Addr, got.err)
			}
			e.tooLate(e.t, fmt.Sprintf("call: admin DEBUG SLEEP %s on %s: the sleep ended before a PING saw it", stallSeconds, s.Addr))
		default:
		}
		ctx, cancel := context.WithTimeout(e.ctx, 200*time.Millisecond)
		_, err := s.Do(ctx, "PING")
		cancel()
		if err != nil && ctx.Err() != nil {
			return func() time.Time { return wait().at.Add(-stallFor) }
		}
	}
	e.tooLate(e.t, fmt.Sprintf("call: admin DEBUG SLEEP %s on %s: it still answered PING 5 s after it was asked to sleep", stallSeconds, s.Addr))
	return nil
}

func checkAckMoved(t *testing.T, e *env) {
	e.needsOwnedServer("moves a slot to another master and leaves it there")
	a := e.acker()
	cl := e.d.admin.cluster()
	k := e.key("ack-moved")
	sha := e.loadIncr()
	ack := locker.Ack{Replicas: 1, Timeout: 5 * time.Second}
	_, got, err := a.EvalShaAck(e.ctx, sha, []string{k}, nil, ack)
	require.NoError(t, err, "call: EvalShaAck(INCR %s) before the move", k)
	require.NoError(t, got.Err, "call: EvalShaAck(INCR %s) before the move: Acked.Err", k)

	slot, err := cl.SlotOf(e.ctx, k)
	require.NoError(t, err, "call: admin SlotOf(%q)", k)
	to, err := cl.OtherMaster(e.ctx, slot)
	require.NoError(t, err, "call: admin OtherMaster(%d)", slot)
	require.NoError(t, cl.MigrateSlot(e.ctx, slot, to), "call: admin MigrateSlot(%d, %s)", slot, to.Addr)
	replica, err := cl.ReplicaOf(to)
	require.NoError(t, err, "call: admin ReplicaOf(%s)", to.Addr)
	ran := int64(1)
	// A call that returns after the replica may have woken proves
	// nothing: try again (a loaded machine can take that long).
	for try := 1; ; try++ {
		start := time.Now()
		began := e.stall(replica)
		stalled := locker.Ack{Replicas: 1, Timeout: 100 * time.Millisecond}
		call := fmt.Sprintf("EvalShaAck(INCR %s, %+v) after its slot moved to %s, whose replica sleeps", k, stalled, to.Addr)
		sent := time.Now()
		r, got, err := a.EvalShaAck(e.ctx, sha, []string{k}, nil, stalled)
		took := time.Since(start)
		t.Logf("%s: got (%#v, %+v, %v) %v after the stall began", call, r, got, err, took.Round(time.Millisecond))
		if err == nil {
			ran++
			assert.Equal(t, ran, r, "call: %s: reply", call)
		}
		if !e.duringStall(t, try, call, start, sent, time.Now(), began) {
			continue
		}
		if err != nil {
			assert.True(t, strings.Contains(err.Error(), "MOVED") || strings.Contains(err.Error(), "ASK"), "call: %s: got %v, want a MOVED or ASK error (or the call run on the new master)", call, err)
		} else {
			assert.Equal(t, int64(0), got.Replicas, "call: %s: Acked.Replicas: got %d, want 0 (the new master's only replica is asleep: the wait ran elsewhere)", call, got.Replicas)
		}
		break
	}
	// Awake again: the client finds the new master once it has refreshed
	// its slot map (in the background, after a MOVED).
	var r any
	for deadline := time.Now().Add(10 * time.Second); ; {
		r, got, err = a.EvalShaAck(e.ctx, sha, []string{k}, nil, ack)
		if err == nil || time.Now().After(deadline) || !strings.Contains(err.Error(), "MOVED") && !strings.Contains(err.Error(), "ASK") {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	require.NoError(t, err, "call: EvalShaAck(INCR %s) after the move", k)
	ran++
	assert.Equal(t, ran, r, "call: EvalShaAck(INCR %s) after the move: reply", k)
	assert.NoError(t, got.Err, "call: EvalShaAck(INCR %s) after the move: Acked.Err", k)
	assert.GreaterOrEqual(t, got.Replicas, int64(1), "call: EvalShaAck(INCR %s) after the move: Acked.Replicas", k)
}

func checkAckGrant(t *testing.T, e *env) {
	e.acker()
	if cl := e.d.admin.cluster(); cl != nil {
		checkAckGrantCluster(t, e, cl)
		return
	}
	ack := locker.Ack{Replicas: 1, Timeout: 50 * time.Millisecond}
	c := e.client(&locker.Options{Ack: &ack})
	name := "noreplica"
	key := c.Key(name)
	l, err := e.mutex(c, name, 10*time.Second, nil).TryLock(e.ctx)
	assert.Nil(t, l, "call: TryLock with %+v on a server without replicas: got a lease, want none", ack)
	require.Error(t, err, "call: TryLock with %+v on a server without replicas", ack)
	assert.True(t, errors.Is(err, locker.ErrNotAcknowledged), "call: TryLock with %+v on a server without replicas: got %v, want an error matching ErrNotAcknowledged", ack, err)
	var ae *locker.AckError
	if assert.True(t, errors.As(err, &ae), "call: TryLock with %+v: got %v (%T), want a *locker.AckError in its chain", ack, err, err) {
		assert.Equal(t, 1, ae.Want.Replicas, "call: TryLock: AckError.Want.Replicas")
		assert.Equal(t, int64(0), ae.Got.Replicas, "call: TryLock: AckError.Got.Replicas")
		assert.NoError(t, ae.Got.Err, "call: TryLock: AckError.Got.Err (WAIT timed out with a count)")
	}

	// The background clean-up drops the grant: only the abandoned-call
	// record is left.
	var left []string
	cleaned := func() bool {
		left = e.keysLeft()
		return len(left) == 0 || len(left) == 1 && left[0] == key+":x"
	}
	if !e.freeSoon(t, cleaned, 5*time.Second, 10*time.Second, fmt.Sprintf("call: admin KEYS %s* after the unacknowledged TryLock: want no key but the abandoned-call record", e.prefix)) {
		t.Logf("keys left: %v", left)
		return
	}
	l, err = e.mutex(e.client(nil), name, 10*time.Second, nil).TryLock(e.ctx)
	require.NoError(t, err, "call: TryLock %q by a client without Ack after the clean-up: got %v, want a lease (nothing held)", name, err)
	require.NoError(t, l.Unlock(e.ctx), "call: Unlock of the second client's lease")
}

func checkAckGrantCluster(t *testing.T, e *env, cl *redisserver.Cluster) {
	ack := locker.Ack{Replicas: 1, Timeout: 5 * time.Second}
	c := e.client(&locker.Options{Ack: &ack})
	for i := range 3 {
		name := fmt.Sprintf("acked-%d", i)
		key := c.Key(name)
		replica := e.replicaOf(cl, key)
		l, err := e.mutex(c, name, 10*time.Second, nil).Lock(e.ctx)
		require.NoError(t, err, "call: Lock %q with %+v", name, ack)
		assert.True(t, e.onNode(replica, key), "call: Lock %q with %+v: the grant's key %q on the master's replica %s as Lock returns: missing", name, ack, key, replica.Addr)
		before := l.ValidUntil()
		require.NoError(t, l.Extend(e.ctx, 20*time.Second), "call: Extend %q with %+v", name, ack)
		assert.True(t, l.ValidUntil().After(before), "call: Extend %q: ValidUntil %v, was %v: want it moved", name, l.ValidUntil(), before)
		ttl, err := l.TTL(e.ctx)
		require.NoError(t, err, "call: TTL %q", name)
		assert.Greater(t, ttl, 10*time.Second, "call: TTL %q after Extend(20s)", name)
		require.NoError(t, l.Unlock(e.ctx), "call: Unlock %q with %+v", name, ack)
		if master, err := cl.NodeFor(e.ctx, key); assert.NoError(t, err, "call: admin NodeFor(%q)", key) && !e.onNode(master, key) {
			assert.False(t, e.onNode(replica, key), "call: Unlock %q with %+v: key %q still on the replica %s as Unlock returns (gone from the master)", name, ack, key, replica.Addr)
		}
	}
}

func checkAckNeedsDriver(t *testing.T, e *env) {
	e.acker()
	type plain struct{ locker.Scripter } // hides the driver's Acknowledger
	one := &locker.Ack{Replicas: 1}
	_, err := locker.New(plain{e.s}, &locker.Options{Prefix: e.prefix, Ack: one})
	assert.ErrorIs(t, err, locker.ErrInvalidOption, "call: locker.New(a Scripter without Acknowledger, Ack %+v)", *one)

	for _, bad := range []locker.Ack{
		{Replicas: 0},
		{Replicas: -1},
		{Replicas: -1, Fsync: true},
		{Replicas: 1, Timeout: 2 * time.Minute},
		{Replicas: 1, Timeout: -time.Second},
		{Replicas: 1, Timeout: 500 * time.Microsecond},
	} {
		_, err := locker.New(e.s, &locker.Options{Prefix: e.prefix, Ack: &bad})
		assert.ErrorIs(t, err, locker.ErrInvalidOption, "call: locker.New(driver, Ack %+v)", bad)
	}
	for _, good := range []locker.Ack{
		{Replicas: 1},
		{Replicas: 0, Fsync: true},
		{Replicas: 2, Timeout: time.Minute},
		{Replicas: 1, Timeout: time.Millisecond},
	} {
		c, err := locker.New(e.s, &locker.Options{Prefix: e.prefix, Ack: &good})
		if assert.NoError(t, err, "call: locker.New(driver, Ack %+v)", good) {
			assert.NoError(t, c.Close(), "call: Close")
		}
	}
}

func checkAckFsync(t *testing.T, e *env) {
	a := e.acker()
	// A raw key in the slot of the lock "fsync" below (not its hash key).
	k := e.key("fsync") + ":n"
	e.rawMu.Lock()
	e.raw[k] = true
	e.rawMu.Unlock()
	e.setConfig(k, "appendonly", "yes") // set back to what it was after the case
	sha := e.loadIncr()
	fs := locker.Ack{Replicas: 0, Timeout: 3 * time.Second, Fsync: true}
	call := fmt.Sprintf("EvalShaAck(INCR %s, %+v) with appendonly on", k, fs)
	var (
		got locker.Acked
		err error
	)
	// The server refuses WAITAOF while its first AOF rewrite runs.
	for deadline := time.Now().Add(10 * time.Second); ; {
		_, got, err = a.EvalShaAck(e.ctx, sha, []string{k}, nil, fs)
		require.NoError(t, err, "call: %s: the script's error", call)
		if got.Err == nil || unknownCommand(got.Err) || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	c := e.client(&locker.Options{Ack: &fs})
	m := e.mutex(c, "fsync", 10*time.Second, nil)
	if unknownCommand(got.Err) {
		t.Logf("%s: this server has no WAITAOF (%v)", call, got.Err)
		_, err := m.TryLock(e.ctx)
		assert.ErrorIs(t, err, locker.ErrNotAcknowledged, "call: TryLock with Ack{Fsync} on a server without WAITAOF")
		return
	}
	require.NoError(t, got.Err, "call: %s: Acked.Err", call)
	assert.Equal(t, int64(1), got.Local, "call: %s: Acked.Local (the node's own fsync)", call)
	l, err := m.TryLock(e.ctx)
	require.NoError(t, err, "call: TryLock with Options.Ack %+v and appendonly on", fs)
	require.NoError(t, l.Unlock(e.ctx), "call: Unlock with Options.Ack %+v", fs)
}

// unknownCommand reports whether err is the server's refusal of a command
// it does not know (WAITAOF before Redis 7.2).
func unknownCommand(err error) bool {
	return err != nil && strings.Contains(strings.ToLower(err.Error()), "unknown command")
}
