package locker_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

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
