package locker_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/scriptlock/scriptlock/internal/syncx"
	"github.com/scriptlock/scriptlock/locker"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// newElection returns the election name on c, failing the test on error.
func newElection(t *testing.T, c *locker.Client, name string, ttl time.Duration) *locker.Election {
	t.Helper()
	e, err := c.NewElection(name, ttl, nil)
	require.NoError(t, err)
	return e
}

func TestElectionCampaignResign(t *testing.T) {
	env := newRedisEnv(t)
	ctx := env.ctx
	a := newElection(t, env.client(nil), "jobs", 10*time.Second)
	b := newElection(t, env.client(nil), "jobs", 10*time.Second)

	_, err := a.Leader(ctx)
	require.ErrorIs(t, err, locker.ErrNoLeader, "before any Campaign")

	ta, err := a.Campaign(ctx, "a")
	require.NoError(t, err)
	assert.Equal(t, "a", ta.Value())
	assert.True(t, ta.Valid())
	again, err := a.Campaign(ctx, "ignored")
	require.NoError(t, err)
	assert.Same(t, ta, again, "Campaign while leading returns the term")

	l, err := b.Leader(ctx)
	require.NoError(t, err)
	assert.Equal(t, "a", l.Value)
	assert.Equal(t, ta.Fence(), l.Term)
	assert.WithinDuration(t, time.Now(), l.Since, 5*time.Second)
	st, err := env.client(nil).Inspect(ctx, "jobs")
	require.NoError(t, err)
	assert.Equal(t, locker.ElectionState{Term: ta.Fence(), Leader: "a", Since: l.Since}, st.Election, "Inspect().Election")

	require.ErrorIs(t, b.Proclaim(ctx, "b"), locker.ErrExpired, "Proclaim of a candidate that does not lead")
	require.NoError(t, a.Proclaim(ctx, "a2"))
	l, err = b.Leader(ctx)
	require.NoError(t, err)
	assert.Equal(t, "a2", l.Value, "after Proclaim")
	assert.Equal(t, ta.Fence(), l.Term, "Proclaim keeps the term")

	got := make(chan *locker.Term, 1)
	go func() {
		tb, err := b.Campaign(ctx, "b")
		assert.NoError(t, err)
		got <- tb
	}()
	select {
	case <-got:
		t.Fatal("b's Campaign returned while a leads")
	case <-time.After(100 * time.Millisecond):
	}
	require.NoError(t, a.Resign(ctx))
	var tb *locker.Term
	select {
	case tb = <-got:
	case <-time.After(5 * time.Second):
		t.Fatal("b's Campaign did not return after a resigned")
	}
	require.NotNil(t, tb)
	assert.Greater(t, tb.Fence(), ta.Fence(), "the next term's number")
	l, err = a.Leader(ctx)
	require.NoError(t, err)
	assert.Equal(t, "b", l.Value)
	assert.Equal(t, tb.Fence(), l.Term)
	require.ErrorIs(t, a.Proclaim(ctx, "a3"), locker.ErrExpired, "Proclaim after Resign")
	l, err = a.Leader(ctx)
	require.NoError(t, err)
	assert.Equal(t, "b", l.Value, "a deposed Proclaim changes nothing")

	require.NoError(t, b.Resign(ctx))
	_, err = a.Leader(ctx)
	require.ErrorIs(t, err, locker.ErrNoLeader, "after the last Resign")
	n, err := env.rdb.Do(ctx, "EXISTS", env.prefix+"{jobs}:leader")
	require.NoError(t, err)
	assert.Equal(t, int64(0), n, "the leader record after the last Resign: it goes with its term")
	require.NoError(t, b.Resign(ctx), "Resign without a term")
}

// TestElectionHandOverRecordsNext checks that the Resign that hands the
// lock to a waiting candidate records it as leader, from the value it left
// when it queued: Leader reports it as soon as Resign returns, and its
// Campaign proclaims nothing.
func TestElectionHandOverRecordsNext(t *testing.T) {
	env := newRedisEnv(t)
	ctx := env.ctx
	var calls syncx.Log[string]
	a := newElection(t, env.client(nil), "next", 10*time.Second)
	b := newElection(t, env.client(func(s locker.Scripter) locker.Scripter { return namedCalls{s, &calls} }), "next", 10*time.Second)
	ta, err := a.Campaign(ctx, "a")
	require.NoError(t, err)
	got := make(chan *locker.Term, 1)
	go func() {
		tb, err := b.Campaign(ctx, "b")
		assert.NoError(t, err)
		got <- tb
	}()
	cand := env.prefix + "{next}:cand"
	require.Eventually(t, func() bool { return len(env.hash(cand)) == 1 }, 5*time.Second, time.Millisecond, "b's value, left as it queued")
	for _, v := range env.hash(cand) {
		assert.True(t, strings.HasSuffix(v, ":b"), "the candidate's entry %q: <expiry>:<value>", v)
	}

	require.NoError(t, a.Resign(ctx))
	l, err := a.Leader(ctx)
	require.NoError(t, err, "Leader as Resign returns")
	assert.Equal(t, "b", l.Value, "Leader as Resign returns")
	assert.Greater(t, l.Term, ta.Fence())
	assert.Empty(t, env.hash(cand), "the candidates' values once the last one leads")
	tb := <-got
	require.NotNil(t, tb)
	assert.Equal(t, l.Term, tb.Fence(), "b's term")
	assert.Equal(t, "b", tb.Value())
	assert.NotContains(t, calls.All(), "elect_proclaim", "b's Campaign: its value was recorded by the hand-over")

	// A lock handed over by a clean-up (no release) has no record of its
	// term yet: Leader and Inspect read the holder's value as a candidate.
	owner := env.hash(env.prefix + "{next}")["owner"]
	env.do("DEL", env.prefix+"{next}:leader")
	env.do("HSET", cand, owner, "1:b as a candidate")
	l, err = a.Leader(ctx)
	require.NoError(t, err)
	assert.Equal(t, locker.Leader{Value: "b as a candidate", Term: tb.Fence(), Since: time.UnixMicro(tb.Fence())}, l, "Leader from the candidate's value")
	st, err := env.client(nil).Inspect(ctx, "next")
	require.NoError(t, err)
	assert.Equal(t, locker.ElectionState{Term: tb.Fence(), Leader: "b as a candidate", Since: l.Since}, st.Election, "Inspect().Election")
	require.NoError(t, b.Proclaim(ctx, "b2"))
	l, err = a.Leader(ctx)
	require.NoError(t, err)
	assert.Equal(t, "b2", l.Value, "Proclaim writes the record")
	require.NoError(t, b.Resign(ctx))
}

