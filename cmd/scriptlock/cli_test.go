package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/scriptlock/scriptlock/internal/syncx"
	"github.com/scriptlock/scriptlock/locker"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCLI(t *testing.T) {
	deployments(t, func(t *testing.T, d *deployment) {
		t.Run("inspect", func(t *testing.T) { testInspect(t, d) })
		t.Run("inspect-starving", func(t *testing.T) { testInspectStarving(t, d) })
		t.Run("list", func(t *testing.T) { testList(t, d) })
		t.Run("watch", func(t *testing.T) { testWatch(t, d) })
		t.Run("release", func(t *testing.T) { testRelease(t, d) })
		t.Run("flags-order", func(t *testing.T) { testFlagsOrder(t, d) })
		t.Run("semaphore", func(t *testing.T) { testSemaphore(t, d) })
		t.Run("leader", func(t *testing.T) { testLeader(t, d) })
	})
}

// testFlagsOrder runs the same commands with the connection flags after
// the command, before it, and split around it: each order reaches the same
// deployment and prints the same state.
func testFlagsOrder(t *testing.T, d *deployment) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const name = "flags-order"
	l, err := d.mutex(t, name, 30*time.Second, nil).TryLock(ctx)
	require.NoError(t, err)
	defer func() { require.NoError(t, l.Unlock(ctx)) }()

	conn, rest := d.flags[:2], d.flags[2:] // --url or --cluster, then --prefix
	orders := map[string]func(cmd string, args ...string) []string{
		"after": func(cmd string, args ...string) []string {
			return slices.Concat([]string{cmd}, args, d.flags)
		},
		"before": func(cmd string, args ...string) []string {
			return slices.Concat(d.flags, []string{cmd}, args)
		},
		"split": func(cmd string, args ...string) []string {
			return slices.Concat(conn, []string{cmd}, args, rest)
		},
		"before-json": func(cmd string, args ...string) []string {
			return slices.Concat([]string{"--json"}, d.flags, []string{cmd}, slices.DeleteFunc(slices.Clone(args), func(a string) bool { return a == "--json" }))
		},
	}
	for order, args := range orders {
		r := runCLI(t, args("inspect", "--json", name)...)
		require.Equal(t, exitOK, r.code, "%s: %s", order, r.stderr)
		ss := decodeStates(t, r.stdout)
		require.Len(t, ss, 1, order)
		assert.True(t, ss[0].Mutex.Held, "%s: %q held", order, name)
		assert.Equal(t, l.Fence(), ss[0].Mutex.Fence, "%s: the fence of the lock on this deployment", order)

		r = runCLI(t, args("list", "--json")...)
		require.Equal(t, exitOK, r.code, "%s: %s", order, r.stderr)
		var names []string
		for _, s := range decodeStates(t, r.stdout) {
			names = append(names, s.Name)
		}
		assert.Equal(t, []string{name}, names, "%s: list under the deployment's prefix", order)
	}
}

func (d *deployment) mutex(t *testing.T, name string, ttl time.Duration, opts *locker.MutexOptions) *locker.Mutex {
	t.Helper()
	m, err := d.locks.NewMutex(name, ttl, opts)
	require.NoError(t, err)
	return m
}

// lockAsync runs m.Lock in a goroutine; the channel gets the lease.
func lockAsync(t *testing.T, ctx context.Context, m *locker.Mutex) <-chan *locker.Lease {
	ch := make(chan *locker.Lease, 1)
	go func() {
		l, err := m.Lock(ctx)
		if err != nil {
			t.Errorf("waiter's Lock: %v", err)
		}
		ch <- l
	}()
	return ch
}

// awaitQueue waits until n FIFO waiters are queued on name.
func (d *deployment) awaitQueue(t *testing.T, name string, n int) {
	t.Helper()
	require.Eventually(t, func() bool {
		st, err := d.locks.Inspect(context.Background(), name)
		return err == nil && st.Mutex.Queue == n
	}, 10*time.Second, 5*time.Millisecond, "%d waiters queued on %q", n, name)
}

// decodeStates parses the JSON array that inspect and list print.
func decodeStates(t *testing.T, out string) []stateJSON {
	t.Helper()
	var ss []stateJSON
	require.NoError(t, json.Unmarshal([]byte(out), &ss), "stdout is a JSON array of states: %s", out)
	return ss
}

