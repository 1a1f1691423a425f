package conformance

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/scriptlock/scriptlock/locker"
)

// countingScripter counts the calls passed to the driver's Scripter and
// forwards Subscribe when the driver implements locker.Subscriber. After
// crash, every call fails as if the process had lost Redis (a crash as far
// as the lock is concerned).
type countingScripter struct {
	locker.Scripter
	evalsha, eval, load atomic.Int64
	returned            atomic.Int64 // EvalSha and Eval calls that returned
	failing             atomic.Bool
	// inFlight is held shared by every call while it runs; crash takes it
	// exclusively, so no call that began before the crash is still on its
	// way to Redis after crash returns.
	inFlight sync.RWMutex
}

// crash makes every later call fail with errCrashed. It returns once the
// calls already running have ended, so a call cannot reach Redis after the
// crash (as one started just before it could otherwise do).
func (c *countingScripter) crash() {
	c.inFlight.Lock()
	c.failing.Store(true)
	c.inFlight.Unlock()
}

// errCrashed is what a failing countingScripter returns.
var errCrashed = errors.New("conformance: simulated crash: no Redis calls")

func (c *countingScripter) EvalSha(ctx context.Context, sha string, keys, args []string) (any, error) {
	c.inFlight.RLock()
	defer c.inFlight.RUnlock()
	if c.failing.Load() {
		return nil, errCrashed
	}
	c.evalsha.Add(1)
	defer c.returned.Add(1)
	return c.Scripter.EvalSha(ctx, sha, keys, args)
}

func (c *countingScripter) Eval(ctx context.Context, src string, keys, args []string) (any, error) {
	c.inFlight.RLock()
	defer c.inFlight.RUnlock()
	if c.failing.Load() {
		return nil, errCrashed
	}
	c.eval.Add(1)
	defer c.returned.Add(1)
	return c.Scripter.Eval(ctx, src, keys, args)
}

func (c *countingScripter) ScriptLoad(ctx context.Context, src string) (string, error) {
	c.inFlight.RLock()
	defer c.inFlight.RUnlock()
	if c.failing.Load() {
		return "", errCrashed
	}
	c.load.Add(1)
	return c.Scripter.ScriptLoad(ctx, src)
}

// Subscribe forwards to the driver's Subscriber; without one it fails, and
// the core falls back to polling.
func (c *countingScripter) Subscribe(ctx context.Context, channel string, onMessage func(string)) (func(), error) {
	s, ok := c.Scripter.(locker.Subscriber)
	if !ok {
		return nil, errors.New("conformance: driver does not implement locker.Subscriber")
	}
	return s.Subscribe(ctx, channel, onMessage)
}

func (c *countingScripter) reset() {
	c.evalsha.Store(0)
	c.eval.Store(0)
	c.load.Store(0)
	c.returned.Store(0)
}

func (c *countingScripter) counts() (evalsha, eval, load int64) {
	return c.evalsha.Load(), c.eval.Load(), c.load.Load()
}

// calls is the number of script calls made so far.
func (c *countingScripter) calls() int64 {
	return c.evalsha.Load() + c.eval.Load()
}
