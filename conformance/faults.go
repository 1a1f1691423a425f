package conformance

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/scriptlock/scriptlock/locker"
	"github.com/stretchr/testify/require"
)

// fate is what a faultScripter does to a call it was armed for. Each one
// is a way a real call ends with an outcome its caller cannot know.
type fate int

const (
	// fateLost runs the call on Redis, then returns a connection error as
	// if the connection broke after the command was read: the call took
	// effect, the caller does not know it.
	fateLost fate = iota + 1
	// fateLate does not run the call now: it cancels the caller's context
	// (when the test gave its cancel func) or returns a timeout, and holds
	// the call until the test delivers it (after the caller gave up, after
	// its clean-up, after its later attempts); then it runs on Redis and
	// its reply goes to the test.
	fateLate
	// fateDelayed runs the call on Redis after a pause (or, armed with
	// delayReply, at once, its reply taking the pause on the way back). A
	// caller whose context lasts waits it out and gets the reply; one
	// whose context ends first gets the context's error while the call
	// still runs.
	fateDelayed
	// fateAnswer does not run the call: it answers it with the error reply
	// of a passing state (LOADING, TRYAGAIN, CLUSTERDOWN, MOVED), as a
	// loading server or a Cluster mid-failover or mid-migration does.
	fateAnswer
)

func (f fate) String() string {
	switch f {
	case fateLost:
		return "lost"
	case fateLate:
		return "late"
	case fateDelayed:
		return "delayed"
	case fateAnswer:
		return "answered"
	}
	return "none"
}

// errInjectedEOF and errInjectedTimeout are the connection errors a
// faultScripter returns; both are net.Errors, so the core treats them as
// transient connection failures, and neither carries a Redis error code.
var (
	errInjectedEOF     = &net.OpError{Op: "read", Net: "tcp", Err: io.ErrUnexpectedEOF}
	errInjectedTimeout = &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}
)

// errHeldDropped is the reply of a held call the test never delivered: it
// was never sent (the case ended first).
var errHeldDropped = errors.New("conformance: held call dropped at the end of the case, never sent")

// cleanupScripts are the clean-up calls of the unknown-outcome protocol.
var cleanupScripts = []string{"abandon", "dequeue", "rw_cancel", "unclaim", "sem_cancel"}

// faultScripter wraps the driver's Scripter (no mock: every call that runs,
// runs on Redis) and applies a fate to the calls it is armed for, named by
// script (locker.ScriptName). It counts calls per script and forwards
// Subscribe. Held and delayed calls run in goroutines of its own, ended by
// close at the end of the case.
type faultScripter struct {
	locker.Scripter
	admin admin
	e     *env // the case's, for judging a fault that no call met

	mu      sync.Mutex
	arms    []*faultArm
	calls   map[string]int    // calls the core made, per script
	ran     map[string]int    // calls that reached Redis and returned, per script
	ranOK   map[string]int    // of those, the ones Redis answered without error
	ranOKOn map[string]int    // the same by script and first key (name + "\n" + key)
	lastErr map[string]error  // the last error a call that reached Redis returned, per script
	srcs    map[string]string // the source of each script loaded through f, by SHA1
	// cleanups holds the arguments of the clean-up calls (cleanupScripts)
	// Redis answered, by first key, in the order answered.
	cleanups map[string][][]string
	// entered holds when the last calls entered f (at most maxEntered),
	// for bounds counted from the earliest a call can have run on Redis.
	entered []enteredCall
	// bare strips the payload off every wake-up (see withoutGrants).
	bare    atomic.Bool
	stop    chan struct{} // closed by close
	stopped bool
	bg      sync.WaitGroup
}

// faults returns a faultScripter around the case's Scripter; it is closed
// (held calls dropped, goroutines ended) when the case ends, after the
// clients created later were closed.
func (e *env) faults() *faultScripter {
	f := &faultScripter{
		Scripter: e.s, admin: e.d.admin, e: e,
		calls: map[string]int{}, ran: map[string]int{}, ranOK: map[string]int{}, ranOKOn: map[string]int{},
		lastErr: map[string]error{}, srcs: map[string]string{}, stop: make(chan struct{}),
	}
	e.t.Cleanup(f.close)
	return f
}