// namedCalls is a Scripter that logs the name of each script it runs.
type namedCalls struct {
	locker.Scripter
	log *syncx.Log[string]
}

func (n namedCalls) EvalSha(ctx context.Context, sha string, keys, args []string) (any, error) {
	n.log.Add(locker.ScriptName(sha))
	return n.Scripter.EvalSha(ctx, sha, keys, args)
}

func TestElectionTermRefreshed(t *testing.T) {
	env := newRedisEnv(t)
	ctx := env.ctx
	a := newElection(t, env.client(nil), "refresh", 300*time.Millisecond)
	ta, err := a.Campaign(ctx, "a")
	require.NoError(t, err)
	time.Sleep(time.Second) // three TTLs: the refresher keeps the lock and the record
	require.True(t, ta.Valid(), "term after 3 TTLs: %v", ta.Err())
	l, err := a.Leader(ctx)
	require.NoError(t, err)
	assert.Equal(t, ta.Fence(), l.Term)
	require.NoError(t, a.Resign(ctx))
}

func TestElectionLeaderGone(t *testing.T) {
	env := newRedisEnv(t)
	ctx := env.ctx
	gone := env.client(nil)
	a := newElection(t, gone, "gone", 300*time.Millisecond)
	ta, err := a.Campaign(ctx, "a")
	require.NoError(t, err)
	require.NoError(t, gone.Close()) // no Resign: the term expires
	b := newElection(t, env.client(nil), "gone", 300*time.Millisecond)
	tb, err := b.Campaign(ctx, "b")
	require.NoError(t, err)
	assert.Greater(t, tb.Fence(), ta.Fence())
	l, err := b.Leader(ctx)
	require.NoError(t, err)
	assert.Equal(t, "b", l.Value)
	require.NoError(t, b.Resign(ctx))
}

func TestElectionObserve(t *testing.T) {
	env := newRedisEnv(t)
	ctx, cancel := context.WithCancel(env.ctx)
	defer cancel()
	c := env.client(nil)
	a := newElection(t, c, "watch", 10*time.Second)
	b := newElection(t, env.client(nil), "watch", 10*time.Second)
	obs := newElection(t, env.client(nil), "watch", 300*time.Millisecond) // polls every 100 ms

	ta, err := a.Campaign(ctx, "a")
	require.NoError(t, err)
	ch := obs.Observe(ctx)
	next := func(what string) locker.Leader {
		t.Helper()
		select {
		case l, ok := <-ch:
			require.True(t, ok, "%s: channel closed", what)
			return l
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: nothing observed", what)
			return locker.Leader{}
		}
	}
	l := next("the current leader")
	assert.Equal(t, ta.Fence(), l.Term)
	assert.Equal(t, "a", l.Value)
	require.NoError(t, a.Proclaim(ctx, "a2"))
	l = next("a's Proclaim")
	assert.Equal(t, "a2", l.Value)
	require.NoError(t, a.Resign(ctx))
	tb, err := b.Campaign(ctx, "b")
	require.NoError(t, err)
	l = next("b's term")
	assert.Equal(t, tb.Fence(), l.Term)
	assert.Equal(t, "b", l.Value)
	require.NoError(t, b.Resign(ctx))
	cancel()
	for range ch { // closed once ctx ends
	}
}

func TestElectionBadInput(t *testing.T) {
	c, _ := newClient(t, nil)
	_, err := c.NewElection("", time.Second, nil)
	require.True(t, errors.Is(err, locker.ErrInvalidName), "empty name: %v", err)
	_, err = c.NewElection("x", 0, nil)
	require.ErrorIs(t, err, locker.ErrInvalidTTL)
	var e *locker.Term
	assert.False(t, e.Valid(), "nil Term")
	assert.Equal(t, "", e.Value())
}

func TestElectionEvents(t *testing.T) {
	env := newRedisEnv(t)
	ctx := env.ctx
	var mu sync.Mutex
	var got []string
	c := clientOn(t, plainScripter{env.rdb}, &locker.Options{Prefix: env.prefix, Observer: func(_ context.Context, e locker.Event) {
		if e.Mode == "election" {
			mu.Lock()
			got = append(got, e.Kind.String())
			mu.Unlock()
		}
	}})
	a := newElection(t, c, "events", 10*time.Second)
	_, err := a.Campaign(ctx, "a")
	require.NoError(t, err)
	require.NoError(t, a.Resign(ctx))
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []string{"acquire", "release"}, got, "the events of a term: elected, resigned")
}
