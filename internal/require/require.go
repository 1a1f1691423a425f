// Package require has the functions of package assert (the subset of
// github.com/stretchr/testify/require the repository's tests use, on the
// standard library only): each reports a failure like its assert
// counterpart, then stops the test with t.FailNow.
package require

import (
	"time"

	"github.com/scriptlock/scriptlock/internal/assert"
)

// TestingT is what the functions need of a *testing.T.
type TestingT interface {
	Errorf(format string, args ...any)
	FailNow()
}

type helper interface{ Helper() }

// Equal is assert.Equal, stopping the test on failure.
func Equal(t TestingT, expected, actual any, msgAndArgs ...any) {
	if h, ok := t.(helper); ok {
		h.Helper()
	}
	if !assert.Equal(t, expected, actual, msgAndArgs...) {
		t.FailNow()
	}
}

// EqualValues is assert.EqualValues, stopping the test on failure.
func EqualValues(t TestingT, expected, actual any, msgAndArgs ...any) {
	if h, ok := t.(helper); ok {
		h.Helper()
	}
	if !assert.EqualValues(t, expected, actual, msgAndArgs...) {
		t.FailNow()
	}
}

// NotEqual is assert.NotEqual, stopping the test on failure.
func NotEqual(t TestingT, expected, actual any, msgAndArgs ...any) {
	if h, ok := t.(helper); ok {
		h.Helper()
	}
	if !assert.NotEqual(t, expected, actual, msgAndArgs...) {
		t.FailNow()
	}
}

// Same is assert.Same, stopping the test on failure.
func Same(t TestingT, expected, actual any, msgAndArgs ...any) {
	if h, ok := t.(helper); ok {
		h.Helper()
	}
	if !assert.Same(t, expected, actual, msgAndArgs...) {
		t.FailNow()
	}
}

// NotSame is assert.NotSame, stopping the test on failure.
func NotSame(t TestingT, expected, actual any, msgAndArgs ...any) {
	if h, ok := t.(helper); ok {
		h.Helper()
	}
	if !assert.NotSame(t, expected, actual, msgAndArgs...) {
		t.FailNow()
	}
}

// Nil is assert.Nil, stopping the test on failure.
func Nil(t TestingT, object any, msgAndArgs ...any) {
	if h, ok := t.(helper); ok {
		h.Helper()
	}
	if !assert.Nil(t, object, msgAndArgs...) {
		t.FailNow()
	}
}

// NotNil is assert.NotNil, stopping the test on failure.
func NotNil(t TestingT, object any, msgAndArgs ...any) {
	if h, ok := t.(helper); ok {
		h.Helper()
	}
	if !assert.NotNil(t, object, msgAndArgs...) {
		t.FailNow()
	}
}

// True is assert.True, stopping the test on failure.
func True(t TestingT, value bool, msgAndArgs ...any) {
	if h, ok := t.(helper); ok {
		h.Helper()
	}
	if !assert.True(t, value, msgAndArgs...) {
		t.FailNow()
	}
}

// False is assert.False, stopping the test on failure.
func False(t TestingT, value bool, msgAndArgs ...any) {
	if h, ok := t.(helper); ok {
		h.Helper()
	}
	if !assert.False(t, value, msgAndArgs...) {
		t.FailNow()
	}
}

// Empty is assert.Empty, stopping the test on failure.
func Empty(t TestingT, object any, msgAndArgs ...any) {
	if h, ok := t.(helper); ok {
		h.Helper()
	}
	if !assert.Empty(t, object, msgAndArgs...) {
		t.FailNow()
	}
}

// NotEmpty is assert.NotEmpty, stopping the test on failure.
func NotEmpty(t TestingT, object any, msgAndArgs ...any) {
	if h, ok := t.(helper); ok {
		h.Helper()
	}
	if !assert.NotEmpty(t, object, msgAndArgs...) {
		t.FailNow()
	}
}

// Zero is assert.Zero, stopping the test on failure.
func Zero(t TestingT, i any, msgAndArgs ...any) {
	if h, ok := t.(helper); ok {
		h.Helper()
	}
	if !assert.Zero(t, i, msgAndArgs...) {
		t.FailNow()
	}
}

// NotZero is assert.NotZero, stopping the test on failure.
func NotZero(t TestingT, i any, msgAndArgs ...any) {
	if h, ok := t.(helper); ok {
		h.Helper()
	}
	if !assert.NotZero(t, i, msgAndArgs...) {
		t.FailNow()
	}
}

// Len is assert.Len, stopping the test on failure.
func Len(t TestingT, object any, length int, msgAndArgs ...any) {
	if h, ok := t.(helper); ok {
		h.Helper()
	}
	if !assert.Len(t, object, length, msgAndArgs...) {
		t.FailNow()
	}
}

// Contains is assert.Contains, stopping the test on failure.
func Contains(t TestingT, s, contains any, msgAndArgs ...any) {
	if h, ok := t.(helper); ok {
		h.Helper()
	}
	if !assert.Contains(t, s, contains, msgAndArgs...) {
		t.FailNow()
	}
}

// NotContains is assert.NotContains, stopping the test on failure.
func NotContains(t TestingT, s, contains any, msgAndArgs ...any) {
	if h, ok := t.(helper); ok {
		h.Helper()
	}
	if !assert.NotContains(t, s, contains, msgAndArgs...) {
		t.FailNow()
	}
}

// Subset is assert.Subset, stopping the test on failure.
func Subset(t TestingT, list, subset any, msgAndArgs ...any) {
	if h, ok := t.(helper); ok {
		h.Helper()
	}
	if !assert.Subset(t, list, subset, msgAndArgs...) {
		t.FailNow()
	}
}

