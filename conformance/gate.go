package conformance

import "sync"

// processGate gives a quiet case the process to itself: every other case
// holds it shared while it runs, a quiet one holds it alone, whichever
// deployment and driver they run on (drivers may run the suite at the
// same time in one process). Whatever else the suite starts that adds a
// goroutine which outlives the start (a server, a subtest, a key watch)
// holds it shared while starting, so that a quiet case that counts the
// process's goroutines sees only its own come and go. A timed case holds
// it in the timed mode: beside at most timedConcurrency-1 other timed
// cases, and nothing else.
var processGate = newGate()

// timedConcurrency bounds the timed cases (testCase.timed) running at
// once, all of other deployments (a deployment runs them one at a time).
// Four Quorum/SilentMinority cases at once, each with 8 workers, kept
// every call of each under half its 1 s bound under -race on a 2-core
// machine (2026-11-26), where the process's other cases had broken it.
const timedConcurrency = 4

// gate is a readers-writer lock with a third, timed mode, which prefers
// writers, all of them: once a writer waits, no new reader or timed
// holder gets in until no writer waits any more, so the quiet cases
// queued by several deployments share one wait for the running cases to
// drain. Timed holders (up to timedConcurrency at once) exclude readers
// and writers; once one waits, no new reader gets in.
type gate struct {
	mu      sync.Mutex
	changed *sync.Cond
	readers int
	timed   int  // timed holders
	waiting int  // writers waiting
	queued  int  // timed holders waiting
	writer  bool // a writer holds g
}

func newGate() *gate {
	g := &gate{}
	g.changed = sync.NewCond(&g.mu)
	return g
}

// RLock blocks while a writer or a timed holder holds g or waits for it,
// then holds it shared.
func (g *gate) RLock() {
	g.mu.Lock()
	for g.writer || g.waiting > 0 || g.timed > 0 || g.queued > 0 {
		g.changed.Wait()
	}
	g.readers++
	g.mu.Unlock()
}

// RUnlock ends one RLock.
func (g *gate) RUnlock() {
	g.mu.Lock()
	g.readers--
	if g.readers == 0 {
		g.changed.Broadcast()
	}
	g.mu.Unlock()
}

// Lock blocks until nobody holds g, then holds it alone.
func (g *gate) Lock() {
	g.mu.Lock()
	g.waiting++
	for g.writer || g.readers > 0 || g.timed > 0 {
		g.changed.Wait()
	}
	g.waiting--
	g.writer = true
	g.mu.Unlock()
}

// Unlock ends the Lock.
func (g *gate) Unlock() {
	g.mu.Lock()
	g.writer = false
	g.changed.Broadcast()
	g.mu.Unlock()
}

// TimedLock blocks while a reader or a writer holds g, a writer waits,
// or timedConcurrency timed holders hold it, then holds it in the timed
// mode.
func (g *gate) TimedLock() {
	g.mu.Lock()
	g.queued++
	for g.writer || g.waiting > 0 || g.readers > 0 || g.timed >= timedConcurrency {
		g.changed.Wait()
	}
	g.queued--
	g.timed++
	g.mu.Unlock()
}

// TimedUnlock ends one TimedLock.
func (g *gate) TimedUnlock() {
	g.mu.Lock()
	g.timed--
	g.changed.Broadcast()
	g.mu.Unlock()
}
