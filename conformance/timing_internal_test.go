package conformance

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestTimingJudged checks how a time bound and a liveness check are judged
// against the measured lag (see within): passed, passed once the lag is
// allowed for, exceeded while the machine kept time, not judged on a
// machine running late, and a hang failing whatever the lag.
func TestTimingJudged(t *testing.T) {
	ms := time.Millisecond
	for _, c := range []struct {
		name      string
		took, lag time.Duration
		wantOK    bool
		wantNotes []timingKind
	}{
		{"within its bound", 290 * ms, time.Second, true, nil},
		{"within once the lag is allowed for", 400 * ms, 30 * ms, true, nil},
		{"exceeded while the machine kept time", 400 * ms, 5 * ms, false, []timingKind{timingExceeded}},
		{"not judged on a late machine", 600 * ms, 40 * ms, false, []timingKind{timingNotJudged}},
		{"a hang fails whatever the lag", 11 * time.Second, 5 * time.Second, false, []timingKind{timingExceeded}},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := &env{measure: func() lag { return lag{timer: c.lag} }}
			assert.Equal(t, c.wantOK, e.within(t, "call", c.took, 300*ms))
			var kinds []timingKind
			for _, n := range e.timings {
				kinds = append(kinds, n.kind)
				assert.Contains(t, n.what, "bound 300ms", "the note gives the bound")
				assert.Contains(t, n.what, "machine lag", "the note gives the lag")
			}
			assert.Equal(t, c.wantNotes, kinds)
		})
	}
	for _, c := range []struct {
		name string
		lag  time.Duration
		want timingKind
	}{
		{"liveness failed while the machine kept time", 5 * ms, timingExceeded},
		{"liveness not judged on a late machine", 30 * ms, timingNotJudged},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := &env{measure: func() lag { return lag{trip: c.lag} }}
			assert.True(t, e.timely(t, true, "refresh landed"), "a check that held passes")
			assert.Empty(t, e.timings)
			assert.False(t, e.timely(t, false, "refresh landed"))
			if assert.Len(t, e.timings, 1) {
				assert.Equal(t, c.want, e.timings[0].kind)
			}
		})
	}
}

// TestLagMeter checks that the sampler records overshoots while held, stops
// when let go, and that worstSince reads only the window asked for.
func TestLagMeter(t *testing.T) {
	m := &lagMeter{}
	release := m.hold()
	start := time.Now()
	time.Sleep(50 * time.Millisecond)
	release()
	assert.Eventually(t, func() bool {
		m.mu.Lock()
		defer m.mu.Unlock()
		return len(m.samples) > 0
	}, time.Second, time.Millisecond, "samples recorded while held")
	assert.GreaterOrEqual(t, m.worstSince(start), time.Duration(0))
	assert.Zero(t, m.worstSince(time.Now().Add(time.Hour)), "no sample in a window still to come")
	assert.Contains(t, m.summary(), "timer overshoot p99")
	m.mu.Lock()
	m.samples = append(m.samples, lagSample{at: time.Now(), over: 70 * time.Millisecond})
	m.mu.Unlock()
	assert.Equal(t, 70*time.Millisecond, m.worstSince(start))
}

// TestLagMeterOneSampler checks that holding the meter again before its
// sampler noticed it was let go does not start a second sampler.
func TestLagMeterOneSampler(t *testing.T) {
	m := &lagMeter{}
	for range 100 {
		m.hold()()
	}
	release := m.hold()
	before := time.Now()
	time.Sleep(200 * time.Millisecond)
	release()
	m.mu.Lock()
	n := 0
	for _, s := range m.samples {
		if s.at.After(before) {
			n++
		}
	}
	m.mu.Unlock()
	// One sampler takes at most 200ms/5ms = 40 samples in the window.
	assert.LessOrEqual(t, n, 41, "samples in 200ms: more than one sampler ran")
	assert.Positive(t, n)
}
