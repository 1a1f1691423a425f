package conformance

import (
	"context"
	"errors"
	"fmt"
	"runtime/pprof"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/scriptlock/scriptlock/locker"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Safety and timing.
//
// A rule checks safety — exclusion, fence order, no hold past its bound, no
// late call taking effect, nothing left behind — or timing: a call returns
// within a bound, a refresh lands in time, some attempt succeeds while a
// fault lasts. Safety is judged as it is, always. A timing expectation
// depends on the machine as much as on the code: on a busy runner a timer
// fires 100 ms late, and a 300 ms bound then measures the runner. So a
// timing check that fails is judged against how late the machine ran
// (lag: the worst timer overshoot of this process since the case began, as
// the meter sampled it, or of a few short sleeps beside the check, or the
// slowest of three round trips to the deployment):
//
//   - within the rule's own bound plus lagFactor times the lag, it passes;
//   - beyond that with the lag under lagLimit, the bound was exceeded on a
//     machine that was keeping time: the rule fails (timing);
//   - beyond that with the lag at or above lagLimit, the bound is "not
//     judged on this machine": reported with its figures, never a failure;
//   - beyond hangAfter it fails whatever the lag: a hang is no bound.
//
// lagLimit is low on purpose: a quiet certification's overshoots stay
// under 5 ms (p99), and a case that saw 20 ms has had its servers starved
// for far longer than its own timers showed (the lag measures this process;
// the servers share the cores).
//
// A check that was not judged or failed returns false, and its caller stops
// the rule there: what follows depended on it. runCase reports the
// exceeded bounds after the rule, so that the verdict tells a rule whose
// own safety checks failed from one that was only late.
const (
	lagFactor  = 4
	lagLimit   = 10 * time.Millisecond
	hangAfter  = 10 * time.Second
	lagSleeps  = 20
	lagSleep   = time.Millisecond
	lagRoundTo = 100 * time.Microsecond
)

// lag is how late the machine ran beside a check.
type lag struct {
	during time.Duration // the worst timer overshoot since the case began (lagMeter)
	timer  time.Duration // the worst overshoot of lagSleeps sleeps of lagSleep, now
	trip   time.Duration // the slowest of three round trips to the deployment, now
}

func (l lag) worst() time.Duration { return max(l.during, l.timer, l.trip) }

func (l lag) String() string {
	return fmt.Sprintf("machine lag %v (timer overshoot %v during the case, %v now; round trip %v)",
		l.worst().Round(lagRoundTo), l.during.Round(lagRoundTo), l.timer.Round(lagRoundTo), l.trip.Round(lagRoundTo))
}

// lagNow is e.measure, or measureLag when the case set none.
func (e *env) lagNow() lag {
	if e.measure != nil {
		return e.measure()
	}
	return e.measureLag()
}

// measureLag measures how late the process and the deployment run now, and
// reads how late the process ran since the case began.
func (e *env) measureLag() lag {
	l := lag{during: meter.worstSince(e.start)}
	for range lagSleeps {
		start := time.Now()
		time.Sleep(lagSleep)
		l.timer = max(l.timer, time.Since(start)-lagSleep)
	}
	ctx, cancel := context.WithTimeout(context.Background(), hangAfter)
	defer cancel()
	for range 3 {
		start := time.Now()
		_, err := e.s.Eval(ctx, "return 1", []string{e.prefix + "lag"}, nil)
		took := time.Since(start)
		if err != nil {
			took = hangAfter // no answer: the deployment is not keeping time
		}
		l.trip = max(l.trip, took)
	}
	return l
}

// meter measures, while any case runs, how late this process's timers
// fire: a goroutine sleeps lagTick at a time and records each overshoot.
var meter = &lagMeter{}

const (
	lagTick    = 5 * time.Millisecond
	lagKeep    = 2 * time.Minute // how far back worstSince can look
	lagBuckets = 11
)

// lagMeter is the sampler behind meter. Its goroutine runs only while a
// case holds it (hold), so nothing of it outlives the tests.
type lagMeter struct {
	mu      sync.Mutex
	holders int
	running bool              // the sampler goroutine runs (it stops once no case holds it)
	samples []lagSample       // the last lagKeep of overshoots
	hist    [lagBuckets]int64 // every overshoot of the run, by lagBucket
	worst   time.Duration     // the worst overshoot of the run
}

type lagSample struct {
	at   time.Time
	over time.Duration
}

// lagBounds are the upper bounds of the histogram's buckets but the last.
var lagBounds = [lagBuckets - 1]time.Duration{
	time.Millisecond, 2 * time.Millisecond, 5 * time.Millisecond, 10 * time.Millisecond,
	25 * time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond,
	250 * time.Millisecond, 500 * time.Millisecond, time.Second,
}

// hold starts the sampler if it is not running and returns the function
// that lets it go; the sampler stops when no case holds it.
func (m *lagMeter) hold() (release func()) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.holders++
	if !m.running {
		m.running = true
		go m.run()
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			m.mu.Lock()
			m.holders--
			m.mu.Unlock()
		})
	}
}

