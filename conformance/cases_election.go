package conformance

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/scriptlock/scriptlock/locker"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// electionCases check Election: one leader per name, fenced terms, the
// hand-over on Resign, and Observe.
var electionCases = []testCase{
	{
		name:  "Election/OneLeader",
		rule:  "Six candidates on three Clients campaign for one name, three terms each: never two valid terms at once, each term's number above every earlier one (history checker), and while a term lasts Leader reports its number and value.",
		check: checkElectionOneLeader,
	},
	{
		name:  "Election/ResignHandsOver",
		rule:  "Resign hands leadership to the waiting candidate in its own call: Leader reports that candidate, with a higher term, as soon as Resign returns, and its Campaign returns soon after (timing) with that term.",
		check: checkElectionResignHandsOver,
	},
	{
		name:  "Election/LeaderGone",
		rule:  "When a leader's Client closes without Resign, the waiting candidate leads once the term's TTL has passed, and within the TTL plus a bounded margin (timing).",
		check: checkElectionLeaderGone,
	},
	{
		name:  "Election/TermRefreshed",
		rule:  "A live leader keeps its term past its TTL (kept alive, with its leader record): three TTLs later it is valid, Leader reports it, and another candidate's Campaign is still waiting.",
		check: checkElectionTermRefreshed,
	},
	{
		name:  "Election/ProclaimOwnerChecked",
		rule:  "Proclaim by a deposed leader fails with ErrExpired or ErrHeldByOther and changes nothing: Leader still reports the new leader's term and value.",
		check: checkElectionProclaimOwnerChecked,
	},
	{
		name:  "Election/ObserveSeesEveryTerm",
		rule:  "Observe starts with the current leader, reports leaders in increasing term order (and a term's values in the order proclaimed), and always reports the last one.",
		check: checkElectionObserve,
	},
	{
		name:  "Election/BadInput",
		rule:  "NewElection refuses a bad name or TTL with its typed error; Campaign, Proclaim, Leader and Resign refuse a nil context with ErrNilContext; nothing is left behind in Redis.",
		check: checkElectionBadInput,
	},
	{
		name:      "Election/Outcome/Campaign",
		rule:      "A Campaign whose acquire reply is lost is retried and leads, and once it resigns another candidate leads at once (the lost call's hold was dropped); one held back past its clean-up is refused ({0, 0}) when it reaches Redis; one delayed past its context returns promptly with the context's error. After each failed Campaign, Leader reports no leader and another candidate leads at once.",
		check:     checkElectionCampaignOutcome,
		exclusive: "bounds how soon a call returns after its context ended (300 ms)",
	},
	{
		name:      "Election/Outcome/Proclaim",
		rule:      "A Proclaim whose first reply is lost is retried and applied once; one delayed past its context returns promptly, and the value it carried is no older than what Leader reported before it; one given up on (its call held back) and reaching Redis after a later Proclaim is refused (2) and leaves the later value.",
		check:     checkElectionProclaimOutcome,
		exclusive: "bounds how soon a call returns after its context ended (300 ms)",
	},
	{
		name:      "Election/Outcome/Resign",
		rule:      "A Resign whose reply is lost, or which is given up on (its call held back) or delayed past its context, ends the term at once (Valid false, Context cancelled) and is completed in the background: the next candidate leads soon after (timing), with a higher term; the held-back call, reaching Redis once the next leads, leaves that term and its record alone.",
		check:     checkElectionResignOutcome,
		exclusive: "bounds how soon a call returns after its context ended (300 ms)",
	},
}

// electionTTL is the TTL of the terms of rules not about expiry: long
// enough not to lapse on a slow machine.
const electionTTL = 10 * time.Second

// election returns the election name on c, failing the test on error.
func (e *env) election(c *locker.Client, name string, ttl time.Duration) *locker.Election {
	e.t.Helper()
	el, err := c.NewElection(name, ttl, nil)
	require.NoError(e.t, err, "call: NewElection(%q, %v)", name, ttl)
	return el
}

// campaignAsync runs el.Campaign(ctx, value) in a goroutine.
func campaignAsync(ctx context.Context, el *locker.Election, value string) <-chan termResult {
	ch := make(chan termResult, 1)
	go func() {
		t, err := el.Campaign(ctx, value)
		ch <- termResult{t, err}
	}()
	return ch
}