// testInspectStarving checks that inspect shows a default-mode waiter
// that waited past its starvation threshold, in text and JSON.
func testInspectStarving(t *testing.T, d *deployment) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const name = "starving:{7}"
	holder, err := d.mutex(t, name, 30*time.Second, nil).TryLock(ctx)
	require.NoError(t, err)
	w := lockAsync(t, ctx, d.mutex(t, name, 30*time.Second, &locker.MutexOptions{StarvationThreshold: 20 * time.Millisecond}))
	require.Eventually(t, func() bool {
		st, err := d.locks.Inspect(ctx, name)
		return err == nil && st.Mutex.Starving == 1
	}, 10*time.Second, 5*time.Millisecond, "a starving waiter on %q", name)

	r := d.cli(t, "inspect", name)
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Contains(t, r.stdout, "starving 1 waiting past their threshold  next ")
	r = d.cli(t, "inspect", "--json", name)
	require.Equal(t, exitOK, r.code, r.stderr)
	ss := decodeStates(t, r.stdout)
	require.Len(t, ss, 1)
	assert.Equal(t, 1, ss[0].Mutex.Starving)
	assert.Len(t, ss[0].Mutex.StarvingHead, locker.FingerprintLen)

	require.NoError(t, holder.Unlock(ctx))
	l := <-w
	require.NotNil(t, l, "the starving waiter's Lock")
	r = d.cli(t, "inspect", "--json", name)
	require.Equal(t, exitOK, r.code, r.stderr)
	ss = decodeStates(t, r.stdout)
	require.Len(t, ss, 1)
	assert.Zero(t, ss[0].Mutex.Starving, "no starving waiter once it holds the lock")
	assert.Empty(t, ss[0].Mutex.StarvingHead)
	require.NoError(t, l.Unlock(ctx))
}

func testInspect(t *testing.T, d *deployment) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const name = "invoice:{42}"
	holder, err := d.mutex(t, name, 30*time.Second, nil).TryLock(ctx)
	require.NoError(t, err)
	fifo := &locker.MutexOptions{FIFO: true}
	w1 := lockAsync(t, ctx, d.mutex(t, name, 30*time.Second, fifo))
	d.awaitQueue(t, name, 1)
	w2 := lockAsync(t, ctx, d.mutex(t, name, 30*time.Second, fifo))
	d.awaitQueue(t, name, 2)

	r := d.cli(t, "inspect", name, "other-free-lock")
	require.Equal(t, exitOK, r.code, r.stderr)
	fp := locker.Fingerprint(holder.Token())
	assert.Contains(t, r.stdout, name+"\n")
	assert.Contains(t, r.stdout, fmt.Sprintf("mutex   held  fence %d  ttl ", holder.Fence()))
	assert.Contains(t, r.stdout, "owner "+fp)
	assert.Contains(t, r.stdout, "queue   2 waiting  head ")
	assert.Contains(t, r.stdout, "other-free-lock\n  mutex   free")
	assert.NotContains(t, r.stdout, holder.Token(), "the owner token is a secret")

	r = d.cli(t, "inspect", "--json", name)
	require.Equal(t, exitOK, r.code, r.stderr)
	ss := decodeStates(t, r.stdout)
	require.Len(t, ss, 1)
	s := ss[0]
	assert.Equal(t, name, s.Name)
	assert.False(t, s.Free)
	assert.True(t, s.Mutex.Held)
	assert.Equal(t, holder.Fence(), s.Mutex.Fence)
	assert.Greater(t, s.Mutex.TTLMS, int64(0))
	assert.LessOrEqual(t, s.Mutex.TTLMS, int64(30000))
	assert.Equal(t, 1, s.Mutex.Holds)
	assert.Equal(t, fp, s.Mutex.Owner)
	assert.Equal(t, 2, s.Mutex.Queue)
	assert.Len(t, s.Mutex.QueueHead, locker.FingerprintLen)
	assert.NotContains(t, r.stdout, holder.Token(), "the owner token is a secret")

	prev := holder
	for _, w := range []<-chan *locker.Lease{w1, w2} {
		require.NoError(t, prev.Unlock(ctx))
		prev = <-w
		require.NotNil(t, prev)
	}
	require.NoError(t, prev.Unlock(ctx))
}

