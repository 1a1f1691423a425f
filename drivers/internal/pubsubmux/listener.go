package pubsubmux

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Listener is the local end of one Subscribe call: the onMessage it was
// given and the one value that call waits for. The Mux and the rueidis and
// valkey-go drivers, which subscribe through their client's own pub/sub,
// keep one per Subscribe call.
type Listener struct {
	fn    func(payload string)
	ready chan error // receives exactly one value: nil on confirmation, or the failure

	mu   sync.Mutex // held while fn runs
	gone bool       // set under mu by Stop
}

// NewListener returns the Listener of a Subscribe call given onMessage.
func NewListener(onMessage func(payload string)) *Listener {
	return &Listener{fn: onMessage, ready: make(chan error, 1)}
}

// Confirm tells the Subscribe call that the server confirmed the
// subscription; Fail that it failed with err. One of them is called once.
func (l *Listener) Confirm() { l.ready <- nil }

// Fail tells the Subscribe call that the subscription failed with err.
func (l *Listener) Fail(err error) { l.ready <- err }

// Await waits for Confirm or Fail, ctx's end, or timeout, and returns the
// failure (nil on confirmation); a timeout's error names driver and
// channel.
func (l *Listener) Await(ctx context.Context, driver, channel string, timeout time.Duration) error {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case err := <-l.ready:
		return err
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return fmt.Errorf("%s: subscribe %q: no confirmation from the server within %v", driver, channel, timeout)
	}
}

// Deliver calls onMessage with payload ("" for a spurious call) unless Stop
// ran.
func (l *Listener) Deliver(payload string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.gone {
		l.fn(payload)
	}
}

// Stop ends the deliveries: once it returns onMessage is not called again.
// It waits for a call of onMessage in progress.
func (l *Listener) Stop() {
	l.mu.Lock()
	l.gone = true
	l.mu.Unlock()
}
