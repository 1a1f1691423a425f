package conformance

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// claimAser is Client.ClaimAs, looked up dynamically so that the suite
// compiles against a core that lacks it (and fails the rule saying so).
type claimAser interface {
	ClaimAs(ctx context.Context, key, token string, ttl time.Duration) (bool, error)
}

// claimAs calls ClaimAs on the client under test.
func (o *outcome) claimAs(ctx context.Context, key, token string) (bool, error) {
	o.t.Helper()
	ca, ok := any(o.c).(claimAser)
	if !ok {
		o.t.Fatalf("call: Client.ClaimAs(ctx, key, token, ttl) (bool, error): *locker.Client has no such method; the protocol requires it")
	}
	return ca.ClaimAs(ctx, key, token, outcomeTTL)
}

// mustClaim requires that c's Claim of key returns want.
func mustClaim(t *testing.T, ctx context.Context, claim func(context.Context) (bool, error), want bool, what string) {
	t.Helper()
	got, err := claim(ctx)
	require.NoError(t, err, "%s: got %v, want %v", what, err, want)
	assert.Equal(t, want, got, "%s: got %v, want %v", what, got, want)
}

func checkOutcomeClaimLost(t *testing.T, e *env) {
	o := newOutcome(t, e)
	claimOn := func(c interface {
		Claim(context.Context, string, time.Duration) (bool, error)
	}, key string) func(context.Context) (bool, error) {
		return func(ctx context.Context) (bool, error) { return c.Claim(ctx, key, outcomeTTL) }
	}

	// Retried by the same Client.
	{
		what := "Claim whose reply is lost, retried by the same Client"
		o.mode(what, func(t *testing.T) {
			a := o.f.lose("claim", -1)
			ok, err := o.c.Claim(e.ctx, "retried", outcomeTTL)
			a.disarm()
			require.Error(t, err, "%s: call: Claim: got %v, want the connection error", what, ok)
			assertInjected(t, err, what+": call: Claim")
			mustClaim(t, e.ctx, claimOn(o.c, "retried"), true, what+": call: the retried Claim (finding 5)") // finding 5
			mustClaim(t, e.ctx, claimOn(o.other, "retried"), false, what+": call: another client's Claim")
		})
	}

	// Not retried: the clean-up frees the key.
	{
		what := "Claim whose reply is lost, not retried"
		o.mode(what, func(t *testing.T) {
			a := o.f.lose("claim", -1)
			ok, err := o.c.Claim(e.ctx, "abandoned", outcomeTTL)
			a.disarm()
			require.Error(t, err, "%s: call: Claim: got %v, want the connection error", what, ok)
			o.awaitClaim(o.other, "abandoned", what)
			mustClaim(t, e.ctx, claimOn(o.c, "abandoned"), false, what+": call: Claim by the first client after another client claimed")
		})
	}

	// ClaimAs: the caller's token; again with the same token reports true.
	{
		what := "ClaimAs whose reply is lost, called again with the same token"
		o.mode(what, func(t *testing.T) {
			a := o.f.lose("claim", -1)
			ok, err := o.claimAs(e.ctx, "claim-as", "token-1")
			a.disarm()
			require.Error(t, err, "%s: call: ClaimAs: got %v, want the connection error", what, ok)
			mustClaim(t, e.ctx, func(ctx context.Context) (bool, error) { return o.claimAs(ctx, "claim-as", "token-1") }, true, what+": call: ClaimAs again (finding 5)") // finding 5
			mustClaim(t, e.ctx, func(ctx context.Context) (bool, error) { return o.claimAs(ctx, "claim-as", "token-1") }, true, what+": call: ClaimAs a third time")
			mustClaim(t, e.ctx, func(ctx context.Context) (bool, error) { return o.claimAs(ctx, "claim-as", "token-2") }, false, what+": call: ClaimAs with another token")
			mustClaim(t, e.ctx, claimOn(o.other, "claim-as"), false, what+": call: another client's Claim")
		})
	}
}