func testList(t *testing.T, d *deployment) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// Enough names to land on every master of the Cluster.
	names := []string{"list-a", "list-b", "list{c}", "list%d", "list e", "list-f", "list-g", "list-h", "list-i"}
	var leases []*locker.Lease
	masters := map[string]bool{}
	for _, n := range names[:len(names)-1] {
		l, err := d.mutex(t, n, 30*time.Second, nil).TryLock(ctx)
		require.NoError(t, err)
		leases = append(leases, l)
		masters[d.master(ctx, d.locks.Key(n))] = true
	}
	rw, err := d.locks.NewRWMutex(names[len(names)-1], 30*time.Second, nil)
	require.NoError(t, err)
	rl, err := rw.TryRLock(ctx)
	require.NoError(t, err)
	leases = append(leases, rl)
	if d.name == "cluster" {
		require.Greater(t, len(masters), 1, "the locks span several masters")
	}
	// A claim marker is not a lock.
	first, err := d.locks.Claim(ctx, "msg-1", time.Minute)
	require.NoError(t, err)
	require.True(t, first)

	r := d.cli(t, "list", "--json")
	require.Equal(t, exitOK, r.code, r.stderr)
	var got []string
	for _, s := range decodeStates(t, r.stdout) {
		got = append(got, s.Name)
		if s.Name == names[len(names)-1] {
			assert.Equal(t, 1, s.RW.Readers, "readers of %q", s.Name)
		} else {
			assert.True(t, s.Mutex.Held, "%q held", s.Name)
		}
	}
	assert.ElementsMatch(t, names, got, "list finds every lock (and no claim)")

	r = d.cli(t, "list")
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.True(t, strings.HasPrefix(r.stdout, "NAME "), "a table with a header")
	for _, n := range names {
		assert.Contains(t, r.stdout, display(n)+" ")
	}
	assert.Contains(t, r.stdout, `"list e"`, "a name with a space is quoted")

	for _, l := range leases {
		require.NoError(t, l.Unlock(ctx))
	}
	r = d.cli(t, "list", "--json")
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Empty(t, decodeStates(t, r.stdout), "no lock held any more")
}

// jsonLines decodes out, one JSON object a line (blank lines skipped).
func jsonLines[T any](t *testing.T, out string) []T {
	var vs []T
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if l == "" {
			continue
		}
		var v T
		require.NoError(t, json.Unmarshal([]byte(l), &v), "a JSON object a line: %q", l)
		vs = append(vs, v)
	}
	return vs
}

func testWatch(t *testing.T, d *deployment) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const name = "watched"
	wctx, stop := context.WithCancel(ctx)
	var out, errOut syncx.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run(wctx, append([]string{"watch", "--json", "--interval", "10ms", name}, d.flags...), &out, &errOut)
	}()
	lines := func() []stateJSON { return jsonLines[stateJSON](t, out.String()) }
	require.Eventually(t, func() bool { return len(lines()) == 1 }, 10*time.Second, 5*time.Millisecond, "the first state is printed")
	assert.True(t, lines()[0].Free)

	l, err := d.mutex(t, name, 30*time.Second, nil).TryLock(ctx)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return len(lines()) == 2 }, 10*time.Second, 5*time.Millisecond, "the lock's grant is printed")
	assert.Equal(t, l.Fence(), lines()[1].Mutex.Fence)
	time.Sleep(50 * time.Millisecond) // several polls: only the TTL changes
	assert.Len(t, lines(), 2, "a state that only aged is not printed again")
	require.NoError(t, l.Unlock(ctx))
	require.Eventually(t, func() bool { return len(lines()) == 3 }, 10*time.Second, 5*time.Millisecond, "the release is printed")
	assert.True(t, lines()[2].Free)

	stop() // SIGINT does the same through main's context
	select {
	case code := <-done:
		assert.Equal(t, exitOK, code, "stderr: %s", errOut.String())
	case <-ctx.Done():
		t.Fatal("watch did not return after its context ended")
	}

	r := d.cli(t, "watch", "--count", "1", name)
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Contains(t, r.stdout, name+"\n  mutex   free")
}