// close drops every held call that was not delivered and waits for the
// goroutines of held and delayed calls.
func (f *faultScripter) close() {
	f.mu.Lock()
	if !f.stopped {
		f.stopped = true
		close(f.stop)
	}
	f.mu.Unlock()
	f.bg.Wait()
}

// faultArm applies one fate to the next calls of one script.
type faultArm struct {
	f      *faultScripter
	script string             // the script's name
	key    string             // when set, only calls whose first key is key
	fate   fate               //
	skip   int                // matching calls let through before the fate applies
	left   int                // calls still to apply the fate to; < 0: every call
	cancel context.CancelFunc // late: cancels the caller's context
	delay  time.Duration      // delayed: the pause
	code   string             // answered: the error code
	first  bool               // delayed: run at once, delay the reply
	hits   int                // calls the fate was applied to
	seen   int                // calls of script (on key, when set) the core made since a was armed
	held   chan *heldCall     // late: the held calls, in arrival order
}

// arm arms f for the next n calls (n < 0: all) of script. Each set
// function completes the arm before f can match it: an arm published
// half made (its key or code not yet set) would meet another parallel
// subtest's call.
func (f *faultScripter) arm(script string, ft fate, n int, set ...func(*faultArm)) *faultArm {
	a := &faultArm{f: f, script: script, fate: ft, left: n, held: make(chan *heldCall, 1024)}
	for _, s := range set {
		s(a)
	}
	f.mu.Lock()
	f.arms = append(f.arms, a)
	f.mu.Unlock()
	return a
}

// keyed limits an arm to calls whose first key is key, from its start (see
// arm); onKey does the same to an arm already armed.
func keyed(key string) func(*faultArm) { return func(a *faultArm) { a.key = key } }

// lose makes the next n calls of script run on Redis and lose their reply.
func (f *faultScripter) lose(script string, n int, set ...func(*faultArm)) *faultArm {
	return f.arm(script, fateLost, n, set...)
}

// holdBack holds back the next n calls of script; for each it calls cancel
// when not nil (the caller's context ends) or else returns a timeout.
func (f *faultScripter) holdBack(script string, n int, cancel context.CancelFunc) *faultArm {
	return f.arm(script, fateLate, n, func(a *faultArm) { a.cancel = cancel })
}

// delayBy delays the next n calls of script by d.
func (f *faultScripter) delayBy(script string, n int, d time.Duration) *faultArm {
	return f.arm(script, fateDelayed, n, func(a *faultArm) { a.delay = d })
}

// delayReply runs the next n calls of script on Redis at once and hands
// their replies back after d, as a slow network on the way back does.
func (f *faultScripter) delayReply(script string, n int, d time.Duration) *faultArm {
	return f.arm(script, fateDelayed, n, func(a *faultArm) { a.delay, a.first = d, true })
}

// answer makes the next n calls (n < 0: all) of script fail with the
// error reply code, without running.
func (f *faultScripter) answer(script, code string, n int, set ...func(*faultArm)) *faultArm {
	return f.arm(script, fateAnswer, n, append([]func(*faultArm){func(a *faultArm) { a.code = code }}, set...)...)
}

// onKey restricts a to calls whose first key is key; it returns a.
func (a *faultArm) onKey(key string) *faultArm {
	a.f.mu.Lock()
	a.key = key
	a.f.mu.Unlock()
	return a
}

// after lets the first n matching calls through untouched; it returns a.
func (a *faultArm) after(n int) *faultArm {
	a.f.mu.Lock()
	a.skip = n
	a.f.mu.Unlock()
	return a
}

// disarm stops a from applying to further calls.
func (a *faultArm) disarm() {
	a.f.mu.Lock()
	a.left = 0
	a.f.mu.Unlock()
}

// applied is the number of calls a's fate was applied to so far.
func (a *faultArm) applied() int {
	a.f.mu.Lock()
	defer a.f.mu.Unlock()
	return a.hits
}

// made is the number of calls of a's script (on its key, when it has one)
// the core made since a was armed: parallel subtests' calls on other keys
// do not count.
func (a *faultArm) made() int {
	a.f.mu.Lock()
	defer a.f.mu.Unlock()
	return a.seen
}