type termResult struct {
	t   *locker.Term
	err error
}

// campaignShort is el.Campaign(value) for terms of a short ttl: a term
// that lapsed before it was proclaimed, ttl or more after the call began
// (the machine ran too late), is timing and stops the test.
func (e *env) campaignShort(t *testing.T, el *locker.Election, value string, ttl time.Duration) *locker.Term {
	t.Helper()
	start := time.Now()
	term, err := el.Campaign(e.ctx, value)
	if took := time.Since(start); errors.Is(err, locker.ErrExpired) && took >= ttl {
		e.tooLate(t, fmt.Sprintf("call: Campaign(%q): its %v term lapsed before it was proclaimed (%v): %v", value, ttl, took, err))
	}
	require.NoError(t, err, "call: Campaign(%q)", value)
	return term
}

// termHeld is a term as the history checker sees it: Resign ends it.
type termHeld struct {
	el *locker.Election
	t  *locker.Term
}

func (h termHeld) ValidUntil() time.Time            { return h.t.ValidUntil() }
func (h termHeld) Valid() bool                      { return h.t.Valid() }
func (h termHeld) Unlock(ctx context.Context) error { return h.el.Resign(ctx) }

// addTerm records t, granted just now to candidate, in h.
func (h *history) addTerm(el *locker.Election, t *locker.Term, candidate string) *grant {
	g := &grant{l: termHeld{el, t}, name: el.Name(), kind: "mutex", owner: candidate, fence: t.Fence(), start: time.Now()}
	h.mu.Lock()
	h.grants = append(h.grants, g)
	h.mu.Unlock()
	return g
}

func checkElectionOneLeader(t *testing.T, e *env) {
	const clients, perClient, rounds = 3, 2, 3
	var h history
	var wg sync.WaitGroup
	for i := range clients {
		c := e.client(nil)
		for j := range perClient {
			candidate := fmt.Sprintf("c%d.%d", i, j)
			el := e.election(c, "one", electionTTL)
			wg.Go(func() {
				for r := range rounds {
					value := fmt.Sprintf("%s-r%d", candidate, r)
					term, err := el.Campaign(e.ctx, value)
					if !assert.NoError(t, err, "call: %s: Campaign", value) {
						return
					}
					g := h.addTerm(el, term, candidate)
					l, err := el.Leader(e.ctx)
					if assert.NoError(t, err, "call: %s: Leader while leading", value) && term.Valid() {
						assert.Equal(t, term.Fence(), l.Term, "call: %s: Leader().Term while leading", value)
						assert.Equal(t, value, l.Value, "call: %s: Leader().Value while leading", value)
					}
					time.Sleep(2 * time.Millisecond)
					assert.NoError(t, h.unlock(e.ctx, g), "call: %s: Resign", value)
				}
			})
		}
	}
	wg.Wait()
	r := h.check(t)
	assert.Equal(t, clients*perClient*rounds, r.grants, "terms recorded")
	k := e.client(nil).Key("one") + ":leader"
	n, err := e.d.admin.Do(e.ctx, k, "EXISTS", k)
	require.NoError(t, err, "call: admin EXISTS %s", k)
	assert.Equal(t, int64(0), n, "call: admin EXISTS of the leader record after the last Resign: it goes with its term")
}

func checkElectionResignHandsOver(t *testing.T, e *env) {
	a := e.election(e.client(nil), "handover", electionTTL)
	b := e.election(e.client(nil), "handover", electionTTL)
	ta, err := a.Campaign(e.ctx, "a")
	require.NoError(t, err, "call: a.Campaign")
	got := campaignAsync(e.ctx, b, "b")
	e.until(t, func() bool {
		st, err := e.client(nil).Inspect(e.ctx, "handover")
		return err == nil && st.Mutex.Queue == 1
	}, 10*time.Second, "call: Inspect: b queued behind a")
	resigned := time.Now()
	require.NoError(t, a.Resign(e.ctx), "call: a.Resign")
	l, err := a.Leader(e.ctx)
	require.NoError(t, err, "call: Leader as a's Resign returns")
	assert.Equal(t, "b", l.Value, "call: Leader().Value as a's Resign returns")
	assert.Greater(t, l.Term, ta.Fence(), "call: Leader().Term as a's Resign returns: b's, after a's")
	r := arrive(t, e, got, 5*time.Second, "b's Campaign after a's Resign")
	took := time.Since(resigned)
	require.NoError(t, r.err, "call: b.Campaign")
	assert.Equal(t, l.Term, r.t.Fence(), "call: b's term number")
	assert.False(t, ta.Valid(), "call: a's term after Resign: Valid")
	e.within(t, "b's Campaign returning after a's Resign", took, 500*time.Millisecond)
	require.NoError(t, b.Resign(e.ctx), "call: b.Resign")
}