func testRelease(t *testing.T, d *deployment) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const name = "stuck-job"
	holder, err := d.mutex(t, name, 3*time.Second, &locker.MutexOptions{AutoRefresh: true}).TryLock(ctx)
	require.NoError(t, err)
	key := d.locks.Key(name)
	raw := func() string {
		r, err := d.admin(ctx, key, "HGETALL", key)
		require.NoError(t, err)
		return canonicalHash(r)
	}
	before := raw()

	// Without the confirmation flags: refused, nothing changed.
	for _, args := range [][]string{{"release", name}, {"release", "--force", name}, {"release", "--yes-really", name}} {
		r := d.cli(t, args...)
		assert.Equal(t, exitUsage, r.code, "scriptlock %v", args)
		assert.Contains(t, r.stderr, "refused, nothing changed")
		assert.Contains(t, r.stderr, "--force and --yes-really", "the refusal says what to add")
		assert.Contains(t, r.stderr, fmt.Sprintf("fence %d", holder.Fence()), "the refusal shows the current state")
		assert.Empty(t, r.stdout)
	}
	assert.Equal(t, before, raw(), "the lock's hash after refused releases")
	st, err := d.locks.Inspect(ctx, name)
	require.NoError(t, err)
	assert.True(t, st.Mutex.Held)
	assert.Equal(t, holder.Fence(), st.Mutex.Fence)
	_, err = holder.TTL(ctx)
	require.NoError(t, err, "the holder's lease is untouched")
	select {
	case <-holder.Lost():
		t.Fatalf("the holder's lease was lost after a refused release: %v", holder.Err())
	default:
	}

	// A waiter blocked behind the auto-refreshed holder.
	next := lockAsync(t, ctx, d.mutex(t, name, 30*time.Second, nil))

	r := d.cli(t, "release", "--force", "--yes-really", "--json", name)
	require.Equal(t, exitOK, r.code, r.stderr)
	var rel releaseJSON
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rel), "stdout is JSON: %s", r.stdout)
	assert.Equal(t, forcedJSON{MutexHolds: 1}, rel.Released)
	assert.Equal(t, holder.Fence(), rel.Before.Mutex.Fence)

	select {
	case <-holder.Lost():
		if !errors.Is(holder.Err(), locker.ErrExpired) && !errors.Is(holder.Err(), locker.ErrHeldByOther) {
			t.Errorf("holder's Err() = %v, want ErrExpired or ErrHeldByOther", holder.Err())
		}
	case <-ctx.Done():
		t.Fatal("the force-released holder's lease never reported Lost")
	}
	assert.Error(t, holder.Context().Err(), "the lost lease's Context is cancelled")
	var l *locker.Lease
	select {
	case l = <-next:
		require.NotNil(t, l)
	case <-ctx.Done():
		t.Fatal("the waiter never got the lock after release --force")
	}
	assert.Greater(t, l.Fence(), holder.Fence())

	// Text output, and a free lock.
	require.NoError(t, l.Unlock(ctx))
	r = d.cli(t, "release", "--force", "--yes-really", name)
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Contains(t, r.stdout, "nothing to release")
}

// canonicalHash prints an HGETALL reply with its pairs sorted.
func canonicalHash(r any) string {
	a, _ := r.([]any)
	m := map[string]any{}
	for i := 0; i+1 < len(a); i += 2 {
		m[fmt.Sprint(a[i])] = a[i+1]
	}
	return fmt.Sprint(m) // fmt sorts map keys
}

