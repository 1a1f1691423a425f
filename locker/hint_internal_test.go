package locker

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/scriptlock/scriptlock/internal/syncx"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// burstScripter holds every script call until release is closed, then
// refuses it with a server error, and records the order of script calls
// and subscriptions.
type burstScripter struct {
	events  syncx.Log[string] // "eval" or "sub <channel>"
	release chan struct{}
}

func (b *burstScripter) EvalSha(ctx context.Context, _ string, _, _ []string) (any, error) {
	b.events.Add("eval")
	select {
	case <-b.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return nil, NewServerError("ERR refused by the test", nil)
}

func (b *burstScripter) Eval(ctx context.Context, src string, keys, args []string) (any, error) {
	return b.EvalSha(ctx, "", keys, args)
}

func (b *burstScripter) ScriptLoad(context.Context, string) (string, error) { return "sha", nil }

func (b *burstScripter) Subscribe(_ context.Context, channel string, _ func(string)) (func(), error) {
	b.events.Add("sub " + channel)
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
		for _, e := range b.events.All() {
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
	assert.Equal(t, []string{"eval", "eval"}, b.events.All(), "the first two Acquires (2 permits) try at once")
	acquire()
	require.Eventually(t, func() bool { return evals() == 3 }, 5*time.Second, time.Millisecond, "the third Acquire's first try")
	ev := b.events.All()
	require.Len(t, ev, 4, "events: %q", ev)
	assert.True(t, strings.HasPrefix(ev[2], "sub ") && strings.Contains(ev[2], ":wake:"),
		"the third Acquire subscribes to its own channel before its first try: events %q", ev)
	close(b.release)
	for range 3 {
		<-done
	}
}

// refuseScripter refuses every acquire call as a held lock would ({0,
// pttl 10 s, server µs}) and records each one's seventh argument, ARGV[7]:
// empty for a first try, "1" for a waiter, "2" for a starving waiter.
type refuseScripter struct {
	mu     sync.Mutex
	waited []string
}

func (r *refuseScripter) EvalSha(_ context.Context, _ string, _, args []string) (any, error) {
	if len(args) >= 7 {
		r.mu.Lock()
		r.waited = append(r.waited, args[6])
		r.mu.Unlock()
	}
	return []any{int64(0), int64(10000), time.Now().UnixMicro()}, nil
}

func (r *refuseScripter) Eval(ctx context.Context, _ string, keys, args []string) (any, error) {
	return r.EvalSha(ctx, "", keys, args)
}

func (r *refuseScripter) ScriptLoad(context.Context, string) (string, error) { return "sha", nil }

func (r *refuseScripter) Subscribe(context.Context, string, func(string)) (func(), error) {
	return func() {}, nil
}

func (r *refuseScripter) starving() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, w := range r.waited {
		if w == "2" {
			return true
		}
	}
	return false
}

// TestLockStarvesAfterLateHint checks a Lock whose plain first try was
// refused before another Lock of its Client started to starve on the name:
// its wait, which finds the hint, still registers it as a starving waiter
// at once, rather than taking the first try's refusal for the starving
// one and sleeping for the holder's whole TTL unregistered.
func TestLockStarvesAfterLateHint(t *testing.T) {
	r := &refuseScripter{}
	c, err := New(r, nil)
	require.NoError(t, err)
	defer c.Close()
	m, err := c.NewMutex("late-hint", 10*time.Second, nil)
	require.NoError(t, err)
	leave := c.hints.join("mutex", m.name) // another Lock starves on the name
	defer leave()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	first := &firstTry{pttl: 10 * time.Second, err: fmt.Errorf("%w: %q", ErrNotObtained, m.name)}
	done := make(chan error, 1)
	go func() {
		_, err := m.wait(ctx, time.Now(), first)
		done <- err
	}()
	assert.Eventually(t, r.starving, time.Second, time.Millisecond, "a starving acquire call (ARGV[7] = \"2\") within 1 s")
	cancel()
	<-done
}