// awaitApplied waits until a's fate was applied to n calls. When they do
// not come within 10 s it fails, counting as of then the calls a's fate
// was applied to and the calls of its script the core made since a was
// armed; when the core made none (it runs late, or never tried again), the
// lag decides, as for any timing check (see within), and the test stops.
func (a *faultArm) awaitApplied(t *testing.T, n int, what string) {
	t.Helper()
	if waitFor(func() bool { return a.applied() >= n }, 10*time.Second) {
		return
	}
	a.f.mu.Lock()
	hits, made := a.hits, a.seen
	a.f.mu.Unlock()
	if made == 0 {
		// The core made no such call in 10 s: it runs late (a waiter's
		// wake-up, a refresh), or never; the lag decides (see within).
		a.f.e.timely(t, false, fmt.Sprintf("%s: the core made no %s call within 10s of the %s fate being armed", what, a.script, a.fate))
		t.SkipNow()
	}
	t.Fatalf("%s: want the %s fate applied to %d %s call(s) within 10s: applied to %d; the core made %d %s call(s) since it was armed", what, a.fate, n, a.script, hits, made, a.script)
}

// requireOnce requires a's fate applied to exactly one call (msg and args
// say which). When the core made no such call at all since a was armed
// (on a machine running late, the caller's context can end before it
// sends one), that is timing (see timely), and the rule stops.
func (a *faultArm) requireOnce(t *testing.T, msg string, args ...any) {
	t.Helper()
	if a.applied() == 0 && a.made() == 0 {
		a.f.e.tooLate(t, fmt.Sprintf("%s: the core made no %s call before its context ended", fmt.Sprintf(msg, args...), a.script))
	}
	require.Equal(t, 1, a.applied(), append([]any{msg}, args...)...)
}

// next returns the next call a held back, waiting for it up to 10 s.
func (a *faultArm) next(t *testing.T, what string) *heldCall {
	t.Helper()
	select {
	case h := <-a.held:
		return h
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: no %s call was held back within 10s", what, a.script)
		return nil
	}
}

// nextTimely is next for a call the core makes by itself, in its own time
// (an auto-refresh refresh): a call that does not come within 10 s is a
// timing check that failed, judged by e (see within). On false, the
// caller stops the rule.
func (a *faultArm) nextTimely(t *testing.T, e *env, what string) (*heldCall, bool) {
	t.Helper()
	select {
	case h := <-a.held:
		return h, true
	case <-time.After(10 * time.Second):
		return nil, e.timely(t, false, fmt.Sprintf("%s: no %s call was held back within 10s", what, a.script))
	}
}

// appliedTimely is awaitApplied for calls the core makes by itself (see
// nextTimely).
func (a *faultArm) appliedTimely(t *testing.T, e *env, n int, what string) bool {
	t.Helper()
	ok := waitFor(func() bool { return a.applied() >= n }, 10*time.Second)
	return e.timely(t, ok, fmt.Sprintf("%s: the %s fate applied to %d of the %d %s call(s) wanted within 10s", what, a.fate, a.applied(), n, a.script))
}

// heldCalls returns the calls a held back so far, without waiting.
func (a *faultArm) heldCalls() []*heldCall {
	var hs []*heldCall
	for {
		select {
		case h := <-a.held:
			hs = append(hs, h)
		default:
			return hs
		}
	}
}

// scriptCall is one script call as the core made it.
type scriptCall struct {
	name       string
	sha, src   string // src set: an Eval
	keys, args []string
}

func (c scriptCall) String() string {
	return fmt.Sprintf("%s keys %q args %q", c.name, c.keys, c.args)
}

// callReply is what Redis answered to a call.
type callReply struct {
	r   any
	err error
}

// heldCall is a call held back by the late fate.
type heldCall struct {
	call  scriptCall
	send  chan struct{}
	once  sync.Once
	reply chan callReply
}

// deliver sends the held call to Redis now and returns its reply.
func (h *heldCall) deliver(t *testing.T) callReply {
	t.Helper()
	h.once.Do(func() { close(h.send) })
	select {
	case r := <-h.reply:
		return r
	case <-time.After(15 * time.Second):
		t.Fatalf("held %s: no reply within 15s of its delivery", h.call)
		return callReply{}
	}
}

// count returns how many calls of script the core made so far.
func (f *faultScripter) count(script string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[script]
}

// answered returns how many calls of the scripts reached Redis and were
// answered without error so far.
func (f *faultScripter) answered(scripts ...string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, s := range scripts {
		n += f.ranOK[s]
	}
	return n
}

