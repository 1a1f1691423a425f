package locker

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/scriptlock/scriptlock/internal/assert"
	"github.com/scriptlock/scriptlock/internal/require"
)

// burstScripter holds every script call until release is closed, then
// refuses it with a server error, and records the order of script calls
// and subscriptions.
type burstScripter struct {
	mu      sync.Mutex
	events  []string // "eval" or "sub <channel>"
	release chan struct{}
}

func (b *burstScripter) record(e string) {
	b.mu.Lock()
	b.events = append(b.events, e)
	b.mu.Unlock()
}

func (b *burstScripter) snapshot() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.events...)
}

func (b *burstScripter) EvalSha(ctx context.Context, _ string, _, _ []string) (any, error) {
	b.record("eval")
	select {
	case <-b.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return nil, errors.New("ERR refused by the test")
}

func (b *burstScripter) Eval(ctx context.Context, src string, keys, args []string) (any, error) {
	return b.EvalSha(ctx, "", keys, args)
}

func (b *burstScripter) ScriptLoad(context.Context, string) (string, error) { return "sha", nil }

func (b *burstScripter) Subscribe(_ context.Context, channel string, _ func(string)) (func(), error) {
	b.record("sub " + channel)
	return func() {}, nil
}

// TestSemaphoreBurstSubscribesFirst checks the burst hint: while as many
// Acquires of a Client run on a name as it has permits, the next one
// subscribes to its own channel before its first try; the ones before it
// try at once.
func TestSemaphoreBurstSubscribesFirst(t *testing.T) {
	b := &burstScripter{release: make(chan struct{})}
	c, err := New(b, nil)
	require.NoError(t, err)
	defer c.Close()
	s, err := c.NewSemaphore("burst", 2, time.Minute, nil)
	require.NoError(t, err)
	ctx := context.Background()
	done := make(chan error, 3)
	acquire := func() {
		go func() {
			_, err := s.Acquire(ctx, 1)
			done <- err
		}()
	}
	evals := func() int {
		n := 0
		for _, e := range b.snapshot() {
			if e == "eval" {
				n++
			}
		}
		return n
	}
	for i := 1; i <= 2; i++ {
		acquire()
		require.Eventually(t, func() bool { return evals() == i }, 5*time.Second, time.Millisecond, "Acquire %d's first try", i)
	}
	assert.Equal(t, []string{"eval", "eval"}, b.snapshot(), "the first two Acquires (2 permits) try at once")
	acquire()
	require.Eventually(t, func() bool { return evals() == 3 }, 5*time.Second, time.Millisecond, "the third Acquire's first try")
	ev := b.snapshot()
	require.Len(t, ev, 4, "events: %q", ev)
	assert.True(t, strings.HasPrefix(ev[2], "sub ") && strings.Contains(ev[2], ":wake:"),
		"the third Acquire subscribes to its own channel before its first try: events %q", ev)
	close(b.release)
	for range 3 {
		<-done
	}
}
