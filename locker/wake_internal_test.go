package locker

// The wake hub (wake.go): a message wakes every waiter that asked for all
// messages and one waiter woken alone; a waiter woken alone that leaves
// without using its wake-up hands it on.

import (
	"context"
	"sync"
	"testing"

	"github.com/scriptlock/scriptlock/internal/assert"
	"github.com/scriptlock/scriptlock/internal/require"
)

// subScripter is a Scripter whose Subscribe keeps the handler, so a test
// can deliver messages.
type subScripter struct {
	Scripter
	mu sync.Mutex
	on func()
}

func (s *subScripter) Subscribe(_ context.Context, _ string, on func()) (func(), error) {
	s.mu.Lock()
	s.on = on
	s.mu.Unlock()
	return func() {}, nil
}

func (s *subScripter) publish() {
	s.mu.Lock()
	on := s.on
	s.mu.Unlock()
	on()
}

// pending reports which of ws hold a wake-up, and takes it.
func pending(ws ...<-chan struct{}) []bool {
	got := make([]bool, len(ws))
	for i, w := range ws {
		select {
		case <-w:
			got[i] = true
		default:
		}
	}
	return got
}

func count(b []bool) int {
	n := 0
	for _, v := range b {
		if v {
			n++
		}
	}
	return n
}

func TestWakeOneAlone(t *testing.T) {
	s := &subScripter{}
	c, err := New(s, nil)
	require.NoError(t, err)
	defer c.Close()
	ctx := context.Background()

	var alone []<-chan struct{}
	var leaves []func(bool)
	for range 3 {
		w, leave := c.joinWake(ctx, "ch", true)
		require.NotNil(t, w)
		alone, leaves = append(alone, w), append(leaves, leave)
	}
	all, leaveAll := c.joinWake(ctx, "ch", false)
	defer leaveAll(false)

	s.publish()
	assert.Equal(t, 1, count(pending(alone...)), "one message wakes one waiter woken alone")
	assert.Equal(t, []bool{true}, pending(all), "and every waiter woken by every message")

	// Two messages before anyone takes theirs: two waiters, not one twice.
	s.publish()
	s.publish()
	got := pending(alone...)
	assert.Equal(t, 2, count(got), "two messages wake two waiters woken alone")

	// A waiter leaving with a pending wake-up hands it on.
	s.publish()
	var holder int
	for i, w := range alone {
		if len(w) == 1 {
			holder = i
		}
	}
	leaves[holder](false)
	var rest []<-chan struct{}
	for i, w := range alone {
		if i != holder {
			rest = append(rest, w)
		}
	}
	assert.Equal(t, 1, count(pending(rest...)), "a pending wake-up is handed on when its waiter leaves")

	// A waiter that used its wake-up but could not try hands it on too.
	leaves[(holder+1)%3](true)
	last := alone[(holder+2)%3]
	assert.Equal(t, []bool{true}, pending(last), "handOn wakes the remaining waiter")
	leaves[(holder+2)%3](false)
}