func checkOutcomeClaimLate(t *testing.T, e *env) {
	o := newOutcome(t, e)

	{
		what := "Claim held back past its clean-up"
		o.mode(what, func(t *testing.T) {
			ctx, cancel := context.WithCancel(e.ctx)
			a := o.f.holdBack("claim", 1, cancel)
			since := o.f.answeredOn(o.c.Key("late")+":claim", cleanupScripts...)
			ok, err := o.c.Claim(ctx, "late", outcomeTTL)
			cancel()
			a.disarm()
			require.Error(t, err, "%s: call: Claim: got %v, want the context's error", what, ok)
			assert.ErrorIs(t, err, context.Canceled, "%s: call: Claim: got %v, want context.Canceled", what, err)
			hc := a.next(t, what)
			o.f.awaitCleanup(t, o.c.Key("late")+":claim", since, what)
			r := hc.deliver(t)
			require.NoError(t, r.err, "%s: the held call %s, delivered late", what, hc.call)
			assert.Equal(t, int64(0), r.r, "%s: reply of the late claim call: want 0 (refused: it was abandoned)", what)
			mustClaim(t, e.ctx, func(ctx context.Context) (bool, error) { return o.other.Claim(ctx, "late", outcomeTTL) }, true,
				what+": call: another client's Claim after the late call")
		})
	}

	{
		what := "ClaimAs held back, called again with the same token, then delivered"
		o.mode(what, func(t *testing.T) {
			ctx, cancel := context.WithCancel(e.ctx)
			a := o.f.holdBack("claim", 1, cancel)
			ok, err := o.claimAs(ctx, "late-as", "token-1")
			cancel()
			a.disarm()
			require.Error(t, err, "%s: call: ClaimAs: got %v, want the context's error", what, ok)
			hc := a.next(t, what)
			claimAgain := func(ctx context.Context) (bool, error) { return o.claimAs(ctx, "late-as", "token-1") }
			mustClaim(t, e.ctx, claimAgain, true, what+": call: ClaimAs again")
			r := hc.deliver(t)
			require.NoError(t, r.err, "%s: the held call %s, delivered late", what, hc.call)
			mustClaim(t, e.ctx, claimAgain, true, what+": call: ClaimAs after the late call")
			mustClaim(t, e.ctx, func(ctx context.Context) (bool, error) { return o.other.Claim(ctx, "late-as", outcomeTTL) }, false,
				what+": call: another client's Claim")
		})
	}
}

func checkOutcomeClaimDelayed(t *testing.T, e *env) {
	o := newOutcome(t, e)

	{
		what := "Claim delayed " + slowButAnswered.String()
		o.mode(what, func(t *testing.T) {
			a := o.f.delayBy("claim", 1, slowButAnswered)
			mustClaim(t, e.ctx, func(ctx context.Context) (bool, error) { return o.c.Claim(ctx, "slow", outcomeTTL) }, true, what+": call: Claim")
			a.disarm()
			a.requireOnce(t, "%s: the claim call was delayed", what)
			mustClaim(t, e.ctx, func(ctx context.Context) (bool, error) { return o.other.Claim(ctx, "slow", outcomeTTL) }, false, what+": call: another client's Claim")
		})
	}

	{
		what := "Claim delayed " + slowCall.String() + " past its " + shortCtx.String() + " context, then retried"
		o.mode(what, func(t *testing.T) {
			since, ok := e.cutShort(t, o.f, "claim", "", what+": call: Claim", func(ctx context.Context) error {
				_, err := o.c.Claim(ctx, "slow-ctx", outcomeTTL)
				return err
			})
			if !ok {
				return
			}
			mustClaim(t, e.ctx, func(ctx context.Context) (bool, error) { return o.c.Claim(ctx, "slow-ctx", outcomeTTL) }, true,
				what+": call: Claim retried by the same Client")
			o.f.awaitAnswered(t, since+1, what+": the delayed call (after the retry's)", "claim")
			mustClaim(t, e.ctx, func(ctx context.Context) (bool, error) { return o.other.Claim(ctx, "slow-ctx", outcomeTTL) }, false,
				what+": call: another client's Claim after the delayed call ran")
		})
	}
}