// awaitAnswered waits until more than since calls of the scripts were
// answered by Redis (since: an earlier answered(scripts...)). When none is
// within 10 s, that is timing (see await), and the figures say how many
// calls of them the core made, how many reached Redis, and the last error
// one of them returned.
func (f *faultScripter) awaitAnswered(t *testing.T, since int, what string, scripts ...string) {
	t.Helper()
	f.await(t, func() bool { return f.answered(scripts...) > since }, func() string {
		f.mu.Lock()
		defer f.mu.Unlock()
		var made, ran int
		var last []string
		for _, s := range scripts {
			made, ran = made+f.calls[s], ran+f.ran[s]
			if err := f.lastErr[s]; err != nil {
				last = append(last, s+": "+err.Error())
			}
		}
		return fmt.Sprintf("%s: no call of %v answered by Redis; made by the core in all: %d, that reached Redis: %d; last errors: %v", what, scripts, made, ran, last)
	})
}

// await waits up to 10 s for cond, the fault's call (or its clean-up)
// answered. A miss leaves the rule nothing to judge: it is timing (see
// timely; on a machine that kept time it still fails), described by
// figures, and stops the test.
func (f *faultScripter) await(t *testing.T, cond func() bool, figures func() string) {
	t.Helper()
	if waitFor(cond, 10*time.Second) {
		return
	}
	f.e.tooLate(t, figures()+" (waited 10s)")
}

// answeredOn is answered for the calls whose first key is key.
func (f *faultScripter) answeredOn(key string, scripts ...string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, s := range scripts {
		n += f.ranOKOn[s+"\n"+key]
	}
	return n
}

// awaitCleanup waits until a clean-up call on key (the lock's hash or the
// claim key: a clean-up of another lock, still running in the background
// from an earlier mode, does not count) made after since was answered;
// since is an earlier answeredOn(key, cleanupScripts...).
func (f *faultScripter) awaitCleanup(t *testing.T, key string, since int, what string) {
	t.Helper()
	f.await(t, func() bool { return f.answeredOn(key, cleanupScripts...) > since }, func() string {
		return fmt.Sprintf("%s: the clean-up of the call: no call of %v on %s answered by Redis", what, cleanupScripts, key)
	})
}

// awaitCleanupNaming is awaitCleanup for the clean-up call that names
// token (the held call's id, or its hold) among its arguments, the one
// that refuses the held call: a call may have more than one clean-up (a
// write Lock that gives up drops its writer intent apart from abandoning
// the call whose outcome it does not know), and the other may be answered
// first.
func (f *faultScripter) awaitCleanupNaming(t *testing.T, key string, since int, token, what string) {
	t.Helper()
	f.await(t, func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		cs := f.cleanups[key]
		for i := since; i < len(cs); i++ {
			if slices.Contains(cs[i], token) {
				return true
			}
		}
		return false
	}, func() string {
		return fmt.Sprintf("%s: the clean-up of the call: no call of %v on %s naming %q answered by Redis", what, cleanupScripts, key, token)
	})
}

// nameOf names the script of a call.
func nameOf(sha, src string) string {
	if src != "" {
		sum := sha1.Sum([]byte(src))
		sha = hex.EncodeToString(sum[:])
	}
	if n := locker.ScriptName(sha); n != "" {
		return n
	}
	return "sha:" + sha
}

func (f *faultScripter) EvalSha(ctx context.Context, sha string, keys, args []string) (any, error) {
	return f.do(ctx, scriptCall{name: nameOf(sha, ""), sha: sha, keys: keys, args: args})
}

// EvalShaBatch runs each call of a batch as EvalSha does, fates included,
// all at once, so that the core's batched refreshes (locker.Batcher) meet
// the same lost, late and delayed replies as single calls.
func (f *faultScripter) EvalShaBatch(ctx context.Context, calls []locker.ScriptCall) []locker.ScriptResult {
	out := make([]locker.ScriptResult, len(calls))
	var wg sync.WaitGroup
	for i, c := range calls {
		wg.Go(func() { out[i].Reply, out[i].Err = f.EvalSha(ctx, c.SHA1, c.Keys, c.Args) })
	}
	wg.Wait()
	return out
}

