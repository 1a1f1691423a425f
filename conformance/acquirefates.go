package conformance

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// acquireFates puts one acquire call of script, made by try (with a
// context derived from e's), through each
// fate of a call whose outcome its caller cannot know, on the lock whose
// first key is key: its reply lost after it ran; held until its caller
// gave up and its clean-up ran, then delivered (Redis must refuse it,
// {0, 0}); delayed past its caller's context (the call returns promptly
// with the context's error). After each, free(what) must report, within
// 10 s, that nothing is held. The Semaphore and Multi rules use it.
func acquireFates(t *testing.T, e *env, f *faultScripter, key, script string, try func(ctx context.Context) error, free func(what string) bool) {
	t.Helper()
	base := e.ctx
	awaitFree := func(what string) {
		t.Helper()
		require.Eventually(t, func() bool { return free(what) }, 10*time.Second, 5*time.Millisecond, "%s: everything the call may have taken is free again", what)
	}

	since := f.answeredOn(key, cleanupScripts...)
	a := f.lose(script, 1).onKey(key)
	require.Error(t, try(base), "lost: call: an acquire whose reply was lost")
	a.awaitApplied(t, 1, "lost")
	f.awaitCleanup(t, key, since, "lost")
	awaitFree("lost")

	since = f.answeredOn(key, cleanupScripts...)
	ctx, cancel := context.WithCancel(base)
	a = f.holdBack(script, 1, cancel).onKey(key)
	require.Error(t, try(ctx), "late: call: an acquire given up on")
	held := a.next(t, "late")
	f.awaitCleanup(t, key, since, "late")
	r := held.deliver(t)
	require.NoError(t, r.err, "late: the held call, delivered after the clean-up")
	assert.Equal(t, []any{int64(0), int64(0)}, r.r, "late: the held call is refused ({0, 0}): it was abandoned")
	awaitFree("late")

	a = f.delayBy(script, 1, slowCall).onKey(key)
	since = f.answered(script)
	ctx, cancel = context.WithTimeout(base, shortCtx)
	err := try(ctx)
	returned := time.Now()
	deadline, _ := ctx.Deadline()
	cancel()
	a.disarm()
	require.ErrorIs(t, err, context.DeadlineExceeded, "delayed past its context: call: an acquire")
	if !e.assertPrompt(t, deadline, returned, "delayed past its context: call: an acquire") {
		return
	}
	f.awaitAnswered(t, since, "delayed past its context: the delayed call", script)
	awaitFree("delayed past its context")
}
