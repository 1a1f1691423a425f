package otel_test

import (
	"context"
	"testing"
	"time"

	"github.com/scriptlock/scriptlock/locker"
)

// BenchmarkObserver measures the Observer's cost per Event on the
// goroutine doing the lock work, with the SDK's in-memory providers.
func BenchmarkObserver(b *testing.B) {
	events := []struct {
		name string
		e    locker.Event
	}{
		{"acquire", locker.Event{Kind: locker.EventAcquire, Lock: "job:1", Mode: "mutex", Fence: 42, Attempts: 1, Wait: time.Millisecond}},
		{"release", locker.Event{Kind: locker.EventRelease, Lock: "job:1", Mode: "mutex", Fence: 42, Held: time.Second}},
		{"extend-untraced", locker.Event{Kind: locker.EventExtend, Lock: "job:1", Mode: "mutex", Fence: 42}},
	}
	for _, ev := range events {
		b.Run("event="+ev.name, func(b *testing.B) {
			h := newHarness(b, false)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				h.obs(ctx, ev.e)
			}
		})
	}
}