func checkElectionLeaderGone(t *testing.T, e *env) {
	const ttl = time.Second
	gone := e.client(nil)
	a := e.election(gone, "gone", ttl)
	ta := e.campaignShort(t, a, "a", ttl)
	b := e.election(e.client(nil), "gone", ttl)
	got := campaignAsync(e.ctx, b, "b")
	closed := time.Now()
	require.NoError(t, gone.Close(), "call: Close of a's Client, without Resign")
	r := arrive(t, e, got, ttl+10*time.Second, "b's Campaign after a's Client closed")
	took := time.Since(closed)
	require.NoError(t, r.err, "call: b.Campaign")
	assert.Greater(t, r.t.Fence(), ta.Fence(), "call: b's term number after a's")
	// a's term was granted before its Client closed and lived its TTL
	// from its last refresh (at the latest just before the Close).
	assert.False(t, ta.ValidUntil().After(time.Now()), "call: b leads while a's term is still valid (until %v)", ta.ValidUntil())
	e.within(t, "b leading after a's Client closed without Resign", took, ttl+500*time.Millisecond)
	e.unlockShort(t, termHeld{b, r.t}, "call: b.Resign")
}

func checkElectionTermRefreshed(t *testing.T, e *env) {
	const ttl = time.Second
	a := e.election(e.client(nil), "kept", ttl)
	ta := e.campaignShort(t, a, "a", ttl)
	b := e.election(e.client(nil), "kept", ttl)
	ctx, cancel := context.WithCancel(e.ctx)
	defer cancel()
	got := campaignAsync(ctx, b, "b")
	time.Sleep(3 * ttl)
	select {
	case r := <-got:
		// The term lapsed: refreshes came too late (timing) or never.
		e.timely(t, false, fmt.Sprintf("call: b's Campaign returned (err %v) while a lived: a's term lapsed (Err %v)", r.err, ta.Err()))
		return
	default:
	}
	if !e.timely(t, ta.Valid(), fmt.Sprintf("call: a's term three TTLs on: Valid() false (Err %v): a refresh came too late", ta.Err())) {
		return
	}
	l, err := b.Leader(e.ctx)
	require.NoError(t, err, "call: Leader three TTLs on")
	assert.Equal(t, ta.Fence(), l.Term, "call: Leader().Term three TTLs on")
	assert.Equal(t, "a", l.Value, "call: Leader().Value three TTLs on: the record lives as long as the term")
	cancel()
	r := <-got
	assert.Error(t, r.err, "call: b's Campaign, its context ended while a leads")
	e.unlockShort(t, termHeld{a, ta}, "call: a.Resign")
}

func checkElectionProclaimOwnerChecked(t *testing.T, e *env) {
	a := e.election(e.client(nil), "proclaim", electionTTL)
	ta, err := a.Campaign(e.ctx, "a")
	require.NoError(t, err, "call: a.Campaign")
	require.NoError(t, a.Proclaim(e.ctx, "a2"), "call: a.Proclaim while leading")
	// Depose a: its term ends (ForceRelease, as an operator would) and b
	// leads.
	op := e.client(nil)
	st, err := op.Inspect(e.ctx, "proclaim")
	require.NoError(t, err, "call: Inspect")
	_, err = op.ForceRelease(e.ctx, "proclaim", st.ServerTime)
	require.NoError(t, err, "call: ForceRelease")
	b := e.election(e.client(nil), "proclaim", electionTTL)
	tb, err := b.Campaign(e.ctx, "b")
	require.NoError(t, err, "call: b.Campaign")
	assert.Greater(t, tb.Fence(), ta.Fence(), "call: b's term number")
	err = a.Proclaim(e.ctx, "stale")
	require.Error(t, err, "call: Proclaim by the deposed a")
	assert.True(t, errors.Is(err, locker.ErrExpired) || errors.Is(err, locker.ErrHeldByOther), "call: Proclaim by the deposed a: got %v, want ErrExpired or ErrHeldByOther", err)
	l, err := b.Leader(e.ctx)
	require.NoError(t, err, "call: Leader")
	assert.Equal(t, tb.Fence(), l.Term, "call: Leader().Term after the deposed Proclaim")
	assert.Equal(t, "b", l.Value, "call: Leader().Value after the deposed Proclaim")
	require.NoError(t, b.Resign(e.ctx), "call: b.Resign")
}