func (m *lagMeter) run() {
	// Not a case's goroutine: drop the label the starting case gave it.
	pprof.SetGoroutineLabels(context.Background())
	for {
		start := time.Now()
		time.Sleep(lagTick)
		now := time.Now()
		over := now.Sub(start) - lagTick
		m.mu.Lock()
		m.samples = append(m.samples, lagSample{now, over})
		if old := now.Add(-lagKeep); m.samples[0].at.Before(old) {
			i, _ := slices.BinarySearchFunc(m.samples, old, func(s lagSample, t time.Time) int { return s.at.Compare(t) })
			m.samples = slices.Delete(m.samples, 0, i)
		}
		b, _ := slices.BinarySearch(lagBounds[:], over)
		m.hist[b]++
		m.worst = max(m.worst, over)
		stop := m.holders == 0
		if stop {
			m.running = false
		}
		m.mu.Unlock()
		if stop {
			return
		}
	}
}

// worstSince returns the worst overshoot recorded since since.
func (m *lagMeter) worstSince(since time.Time) time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	var w time.Duration
	for i := len(m.samples) - 1; i >= 0 && !m.samples[i].at.Before(since); i-- {
		w = max(w, m.samples[i].over)
	}
	return w
}

// summary describes the run's timer overshoots: how many, their 99th
// percentile (the bucket's upper bound) and the worst.
func (m *lagMeter) summary() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var n int64
	for _, c := range m.hist {
		n += c
	}
	if n == 0 {
		return "machine lag: not measured"
	}
	p99 := "over " + lagBounds[len(lagBounds)-1].String()
	var seen int64
	for i, c := range m.hist {
		seen += c
		if seen*100 >= n*99 && i < len(lagBounds) {
			p99 = "under " + lagBounds[i].String()
			break
		}
	}
	return fmt.Sprintf("machine lag while the rules ran: timer overshoot p99 %s, worst %v (%d samples of a %v sleep)", p99, m.worst.Round(lagRoundTo), n, lagTick)
}

// timingKind is how a timing check that did not pass ended.
type timingKind int

const (
	timingExceeded  timingKind = iota // a bound exceeded while the machine kept time
	timingNotJudged                   // the machine ran too late to judge it
)

// timingNote is one timing check that did not pass, for the verdict.
type timingNote struct {
	kind timingKind
	what string // what was checked, with the figures
}

// within judges a time bound: took is how long what took, bound the rule's
// own figure (see "Safety and timing" above). It reports whether the check
// passed; on false, the caller stops the rule.
func (e *env) within(t *testing.T, what string, took, bound time.Duration) bool {
	t.Helper()
	if took <= bound {
		return true
	}
	l := e.lagNow()
	allowed := bound + lagFactor*l.worst()
	figures := fmt.Sprintf("%s: took %v, bound %v (+%d× lag = %v), %v", what, took.Round(lagRoundTo), bound, lagFactor, allowed.Round(lagRoundTo), l)
	switch {
	case took <= allowed && took < hangAfter:
		t.Logf("timing: %s: within the bound once the lag is allowed for", figures)
		return true
	case l.worst() >= lagLimit && took < hangAfter:
		e.timing(t, timingNotJudged, figures)
	default:
		e.timing(t, timingExceeded, figures)
	}
	return false
}

// timely judges a liveness expectation (a refresh landed, some attempt
// succeeded) that ok says held or not; what describes it with its
// figures. It reports ok; on false, the caller stops the rule.
func (e *env) timely(t *testing.T, ok bool, what string) bool {
	t.Helper()
	if ok {
		return true
	}
	l := e.lagNow()
	figures := fmt.Sprintf("%s; %v", what, l)
	if l.worst() >= lagLimit {
		e.timing(t, timingNotJudged, figures)
	} else {
		e.timing(t, timingExceeded, figures)
	}
	return false
}

// timing records a timing check that did not pass: logged now, reported
// by runCase after the rule.
func (e *env) timing(t *testing.T, kind timingKind, figures string) {
	t.Helper()
	if kind == timingNotJudged {
		t.Logf("timing: not judged on this machine (lag at or above %v): %s", lagLimit, figures)
	} else {
		t.Logf("timing: bound exceeded (lag under %v, or a hang: %v or more): %s", lagLimit, hangAfter, figures)
	}
	e.timingMu.Lock()
	defer e.timingMu.Unlock()
	e.timings = append(e.timings, timingNote{kind: kind, what: figures})
}

// reportTiming fails t for each bound the rule exceeded while the machine
// kept time, after noting whether the rule's own checks failed (safety).
// runCase calls it once the rule has returned.
func (e *env) reportTiming(t *testing.T) (notes []timingNote, safetyFailed bool) {
	t.Helper()
	safetyFailed = t.Failed()
	e.timingMu.Lock()
	notes = slices.Clone(e.timings)
	e.timingMu.Unlock()
	for _, n := range notes {
		if n.kind == timingExceeded {
			t.Errorf("timing: bound exceeded while the machine kept time: %s", n.what)
		}
	}
	return notes, safetyFailed
}

