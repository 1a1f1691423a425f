package conformance

import (
	"context"
	"fmt"
	"sync/atomic"
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

	if e.pastContext(t, f, script, key, "delayed past its context: call: an acquire", try) {
		awaitFree("delayed past its context")
	}
}

// pastContext is cutShort, then the wait for the delayed call's answer.
// It reports false when the rule stops.
func (e *env) pastContext(t *testing.T, f *faultScripter, script, key, what string, call func(ctx context.Context) error) bool {
	t.Helper()
	since, ok := e.cutShort(t, f, script, key, what, call)
	if ok {
		f.awaitAnswered(t, since, what+": the delayed call", script)
	}
	return ok
}

// cutShort delays the next call of script (on key; any key when "") by
// slowCall and makes call with a context of shortCtx, which must end it
// promptly (see assertPrompt) with context.DeadlineExceeded; what names
// the call. It returns how many calls of script were answered before, for
// awaitAnswered, and false when the rule stops: call returned late; or it
// succeeded, and this process saw its context end only after the delayed
// call answered (the context's timer ran late: timing, see tooLate; a core
// that waits for a slow call succeeds with the end seen on time, and
// fails); or the delay met no call within the context (timing too).
func (e *env) cutShort(t *testing.T, f *faultScripter, script, key, what string, call func(ctx context.Context) error) (int, bool) {
	t.Helper()
	a := f.delayBy(script, 1, slowCall)
	if key != "" {
		a.onKey(key)
	}
	since := f.answered(script)
	ctx, cancel := context.WithTimeout(e.ctx, shortCtx)
	var seen atomic.Int64 // when this process saw ctx end (unix ns)
	context.AfterFunc(ctx, func() { seen.Store(time.Now().UnixNano()) })
	err := call(ctx)
	returned := time.Now()
	deadline, _ := ctx.Deadline()
	ended := returned
	if ns := seen.Load(); ns != 0 {
		ended = time.Unix(0, ns)
	}
	cancel()
	a.disarm()
	if a.applied() == 0 {
		// The core's context ended before its call met the delay (before
		// it was sent, or before a reload's retry): a machine running late.
		e.tooLate(t, fmt.Sprintf("%s: the delay met no %s call within the %v context (%d made on the key): %v", what, script, shortCtx, a.made(), err))
	}
	if late := ended.Sub(deadline); err == nil && late >= lagLimit {
		e.tooLate(t, fmt.Sprintf("%s: answered: its %v context's end was seen %v after its deadline, after the delayed call's answer", what, shortCtx, late.Round(lagRoundTo)))
	}
	require.ErrorIs(t, err, context.DeadlineExceeded, what)
	return since, e.assertPrompt(t, deadline, returned, what)
}