func (f *faultScripter) Eval(ctx context.Context, src string, keys, args []string) (any, error) {
	return f.do(ctx, scriptCall{name: nameOf("", src), src: src, keys: keys, args: args})
}

// forward runs c on Redis through the driver and counts it.
func (f *faultScripter) forward(ctx context.Context, c scriptCall) (any, error) {
	var r any
	var err error
	if c.src != "" {
		r, err = f.Scripter.Eval(ctx, c.src, c.keys, c.args)
	} else {
		r, err = f.Scripter.EvalSha(ctx, c.sha, c.keys, c.args)
	}
	f.mu.Lock()
	f.ran[c.name]++
	if err != nil {
		f.lastErr[c.name] = err
	}
	if err == nil {
		f.ranOK[c.name]++
		if len(c.keys) > 0 {
			f.ranOKOn[c.name+"\n"+c.keys[0]]++
			if slices.Contains(cleanupScripts, c.name) {
				if f.cleanups == nil {
					f.cleanups = map[string][][]string{}
				}
				f.cleanups[c.keys[0]] = append(f.cleanups[c.keys[0]], slices.Clone(c.args))
			}
		}
	}
	f.mu.Unlock()
	return r, err
}

// enteredCall is a call as it entered a faultScripter.
type enteredCall struct {
	script, key string
	at          time.Time
}

const maxEntered = 256

// firstEntered returns when the first call of script on key (its first
// key) entered f at or after since, or since when none did: no call can
// have run on Redis earlier.
func (f *faultScripter) firstEntered(script, key string, since time.Time) time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.entered {
		if c.script == script && c.key == key && !c.at.Before(since) {
			return c.at
		}
	}
	return since
}

// match returns the arm for c, counting the hit, or nil.
func (f *faultScripter) match(c scriptCall) *faultArm {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls[c.name]++
	ec := enteredCall{script: c.name, at: time.Now()}
	if len(c.keys) > 0 {
		ec.key = c.keys[0]
	}
	if len(f.entered) == maxEntered {
		f.entered = slices.Delete(f.entered, 0, 1)
	}
	f.entered = append(f.entered, ec)
	for _, a := range f.arms {
		if a.meets(c) {
			a.seen++
		}
	}
	for _, a := range f.arms {
		if a.left == 0 || !a.meets(c) {
			continue
		}
		if a.skip > 0 {
			a.skip--
			return nil
		}
		return a
	}
	return nil
}

// meets reports whether c is a call a's fate is for: of its script, on its
// key when it has one.
func (a *faultArm) meets(c scriptCall) bool {
	return a.script == c.name && (a.key == "" || len(c.keys) > 0 && c.keys[0] == a.key)
}

// consume records that a's fate was applied to one call.
func (f *faultScripter) consume(a *faultArm) {
	f.mu.Lock()
	a.hits++
	if a.left > 0 {
		a.left--
	}
	f.mu.Unlock()
}

// missing reports whether an EVALSHA call would find its script missing
// on the node that serves it: a held or delayed call must not turn a
// NOSCRIPT (an answer that changes nothing) into an unknown outcome. A
// script loaded through f before (its node has restarted since, say) is
// loaded again first, so that the fate meets the call: answered NOSCRIPT,
// the core would reload and retry within what is left of its context,
// which a short one does not leave.
func (f *faultScripter) missing(c scriptCall) bool {
	if c.src != "" || len(c.keys) == 0 {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	exists := func() bool {
		r, err := f.admin.Do(ctx, c.keys[0], "SCRIPT", "EXISTS", c.sha)
		if err != nil {
			return true
		}
		a, _ := r.([]any)
		return !(len(a) == 1 && a[0] == int64(0))
	}
	if exists() {
		return false
	}
	f.mu.Lock()
	src := f.srcs[c.sha]
	f.mu.Unlock()
	if src == "" {
		return true
	}
	if _, err := f.Scripter.ScriptLoad(ctx, src); err != nil {
		return true
	}
	return !exists()
}

// bgCtx is the context of a call run on the test's account: bounded, and
// independent of the caller, who may have given up.
func bgCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 10*time.Second)
}