// waitFor polls cond every 5 ms until it holds or within passes, and
// reports whether it held: for a timing check to judge (assert.Eventually
// would fail the test itself).
func waitFor(cond func() bool, within time.Duration) bool {
	for deadline := time.Now().Add(within); ; time.Sleep(5 * time.Millisecond) {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return cond()
		}
	}
}

// eventually is a liveness expectation: cond holds within within. It polls
// (waitFor) and judges a miss as timing (see timely); on false, the caller
// stops the rule.
func (e *env) eventually(t *testing.T, cond func() bool, within time.Duration, what string) bool {
	t.Helper()
	return e.timely(t, waitFor(cond, within), fmt.Sprintf("%s: not within %v", what, within))
}

// until waits up to within for cond, a state the rule arranges before it
// judges (a waiter queued, a lease expired); a miss is timing (see
// eventually) and stops the test.
func (e *env) until(t *testing.T, cond func() bool, within time.Duration, what string) {
	t.Helper()
	if !e.eventually(t, cond, within, what) {
		t.SkipNow()
	}
}

// setupDone requires err, a set-up call's error, to be nil; a deadline
// (the machine ran too late for the call to answer in time) is timing
// instead (see timely), and stops the test.
func (e *env) setupDone(t *testing.T, err error, what string) {
	t.Helper()
	if errors.Is(err, context.DeadlineExceeded) {
		e.timely(t, false, fmt.Sprintf("%s: %v", what, err))
		t.SkipNow()
	}
	require.NoError(t, err, what)
}

// done judges err, a call's error: nil passes; a deadline (no answer in
// time) is timing (see timely); any other error fails t. It reports
// whether err was nil.
func (e *env) done(t *testing.T, err error, what string) bool {
	t.Helper()
	if errors.Is(err, context.DeadlineExceeded) {
		return e.timely(t, false, fmt.Sprintf("%s: %v", what, err))
	}
	return assert.NoError(t, err, what)
}

// freeSoon waits for a lock to be free (free) soon after its holder let it
// go: within soon is timing (see eventually); still held by the TTL, ttl
// from now at most, it leaked a hold past its bound, which is safety. It
// reports whether the lock was free within soon.
func (e *env) freeSoon(t *testing.T, free func() bool, soon, ttl time.Duration, what string) bool {
	t.Helper()
	if e.eventually(t, free, soon, what) {
		return true
	}
	assert.True(t, waitFor(free, ttl), "%s: still held a TTL (%v) later", what, ttl)
	return false
}

// arrive waits up to within for ch to deliver and returns what it
// delivered; a miss is timing (see timely) and stops the test.
func arrive[T any](t *testing.T, e *env, ch <-chan T, within time.Duration, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(within):
	}
	e.timely(t, false, fmt.Sprintf("%s: not within %v", what, within))
	t.SkipNow()
	var zero T
	return zero
}

// lapsedDone requires err, the error of a call on a lease granted at
// granted with a TTL of ttl, to be nil; ErrExpired or ErrHeldByOther once
// the TTL has passed (the machine ran too slow for the rule to reach the
// call in time) is timing instead (see timely), and stops the test.
func (e *env) lapsedDone(t *testing.T, err error, granted time.Time, ttl time.Duration, what string) {
	t.Helper()
	if took := time.Since(granted); took >= ttl && (errors.Is(err, locker.ErrExpired) || errors.Is(err, locker.ErrHeldByOther)) {
		e.tooLate(t, fmt.Sprintf("%s: %v: the lease's %v TTL ran out first (%v after the grant)", what, err, ttl, took.Round(lagRoundTo)))
	}
	require.NoError(t, err, what)
}

// unlockShort unlocks l, a lease (or a term) with a short TTL: an Unlock
// that finds it gone (ErrExpired or ErrHeldByOther) after its validity
// deadline passed (the machine ran too slow for the rule to unlock in
// time) is timing (see timely) and stops the test; any other error fails
// it.
func (e *env) unlockShort(t *testing.T, l interface {
	ValidUntil() time.Time
	Unlock(context.Context) error
}, what string) {
	t.Helper()
	vu := l.ValidUntil()
	err := l.Unlock(e.ctx)
	if (errors.Is(err, locker.ErrExpired) || errors.Is(err, locker.ErrHeldByOther)) && time.Now().After(vu) {
		e.tooLate(t, fmt.Sprintf("%s: %v: unlocked after the lease's validity deadline", what, err))
	}
	require.NoError(t, err, what)
}

// tooLate records a liveness expectation that did not hold in time (see
// timely) and stops the test.
func (e *env) tooLate(t *testing.T, what string) {
	t.Helper()
	e.timely(t, false, what)
	t.SkipNow()
}
