package conformance

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestGateTimedMode checks the process gate's timed mode: at most
// timedConcurrency timed holders at once, never beside a reader or a
// writer, and a waiting timed holder keeps new readers out.
func TestGateTimedMode(t *testing.T) {
	g := newGate()
	var timed, readers, writers, most atomic.Int32
	check := func() {
		tm, r, w := timed.Load(), readers.Load(), writers.Load()
		if tm > 0 && (r > 0 || w > 0) || w > 1 || w == 1 && r > 0 || tm > timedConcurrency {
			t.Errorf("gate held by %d timed, %d readers and %d writers at once", tm, r, w)
		}
		for {
			m := most.Load()
			if tm <= m || most.CompareAndSwap(m, tm) {
				break
			}
		}
	}
	hold := func(n *atomic.Int32) {
		n.Add(1)
		check()
		time.Sleep(2 * time.Millisecond)
		check()
		n.Add(-1)
	}
	var wg sync.WaitGroup
	for i := range 60 {
		wg.Go(func() {
			switch i % 3 {
			case 0:
				g.TimedLock()
				hold(&timed)
				g.TimedUnlock()
			case 1:
				g.RLock()
				hold(&readers)
				g.RUnlock()
			default:
				if i%6 == 2 {
					g.Lock()
					hold(&writers)
					g.Unlock()
				} else {
					g.TimedLock()
					hold(&timed)
					g.TimedUnlock()
				}
			}
		})
	}
	wg.Wait()
	if most.Load() < 2 {
		t.Errorf("at most %d timed holders at once: want several together (up to %d)", most.Load(), timedConcurrency)
	}

	// A waiting timed holder keeps new readers out.
	g.RLock()
	queued := make(chan struct{})
	go func() {
		g.TimedLock()
		close(queued)
		g.TimedUnlock()
	}()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		g.mu.Lock()
		q, tm := g.queued, g.timed
		g.mu.Unlock()
		if q == 1 {
			break
		}
		if tm > 0 || time.Now().After(deadline) {
			t.Fatalf("TimedLock beside a reader: %d timed holders, %d waiting; want it to wait", tm, q)
		}
	}
	got := make(chan struct{})
	go func() {
		g.RLock()
		close(got)
		g.RUnlock()
	}()
	select {
	case <-got:
		t.Fatal("a new reader got in while a timed holder waited")
	case <-time.After(20 * time.Millisecond):
	}
	g.RUnlock()
	for _, c := range []chan struct{}{queued, got} {
		select {
		case <-c:
		case <-time.After(5 * time.Second):
			t.Fatal("the timed holder or the reader never got in once the first reader left")
		}
	}
}