func checkElectionObserve(t *testing.T, e *env) {
	ctx, cancel := context.WithCancel(e.ctx)
	defer cancel()
	a := e.election(e.client(nil), "watch", electionTTL)
	b := e.election(e.client(nil), "watch", electionTTL)
	// The observer never campaigns: its TTL sets how often it reads the
	// leader besides the pushed changes (every 100 ms), and every read
	// that finds no change must report nothing.
	obs := e.election(e.client(nil), "watch", 300*time.Millisecond)
	ta, err := a.Campaign(e.ctx, "a")
	require.NoError(t, err, "call: a.Campaign")
	ch := obs.Observe(ctx)
	var seen []locker.Leader
	var mu sync.Mutex
	done := make(chan struct{})
	go func() {
		defer close(done)
		for l := range ch {
			mu.Lock()
			seen = append(seen, l)
			mu.Unlock()
		}
	}()
	last := func() locker.Leader {
		mu.Lock()
		defer mu.Unlock()
		if len(seen) == 0 {
			return locker.Leader{}
		}
		return seen[len(seen)-1]
	}
	want := func(term int64, value, what string) {
		t.Helper()
		e.until(t, func() bool { l := last(); return l.Term == term && l.Value == value }, 10*time.Second,
			fmt.Sprintf("call: Observe: %s: the leader of term %d with %q observed", what, term, value))
	}
	want(ta.Fence(), "a", "the current leader first")
	time.Sleep(300 * time.Millisecond) // reads that find the same leader
	require.NoError(t, a.Proclaim(e.ctx, "a2"), "call: a.Proclaim")
	want(ta.Fence(), "a2", "a's Proclaim")
	cur := a
	for i, el := range []*locker.Election{b, a, b} {
		require.NoError(t, cur.Resign(e.ctx), "call: Resign before term %d", i)
		term, err := el.Campaign(e.ctx, fmt.Sprintf("t%d", i))
		require.NoError(t, err, "call: Campaign %d", i)
		want(term.Fence(), fmt.Sprintf("t%d", i), fmt.Sprintf("term %d", i))
		cur = el
	}
	require.NoError(t, b.Resign(e.ctx), "call: the last Resign")
	cancel()
	arrive(t, e, done, 5*time.Second, "Observe's channel closed after its context ended")
	mu.Lock()
	defer mu.Unlock()
	for i := 1; i < len(seen); i++ {
		p, l := seen[i-1], seen[i]
		assert.True(t, l.Term > p.Term || l.Term == p.Term && l.Value != p.Value,
			"call: Observe: leader %d (term %d, %q) after leader %d (term %d, %q): want a later term, or a new value of the same term", i, l.Term, l.Value, i-1, p.Term, p.Value)
	}
}

func checkElectionBadInput(t *testing.T, e *env) {
	c := e.client(nil)
	_, err := c.NewElection("", time.Second, nil)
	assert.ErrorIs(t, err, locker.ErrInvalidName, "call: NewElection(\"\")")
	_, err = c.NewElection("x", 0, nil)
	assert.ErrorIs(t, err, locker.ErrInvalidTTL, "call: NewElection with TTL 0")
	_, err = c.NewElection("x", locker.MaxTTL+time.Second, nil)
	assert.ErrorIs(t, err, locker.ErrInvalidTTL, "call: NewElection with TTL above MaxTTL")
	el := e.election(c, "bad", electionTTL)
	_, err = el.Campaign(nilCtx, "v")
	assert.ErrorIs(t, err, locker.ErrNilContext, "call: Campaign(nil)")
	assert.ErrorIs(t, el.Proclaim(nilCtx, "v"), locker.ErrNilContext, "call: Proclaim(nil)")
	_, err = el.Leader(nilCtx)
	assert.ErrorIs(t, err, locker.ErrNilContext, "call: Leader(nil)")
	assert.ErrorIs(t, el.Resign(nilCtx), locker.ErrNilContext, "call: Resign(nil)")
	assert.ErrorIs(t, el.Proclaim(e.ctx, "v"), locker.ErrExpired, "call: Proclaim without a term")
	_, err = el.Leader(e.ctx)
	assert.ErrorIs(t, err, locker.ErrNoLeader, "call: Leader with no candidate")
	assert.NoError(t, el.Resign(e.ctx), "call: Resign without a term")
	assert.Empty(t, e.lockKeysLeft(), "call: keys under the prefix after the bad inputs")
}

