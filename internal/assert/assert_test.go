package assert

import (
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// recorder is a TestingT that keeps the failure messages.
type recorder struct{ msgs []string }

func (r *recorder) Errorf(format string, args ...any) {
	r.msgs = append(r.msgs, fmt.Sprintf(format, args...))
}

// check runs an assertion on a recorder and fails t unless it returned
// want, with a message exactly when it failed.
func check(t *testing.T, what string, want bool, f func(TestingT) bool) string {
	t.Helper()
	r := &recorder{}
	got := f(r)
	if got != want || (len(r.msgs) > 0) == want {
		t.Errorf("%s: returned %v with messages %q, want %v", what, got, r.msgs, want)
	}
	return strings.Join(r.msgs, "\n")
}

func TestAssertions(t *testing.T) {
	type pair struct{ A, B int }
	var nilBytes []byte
	x, y := &pair{1, 2}, &pair{1, 2}
	cases := []struct {
		what string
		want bool
		f    func(TestingT) bool
	}{
		{"Equal ints", true, func(t TestingT) bool { return Equal(t, 1, 1) }},
		{"Equal int vs int64", false, func(t TestingT) bool { return Equal(t, 1, int64(1)) }},
		{"Equal structs", true, func(t TestingT) bool { return Equal(t, pair{1, 2}, pair{1, 2}) }},
		{"Equal slices", false, func(t TestingT) bool { return Equal(t, []string{"a"}, []string{"b"}) }},
		{"Equal bytes", true, func(t TestingT) bool { return Equal(t, []byte("ab"), []byte("ab")) }},
		{"Equal nil vs empty bytes", false, func(t TestingT) bool { return Equal(t, nilBytes, []byte{}) }},
		{"Equal nil nil", true, func(t TestingT) bool { return Equal(t, nil, nil) }},
		{"EqualValues", true, func(t TestingT) bool { return EqualValues(t, int64(3), 3) }},
		{"NotEqual", true, func(t TestingT) bool { return NotEqual(t, 1, 2) }},
		{"Same", true, func(t TestingT) bool { return Same(t, x, x) }},
		{"Same different", false, func(t TestingT) bool { return Same(t, x, y) }},
		{"NotSame", true, func(t TestingT) bool { return NotSame(t, x, y) }},
		{"Nil typed nil", true, func(t TestingT) bool { return Nil(t, (*pair)(nil)) }},
		{"NotNil", false, func(t TestingT) bool { return NotNil(t, nil) }},
		{"Empty map", true, func(t TestingT) bool { return Empty(t, map[string]int{}) }},
		{"Empty string", false, func(t TestingT) bool { return Empty(t, "x") }},
		{"Empty zero struct", true, func(t TestingT) bool { return Empty(t, pair{}) }},
		{"NotEmpty", true, func(t TestingT) bool { return NotEmpty(t, []int{0}) }},
		{"Zero", true, func(t TestingT) bool { return Zero(t, time.Duration(0)) }},
		{"NotZero", false, func(t TestingT) bool { return NotZero(t, "") }},
		{"Len", true, func(t TestingT) bool { return Len(t, map[int]int{1: 1}, 1) }},
		{"Len wrong", false, func(t TestingT) bool { return Len(t, "abc", 2) }},
		{"Contains string", true, func(t TestingT) bool { return Contains(t, "hello", "ell") }},
		{"Contains slice", true, func(t TestingT) bool { return Contains(t, []string{"a", "b"}, "b") }},
		{"Contains map key", true, func(t TestingT) bool { return Contains(t, map[string]int{"k": 1}, "k") }},
		{"NotContains", false, func(t TestingT) bool { return NotContains(t, []int{1, 2}, 2) }},
		{"Subset", true, func(t TestingT) bool { return Subset(t, []int{1, 2, 3}, []int{3, 1}) }},
		{"Subset missing", false, func(t TestingT) bool { return Subset(t, []int{1, 2, 3}, []int{4}) }},
		{"ElementsMatch", true, func(t TestingT) bool { return ElementsMatch(t, []int{1, 2, 2}, []int{2, 1, 2}) }},
		{"ElementsMatch counts", false, func(t TestingT) bool { return ElementsMatch(t, []int{1, 2, 2}, []int{2, 1, 1}) }},
		{"NoError", false, func(t TestingT) bool { return NoError(t, io.EOF) }},
		{"Error", true, func(t TestingT) bool { return Error(t, io.EOF) }},
		{"ErrorIs wrapped", true, func(t TestingT) bool { return ErrorIs(t, fmt.Errorf("x: %w", io.EOF), io.EOF) }},
		{"NotErrorIs", false, func(t TestingT) bool { return NotErrorIs(t, io.EOF, io.EOF) }},
		{"ErrorAs", true, func(t TestingT) bool {
			var pe *pathErr
			return ErrorAs(t, fmt.Errorf("w: %w", &pathErr{}), &pe)
		}},
		{"ErrorContains", true, func(t TestingT) bool { return ErrorContains(t, errors.New("a b c"), "b c") }},
		{"Regexp", true, func(t TestingT) bool { return Regexp(t, regexp.MustCompile(`^a\d$`), "a1") }},
		{"Regexp string", false, func(t TestingT) bool { return Regexp(t, `^b`, "a1") }},
		{"NotPanics", false, func(t TestingT) bool { return NotPanics(t, func() { panic("x") }) }},
		{"Greater durations", true, func(t TestingT) bool { return Greater(t, time.Second, time.Millisecond) }},
		{"Greater mixed types", false, func(t TestingT) bool { return Greater(t, 2, int64(1)) }},
		{"GreaterOrEqual", true, func(t TestingT) bool { return GreaterOrEqual(t, "b", "b") }},
		{"Less", false, func(t TestingT) bool { return Less(t, 2.0, 1.0) }},
		{"LessOrEqual", true, func(t TestingT) bool { return LessOrEqual(t, uint(1), uint(2)) }},
		{"Positive", true, func(t TestingT) bool { return Positive(t, int64(1)) }},
		{"Positive zero", false, func(t TestingT) bool { return Positive(t, 0) }},
		{"InDelta", true, func(t TestingT) bool { return InDelta(t, 10, 11.5, 2) }},
		{"InDelta far", false, func(t TestingT) bool { return InDelta(t, time.Second, 2*time.Second, float64(time.Millisecond)) }},
		{"InEpsilon", true, func(t TestingT) bool { return InEpsilon(t, 100, 101, 0.02) }},
		{"True", false, func(t TestingT) bool { return True(t, false) }},
		{"False", true, func(t TestingT) bool { return False(t, false) }},
	}
	for _, c := range cases {
		check(t, c.what, c.want, c.f)
	}
}

type pathErr struct{}

func (*pathErr) Error() string { return "path" }

func TestFailureMessages(t *testing.T) {
	msg := check(t, "Equal", false, func(t TestingT) bool { return Equal(t, "want", "got", "call %d of %s", 3, "x") })
	for _, s := range []string{`"want"`, `"got"`, "call 3 of x", "expected", "actual"} {
		if !strings.Contains(msg, s) {
			t.Errorf("the failure message lacks %q:\n%s", s, msg)
		}
	}
	msg = check(t, "one non-string message", false, func(t TestingT) bool { return True(t, false, 42) })
	if !strings.Contains(msg, "42") {
		t.Errorf("the failure message lacks the message argument: %s", msg)
	}
}

func TestEventually(t *testing.T) {
	var n atomic.Int32
	check(t, "Eventually true on the third tick", true, func(t TestingT) bool {
		return Eventually(t, func() bool { return n.Add(1) >= 3 }, time.Second, time.Millisecond)
	})
	start := time.Now()
	check(t, "Eventually never", false, func(t TestingT) bool {
		return Eventually(t, func() bool { return false }, 50*time.Millisecond, time.Millisecond)
	})
	if d := time.Since(start); d < 50*time.Millisecond || d > time.Second {
		t.Errorf("Eventually gave up after %v, want about 50ms", d)
	}
}