// ElementsMatch is assert.ElementsMatch, stopping the test on failure.
func ElementsMatch(t TestingT, listA, listB any, msgAndArgs ...any) {
	if h, ok := t.(helper); ok {
		h.Helper()
	}
	if !assert.ElementsMatch(t, listA, listB, msgAndArgs...) {
		t.FailNow()
	}
}

// NoError is assert.NoError, stopping the test on failure.
func NoError(t TestingT, err error, msgAndArgs ...any) {
	if h, ok := t.(helper); ok {
		h.Helper()
	}
	if !assert.NoError(t, err, msgAndArgs...) {
		t.FailNow()
	}
}

// Error is assert.Error, stopping the test on failure.
func Error(t TestingT, err error, msgAndArgs ...any) {
	if h, ok := t.(helper); ok {
		h.Helper()
	}
	if !assert.Error(t, err, msgAndArgs...) {
		t.FailNow()
	}
}

// ErrorIs is assert.ErrorIs, stopping the test on failure.
func ErrorIs(t TestingT, err, target error, msgAndArgs ...any) {
	if h, ok := t.(helper); ok {
		h.Helper()
	}
	if !assert.ErrorIs(t, err, target, msgAndArgs...) {
		t.FailNow()
	}
}

// NotErrorIs is assert.NotErrorIs, stopping the test on failure.
func NotErrorIs(t TestingT, err, target error, msgAndArgs ...any) {
	if h, ok := t.(helper); ok {
		h.Helper()
	}
	if !assert.NotErrorIs(t, err, target, msgAndArgs...) {
		t.FailNow()
	}
}

// ErrorAs is assert.ErrorAs, stopping the test on failure.
func ErrorAs(t TestingT, err error, target any, msgAndArgs ...any) {
	if h, ok := t.(helper); ok {
		h.Helper()
	}
	if !assert.ErrorAs(t, err, target, msgAndArgs...) {
		t.FailNow()
	}
}

// ErrorContains is assert.ErrorContains, stopping the test on failure.
func ErrorContains(t TestingT, err error, contains string, msgAndArgs ...any) {
	if h, ok := t.(helper); ok {
		h.Helper()
	}
	if !assert.ErrorContains(t, err, contains, msgAndArgs...) {
		t.FailNow()
	}
}

// Regexp is assert.Regexp, stopping the test on failure.
func Regexp(t TestingT, rx, str any, msgAndArgs ...any) {
	if h, ok := t.(helper); ok {
		h.Helper()
	}
	if !assert.Regexp(t, rx, str, msgAndArgs...) {
		t.FailNow()
	}
}

// NotPanics is assert.NotPanics, stopping the test on failure.
func NotPanics(t TestingT, f func(), msgAndArgs ...any) {
	if h, ok := t.(helper); ok {
		h.Helper()
	}
	if !assert.NotPanics(t, f, msgAndArgs...) {
		t.FailNow()
	}
}

// Eventually is assert.Eventually, stopping the test on failure.
func Eventually(t TestingT, condition func() bool, waitFor, tick time.Duration, msgAndArgs ...any) {
	if h, ok := t.(helper); ok {
		h.Helper()
	}
	if !assert.Eventually(t, condition, waitFor, tick, msgAndArgs...) {
		t.FailNow()
	}
}

// Greater is assert.Greater, stopping the test on failure.
func Greater(t TestingT, e1, e2 any, msgAndArgs ...any) {
	if h, ok := t.(helper); ok {
		h.Helper()
	}
	if !assert.Greater(t, e1, e2, msgAndArgs...) {
		t.FailNow()
	}
}

// GreaterOrEqual is assert.GreaterOrEqual, stopping the test on failure.
func GreaterOrEqual(t TestingT, e1, e2 any, msgAndArgs ...any) {
	if h, ok := t.(helper); ok {
		h.Helper()
	}
	if !assert.GreaterOrEqual(t, e1, e2, msgAndArgs...) {
		t.FailNow()
	}
}

// Less is assert.Less, stopping the test on failure.
func Less(t TestingT, e1, e2 any, msgAndArgs ...any) {
	if h, ok := t.(helper); ok {
		h.Helper()
	}
	if !assert.Less(t, e1, e2, msgAndArgs...) {
		t.FailNow()
	}
}

// LessOrEqual is assert.LessOrEqual, stopping the test on failure.
func LessOrEqual(t TestingT, e1, e2 any, msgAndArgs ...any) {
	if h, ok := t.(helper); ok {
		h.Helper()
	}
	if !assert.LessOrEqual(t, e1, e2, msgAndArgs...) {
		t.FailNow()
	}
}

// Positive is assert.Positive, stopping the test on failure.
func Positive(t TestingT, e any, msgAndArgs ...any) {
	if h, ok := t.(helper); ok {
		h.Helper()
	}
	if !assert.Positive(t, e, msgAndArgs...) {
		t.FailNow()
	}
}

// InDelta is assert.InDelta, stopping the test on failure.
func InDelta(t TestingT, expected, actual any, delta float64, msgAndArgs ...any) {
	if h, ok := t.(helper); ok {
		h.Helper()
	}
	if !assert.InDelta(t, expected, actual, delta, msgAndArgs...) {
		t.FailNow()
	}
}

// InEpsilon is assert.InEpsilon, stopping the test on failure.
func InEpsilon(t TestingT, expected, actual any, epsilon float64, msgAndArgs ...any) {
	if h, ok := t.(helper); ok {
		h.Helper()
	}
	if !assert.InEpsilon(t, expected, actual, epsilon, msgAndArgs...) {
		t.FailNow()
	}
}