func checkElectionProclaimOutcome(t *testing.T, e *env) {
	f := e.faults()
	el := e.election(e.clientOn(f, nil), "outcome", electionTTL)
	term, err := el.Campaign(e.ctx, "v0")
	require.NoError(t, err, "call: Campaign")
	key := e.client(nil).Key("outcome")

	a := f.lose("elect_proclaim", 1).onKey(key)
	require.NoError(t, el.Proclaim(e.ctx, "v1"), "lost: call: Proclaim whose first reply is lost (retried)")
	a.awaitApplied(t, 1, "lost")
	l, err := el.Leader(e.ctx)
	require.NoError(t, err, "lost: call: Leader")
	assert.Equal(t, "v1", l.Value, "lost: Leader().Value after the retried Proclaim")
	assert.Equal(t, term.Fence(), l.Term, "lost: Leader().Term")

	if !e.pastContext(t, f, "elect_proclaim", key, "delayed: call: Proclaim delayed past its context", func(ctx context.Context) error {
		return el.Proclaim(ctx, "v2")
	}) {
		return
	}
	l, err = el.Leader(e.ctx)
	require.NoError(t, err, "delayed: call: Leader")
	assert.Contains(t, []string{"v1", "v2"}, l.Value, "delayed: Leader().Value after the delayed Proclaim ran")
	require.NoError(t, el.Proclaim(e.ctx, "v3"), "delayed: call: a later Proclaim")
	l, err = el.Leader(e.ctx)
	require.NoError(t, err, "call: Leader")
	assert.Equal(t, "v3", l.Value, "Leader().Value after the later Proclaim")

	ctx, cancel := context.WithCancel(e.ctx)
	a = f.holdBack("elect_proclaim", 1, cancel).onKey(key)
	err = el.Proclaim(ctx, "late")
	cancel()
	require.Error(t, err, "late: call: Proclaim given up on")
	held := a.next(t, "late")
	require.NoError(t, el.Proclaim(e.ctx, "v4"), "late: call: the Proclaim after the one given up on")
	r := held.deliver(t)
	require.NoError(t, r.err, "late: the held Proclaim, delivered after a later one")
	assert.Equal(t, int64(2), r.r, "late: the held Proclaim's reply: want 2 (refused: a later Proclaim was recorded)")
	l, err = el.Leader(e.ctx)
	require.NoError(t, err, "late: call: Leader")
	assert.Equal(t, "v4", l.Value, "late: Leader().Value after the late Proclaim reached Redis")
	require.NoError(t, el.Resign(e.ctx), "call: Resign")
}

