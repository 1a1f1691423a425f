package require

import (
	"fmt"
	"testing"
)

// stopper is a TestingT that records Errorf and FailNow; FailNow ends the
// goroutine as testing.T's does.
type stopper struct {
	msgs    []string
	stopped bool
}

func (s *stopper) Errorf(format string, args ...any) {
	s.msgs = append(s.msgs, fmt.Sprintf(format, args...))
}
func (s *stopper) FailNow() { s.stopped = true; panic(s) }

func run(f func(TestingT)) (s *stopper) {
	s = &stopper{}
	defer func() {
		if r := recover(); r != nil && r != any(s) {
			panic(r)
		}
	}()
	f(s)
	return s
}

func TestStopsOnFailureOnly(t *testing.T) {
	if s := run(func(t TestingT) { Equal(t, 1, 1); NoError(t, nil); Len(t, []int{1}, 1) }); s.stopped || len(s.msgs) > 0 {
		t.Errorf("passing assertions stopped the test or reported: %+v", s)
	}
	reached := false
	s := run(func(t TestingT) { Equal(t, 1, 2, "values of %s", "x"); reached = true })
	if !s.stopped || reached || len(s.msgs) != 1 {
		t.Errorf("a failed Equal must report once and stop the test: %+v, code after it ran: %v", s, reached)
	}
}
