package bench

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// crew is a scenario's client goroutines. The first error one of them
// reports is kept and ends the run: failed turns true and the crew's
// context, if it has one (newCrew), is cancelled. Its zero value has none.
type crew struct {
	wg     sync.WaitGroup
	once   sync.Once
	err    error
	failed atomic.Bool
	cancel context.CancelFunc // cancels the crew's context; nil for none
}

// newCrew returns a crew and the context its goroutines call under,
// cancelled at the first failure or by stop.
func newCrew(ctx context.Context) (*crew, context.Context) {
	ctx, cancel := context.WithCancel(ctx)
	return &crew{cancel: cancel}, ctx
}

// stop cancels the crew's context, if it has one.
func (c *crew) stop() {
	if c.cancel != nil {
		c.cancel()
	}
}

// fail records err if it is the first, and ends the run.
func (c *crew) fail(err error) {
	c.once.Do(func() { c.err = err })
	c.failed.Store(true)
	c.stop()
}

// unlock releases u, a hold of key, under a context that outlives the
// crew's; a failure (its message naming key and note) fails the run. It
// reports whether u was released.
func (c *crew) unlock(ctx context.Context, u Unlocker, key, note string) bool {
	if err := u.Unlock(context.WithoutCancel(ctx)); err != nil {
		c.fail(fmt.Errorf("unlock %q%s: %w", key, note, err))
		return false
	}
	return true
}

// wait waits for the goroutines, then stops r's timer; it returns the time
// since start and the first error.
func (c *crew) wait(r *run, start time.Time) (time.Duration, error) {
	c.wg.Wait()
	elapsed := time.Since(start)
	r.stopTimer()
	c.stop()
	return elapsed, c.err
}