func (f *faultScripter) do(ctx context.Context, c scriptCall) (any, error) {
	a := f.match(c)
	if a == nil {
		return f.forward(ctx, c)
	}
	switch a.fate {
	case fateLost:
		bctx, cancel := bgCtx()
		_, err := f.forward(bctx, c)
		cancel()
		if err != nil {
			// Redis answered with an error (NOSCRIPT, say): nothing
			// changed, and the caller may learn so; the arm waits for
			// the next call.
			return nil, err
		}
		f.consume(a)
		return nil, fmt.Errorf("conformance: injected fault (%s call ran, its reply was lost): %w", c.name, errInjectedEOF)

	case fateAnswer:
		f.consume(a)
		f.mu.Lock()
		code := a.code
		f.mu.Unlock()
		return nil, locker.NewServerError(code+" conformance: injected reply (the "+c.name+" call did not run)", nil)

	case fateLate:
		if f.missing(c) {
			return nil, fmt.Errorf("conformance: script %s not loaded on the node (checked before holding the call back): %w", c.name, locker.ErrNoScript)
		}
		f.consume(a)
		h := &heldCall{call: c, send: make(chan struct{}), reply: make(chan callReply, 1)}
		f.bg.Add(1)
		go func() {
			defer f.bg.Done()
			select {
			case <-h.send:
			case <-f.stop:
				h.reply <- callReply{err: errHeldDropped}
				return
			}
			bctx, cancel := bgCtx()
			defer cancel()
			r, err := f.forward(bctx, c)
			h.reply <- callReply{r, err}
		}()
		a.held <- h
		f.mu.Lock()
		cancelCaller := a.cancel
		f.mu.Unlock()
		if cancelCaller != nil {
			cancelCaller()
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("conformance: injected fault (%s call held back): %w", c.name, err)
			}
		}
		return nil, fmt.Errorf("conformance: injected fault (%s call held back): %w", c.name, errInjectedTimeout)

	case fateDelayed:
		if f.missing(c) {
			return nil, fmt.Errorf("conformance: script %s not loaded on the node (checked before delaying the call): %w", c.name, locker.ErrNoScript)
		}
		f.consume(a)
		f.mu.Lock()
		d, first := a.delay, a.first
		f.mu.Unlock()
		res := make(chan callReply, 1)
		f.bg.Add(1)
		go func() {
			defer f.bg.Done()
			var rep callReply
			if first {
				bctx, cancel := bgCtx()
				rep.r, rep.err = f.forward(bctx, c)
				cancel()
			}
			select {
			case <-time.After(d):
			case <-f.stop:
				res <- callReply{err: errHeldDropped}
				return
			}
			if !first {
				bctx, cancel := bgCtx()
				rep.r, rep.err = f.forward(bctx, c)
				cancel()
			}
			res <- rep
		}()
		select {
		case r := <-res:
			return r.r, r.err
		case <-ctx.Done():
			// The caller gives up; the call still runs when its pause ends.
			return nil, fmt.Errorf("conformance: %s call delayed by %v: %w", c.name, d, ctx.Err())
		}
	}
	return f.forward(ctx, c)
}

func (f *faultScripter) ScriptLoad(ctx context.Context, src string) (string, error) {
	sha, err := f.Scripter.ScriptLoad(ctx, src)
	if err == nil {
		f.mu.Lock()
		f.srcs[sha] = src
		f.mu.Unlock()
	}
	return sha, err
}

// Subscribe forwards to the driver's Subscriber; without one it fails, and
// the core falls back to polling.
func (f *faultScripter) Subscribe(ctx context.Context, channel string, onMessage func(string)) (func(), error) {
	s, ok := f.Scripter.(locker.Subscriber)
	if !ok {
		return nil, errors.New("conformance: driver does not implement locker.Subscriber")
	}
	return s.Subscribe(ctx, channel, func(payload string) {
		if f.bare.Load() {
			payload = ""
		}
		onMessage(payload)
	})
}

// withoutGrants makes f deliver every wake-up without its payload, as a
// driver from before payloads does: a waiter that a release handed the
// lock to then learns of it by a call, the call these rules act on, rather
// than from its wake-up alone.
func (f *faultScripter) withoutGrants() *faultScripter {
	f.bare.Store(true)
	return f
}

// isInjected reports whether err carries one of the faultScripter's errors.
func isInjected(err error) bool {
	return errors.Is(err, errInjectedEOF) || errors.Is(err, errInjectedTimeout) ||
		err != nil && strings.Contains(err.Error(), "conformance: injected fault")
}