// testSemaphore checks that inspect, list and release --force show and
// release a semaphore's holds, and that list names the other parts of a
// MultiLock as held by the same owner.
func testSemaphore(t *testing.T, d *deployment) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const name = "partner-api"
	s, err := d.locks.NewSemaphore(name, 3, 30*time.Second, nil)
	require.NoError(t, err)
	one, err := s.TryAcquire(ctx, 2)
	require.NoError(t, err)
	ml, err := d.locks.NewMultiLock([]string{"part-a", "part-b"}, 30*time.Second, nil)
	require.NoError(t, err)
	parts, err := ml.TryLock(ctx)
	require.NoError(t, err)
	defer func() { require.NoError(t, parts.Unlock(ctx)) }()

	r := d.cli(t, "inspect", name)
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Contains(t, r.stdout, "  sem     2 of 3 permits held  holds 1  waiting 0\n")
	assert.Contains(t, r.stdout, fmt.Sprintf("holder %s  permits 2  fence %d  ttl ", locker.Fingerprint(one.Token()), one.Fence()))
	assert.NotContains(t, r.stdout, one.Token(), "the owner token is a secret")

	r = d.cli(t, "inspect", "--json", name)
	require.Equal(t, exitOK, r.code, r.stderr)
	ss := decodeStates(t, r.stdout)
	require.Len(t, ss, 1)
	assert.False(t, ss[0].Free, "a held semaphore is not free")
	assert.Equal(t, 3, ss[0].Semaphore.Limit)
	assert.Equal(t, 2, ss[0].Semaphore.Held)
	require.Len(t, ss[0].Semaphore.Holders, 1)
	assert.Equal(t, locker.Fingerprint(one.Token()), ss[0].Semaphore.Holders[0].Owner)

	r = d.cli(t, "list")
	require.Equal(t, exitOK, r.code, r.stderr)
	lines := map[string]string{}
	for _, l := range strings.Split(r.stdout, "\n") {
		if f := strings.Fields(l); len(f) > 0 {
			lines[f[0]] = l
		}
	}
	require.Contains(t, lines, name, "list shows the held semaphore: %s", r.stdout)
	assert.Contains(t, lines[name], " 2/3 ", "list shows the permits held of the limit")
	require.Contains(t, lines, "part-a", r.stdout)
	assert.Contains(t, lines["part-a"], " part-b ", "list names the other part of the MultiLock as held by the same owner")

	r = d.cli(t, "release", "--force", "--yes-really", name)
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Contains(t, r.stdout, name+": semaphore released: 1 hold(s)")
	_, err = one.TTL(ctx)
	assert.ErrorIs(t, err, locker.ErrExpired, "the force-released semaphore lease is gone")
	st, err := d.locks.Inspect(ctx, name)
	require.NoError(t, err)
	assert.True(t, st.Free(), "nothing holds the semaphore after release --force: %+v", st.Semaphore)
}

func testLeader(t *testing.T, d *deployment) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const name = "elected"
	r := d.cli(t, "leader", name)
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Equal(t, name+": no leader\n", r.stdout)

	wctx, stop := context.WithCancel(ctx)
	var out, errOut syncx.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run(wctx, append([]string{"leader", "--watch", "--json", name}, d.flags...), &out, &errOut)
	}()
	lines := func() []leaderJSON { return jsonLines[leaderJSON](t, out.String()) }
	el, err := d.locks.NewElection(name, 30*time.Second, nil)
	require.NoError(t, err)
	term, err := el.Campaign(ctx, "worker-1")
	require.NoError(t, err)
	r = d.cli(t, "leader", name)
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Contains(t, r.stdout, fmt.Sprintf("%s: leader \"worker-1\", term %d, since ", name, term.Fence()))
	r = d.cli(t, "inspect", name)
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Contains(t, r.stdout, fmt.Sprintf("  leader  \"worker-1\"  term %d  since ", term.Fence()), "inspect shows the leader")
	r = d.cli(t, "inspect", "--json", name)
	require.Equal(t, exitOK, r.code, r.stderr)
	ss := decodeStates(t, r.stdout)
	require.Len(t, ss, 1)
	require.NotNil(t, ss[0].Election, "inspect --json: election")
	assert.Equal(t, term.Fence(), ss[0].Election.Term)
	assert.Equal(t, "worker-1", ss[0].Election.Leader)
	require.Eventually(t, func() bool { return len(lines()) >= 1 }, 10*time.Second, 5*time.Millisecond, "--watch prints the leader")
	assert.Equal(t, leaderJSON{Name: name, Term: term.Fence(), Value: "worker-1", Since: lines()[0].Since}, lines()[0])
	require.NoError(t, el.Proclaim(ctx, "worker-1b"))
	require.Eventually(t, func() bool { return len(lines()) >= 2 }, 10*time.Second, 5*time.Millisecond, "--watch prints the Proclaim")
	assert.Equal(t, "worker-1b", lines()[1].Value)
	require.NoError(t, el.Resign(ctx))
	stop()
	select {
	case code := <-done:
		assert.Equal(t, exitOK, code, "stderr: %s", errOut.String())
	case <-ctx.Done():
		t.Fatal("leader --watch did not return after its context ended")
	}
}