func checkElectionResignOutcome(t *testing.T, e *env) {
	f := e.faults()
	key := e.client(nil).Key("resign")
	for _, fate := range []string{"lost", "late", "delayed"} {
		a := e.election(e.clientOn(f, nil), "resign", electionTTL)
		ta, err := a.Campaign(e.ctx, "a")
		require.NoError(t, err, "%s: call: a.Campaign", fate)
		b := e.election(e.client(nil), "resign", electionTTL)
		got := campaignAsync(e.ctx, b, "b")
		var held *heldCall
		switch fate {
		case "lost":
			arm := f.lose("elect_release", 1).onKey(key)
			err = a.Resign(e.ctx)
			arm.awaitApplied(t, 1, "lost: the Resign")
		case "late":
			ctx, cancel := context.WithCancel(e.ctx)
			arm := f.holdBack("elect_release", 1, cancel).onKey(key)
			err = a.Resign(ctx)
			cancel()
			held = arm.next(t, "late")
		case "delayed":
			if !e.pastContext(t, f, "elect_release", key, "delayed: call: a.Resign delayed past its context", a.Resign) {
				return
			}
		}
		assert.False(t, ta.Valid(), "%s: call: a's term after a Resign whose outcome is unknown: Valid (err %v)", fate, err)
		select {
		case <-ta.Context().Done():
		case <-time.After(time.Second):
			t.Errorf("%s: call: a's term's Context not cancelled after its Resign", fate)
		}
		r := arrive(t, e, got, 5*time.Second, fate+": b's Campaign after a's Resign")
		require.NoError(t, r.err, "%s: call: b.Campaign", fate)
		assert.Greater(t, r.t.Fence(), ta.Fence(), "%s: call: b's term number", fate)
		if held != nil {
			rep := held.deliver(t)
			require.NoError(t, rep.err, "late: a's held Resign, delivered once b leads")
			l, err := b.Leader(e.ctx)
			require.NoError(t, err, "late: call: Leader after a's late Resign reached Redis")
			assert.Equal(t, r.t.Fence(), l.Term, "late: Leader().Term after a's late Resign reached Redis: b's term")
		}
		require.NoError(t, b.Resign(e.ctx), "%s: call: b.Resign (b's term untouched by a's Resign)", fate)
	}
}

func checkElectionCampaignOutcome(t *testing.T, e *env) {
	f := e.faults()
	el := e.election(e.clientOn(f, nil), "campaign", outcomeTTL)
	other := e.election(e.client(nil), "campaign", outcomeTTL)
	key := e.client(nil).Key("campaign")

	a := f.lose("elect_acquire", 1).onKey(key)
	ctx, cancel := context.WithTimeout(e.ctx, 10*time.Second)
	term, err := el.Campaign(ctx, "lost")
	cancel()
	a.disarm()
	require.NoError(t, err, "lost: call: Campaign whose first acquire reply is lost (retried)")
	a.requireOnce(t, "lost: the acquire call ran on Redis and its reply was lost")
	l, err := el.Leader(e.ctx)
	require.NoError(t, err, "lost: call: Leader")
	assert.Equal(t, "lost", l.Value, "lost: Leader().Value after the Campaign")
	assert.Equal(t, term.Fence(), l.Term, "lost: Leader().Term after the Campaign")
	require.NoError(t, el.Resign(e.ctx), "lost: call: Resign")
	awaitNoLeader(t, e, other, "lost")

	ctx, cancel = context.WithCancel(e.ctx)
	a = f.holdBack("elect_acquire", 1, cancel).onKey(key)
	since := f.answeredOn(key, cleanupScripts...)
	_, err = el.Campaign(ctx, "late")
	cancel()
	a.disarm()
	require.ErrorIs(t, err, context.Canceled, "late: call: Campaign given up on")
	hc := a.next(t, "late")
	f.awaitCleanupNaming(t, key, since, hc.call.args[1], "late")
	r := hc.deliver(t)
	require.NoError(t, r.err, "late: the held acquire call, delivered after its clean-up")
	assert.Equal(t, []any{int64(0), int64(0)}, r.r, "late: the held acquire call is refused ({0, 0}): it was abandoned")
	awaitNoLeader(t, e, other, "late")

	if !e.pastContext(t, f, "elect_acquire", key, "delayed: call: Campaign", func(ctx context.Context) error {
		_, err := el.Campaign(ctx, "delayed")
		return err
	}) {
		return
	}
	awaitNoLeader(t, e, other, "delayed")
}

// awaitNoLeader checks that a failed or resigned Campaign left nothing
// behind: Leader reports no leader, and another candidate's Campaign
// leads (timing when it cannot within 10 s).
func awaitNoLeader(t *testing.T, e *env, other *locker.Election, what string) {
	t.Helper()
	_, err := other.Leader(e.ctx)
	require.ErrorIs(t, err, locker.ErrNoLeader, "%s: call: Leader", what)
	ctx, cancel := context.WithTimeout(e.ctx, 10*time.Second)
	defer cancel()
	_, err = other.Campaign(ctx, "other")
	if errors.Is(err, context.DeadlineExceeded) {
		e.tooLate(t, fmt.Sprintf("%s: another candidate's Campaign: not leading within 10s", what))
	}
	require.NoError(t, err, "%s: call: another candidate's Campaign", what)
	require.NoError(t, other.Resign(e.ctx), "%s: call: the other candidate's Resign", what)
}
