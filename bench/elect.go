package bench

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/scriptlock/scriptlock/locker"
)

// The leader-election scenarios.
const (
	// ElectCandidates is the number of candidates of the election rows.
	ElectCandidates = 4
	// ElectCrashTTL is the term TTL of op=crash: short, since each crash
	// costs about one TTL of waiting. op=resign uses TTL.
	ElectCrashTTL = 200 * time.Millisecond
	// electLead is how long each leader leads before it resigns or crashes.
	electLead = 5 * time.Millisecond
)

// Electorate is implemented by a Locker whose rows run the election
// scenarios: it fields candidates, each on clients of its own, as
// separate processes would be.
type Electorate interface {
	// Candidate returns a new candidate whose terms last ttl.
	Candidate(ttl time.Duration) Candidate
}

// Candidate is one process running for leader.
type Candidate interface {
	// Campaign waits until the candidate leads name, or ctx ends; the
	// Unlocker resigns.
	Campaign(ctx context.Context, name string) (Unlocker, error)
	// Close ends the candidate's clients as a crash would: a term it
	// holds is not resigned, and lasts until it expires.
	Close()
}

// ElectionTarget returns lib's election rows on driver: the Election
// scenarios, run by candidates that newCandidate builds on fresh clients
// for the Redis at addr (registering their clients' Close with tb).
func ElectionTarget(lib, driver string, newCandidate func(tb testing.TB, addr string, ttl time.Duration) Candidate) Target {
	return Target{Lib: lib, Driver: driver, Scenarios: Election(), New: func(tb testing.TB, addr string) (Locker, Locker) {
		e := electorate(func(ttl time.Duration) Candidate { return newCandidate(tb, addr, ttl) })
		return e, e
	}}
}

// electorate is the Locker of an ElectionTarget: it only fields
// candidates.
type electorate func(ttl time.Duration) Candidate

func (e electorate) Candidate(ttl time.Duration) Candidate { return e(ttl) }

var errOnlyCandidates = errors.New("bench: an election row's Locker only fields candidates")

func (electorate) Lock(context.Context, string) (Unlocker, error) { return nil, errOnlyCandidates }

func (electorate) TryLock(context.Context, string) (Unlocker, bool, error) {
	return nil, false, errOnlyCandidates
}

// HandWritten returns a Candidate the way users of a lock library write
// one: Campaign waits in l.Lock (the library's own retry, called again
// when it gives up by itself) and its Unlocker resigns; Close calls end,
// which closes l's clients.
func HandWritten(l Locker, end func()) Candidate { return handWritten{l: l, end: end} }

type handWritten struct {
	l   Locker
	end func()
}

func (h handWritten) Campaign(ctx context.Context, name string) (Unlocker, error) {
	for {
		u, err := h.l.Lock(ctx, name)
		if !errors.Is(err, ErrGaveUp) {
			return u, err
		}
	}
}

func (h handWritten) Close() { h.end() }

// Resign returns the scenario "op=resign/candidates=4": ElectCandidates
// candidates (Electorate) campaign for one name with terms of TTL; after
// an untimed round in which each leads once, n times, the leader leads
// 5 ms and resigns, and it campaigns again once
// the next leader's Campaign returned. It reports elect-p50-ns,
// elect-p99-ns and elect-max-ns: from the start of Resign to the next
// leader's Campaign returning. Two leaders at once fail the run.
func Resign() Scenario { return electScenario("op=resign", TTL, false) }

// Crash returns the scenario "op=crash/candidates=4/ttl=200ms": as Resign
// with terms of ElectCrashTTL, but n times the leader crashes (its
// Candidate is closed without resigning) and a new candidate joins once
// the next leader's Campaign returned. The figures run from the crash to
// the next leader's Campaign returning: about the TTL, plus the time the
// waiters take to see the term expired.
func Crash() Scenario {
	return electScenario("op=crash", ElectCrashTTL, true)
}

// Election returns the election scenarios: Resign and Crash.
func Election() []Scenario { return []Scenario{Resign(), Crash()} }

func electScenario(op string, ttl time.Duration, crash bool) Scenario {
	name := fmt.Sprintf("%s/candidates=%d", op, ElectCandidates)
	if crash {
		name += "/ttl=" + ttl.String()
	}
	return Scenario{
		Name:   name,
		smokeN: 3,
		// a poller's retry (up to 250 ms) and, after a crash, the TTL
		extra: func(n int) time.Duration { return time.Duration(n) * (ElectCrashTTL + 300*time.Millisecond) },
		run: func(ctx context.Context, r *run) error {
			return elect(ctx, r, ttl, crash)
		},
	}
}

// electRuns numbers the election runs of this process.
var electRuns atomic.Int64

// won is a Campaign that returned: who leads, and since when.
type won struct {
	c  Candidate
	u  Unlocker
	at time.Time
}

func elect(ctx context.Context, r *run, ttl time.Duration, crash bool) error {
	e, ok := r.l.(Electorate)
	if !ok {
		return fmt.Errorf("bench: the election scenarios need a Locker that implements bench.Electorate; %T does not", r.l)
	}
	// a name of its own per run: a term left when a run failed lasts its TTL
	name := r.key("elect", int(electRuns.Add(1)))
	ctx, cancel := context.WithCancel(ctx)
	var (
		wins   = make(chan won, ElectCandidates)
		failed = make(chan error, 1)
		wg     sync.WaitGroup
		cands  []Candidate
	)
	defer func() {
		cancel()
		wg.Wait()
		for len(wins) > 0 { // granted as the run ended
			w := <-wins
			uctx, end := context.WithTimeout(context.Background(), 5*time.Second)
			_ = w.u.Unlock(uctx)
			end()
		}
		for _, c := range cands {
			c.Close()
		}
	}()
	campaign := func(c Candidate) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			u, err := c.Campaign(ctx, name)
			switch {
			case err == nil:
				wins <- won{c: c, u: u, at: time.Now()}
			case ctx.Err() == nil:
				select {
				case failed <- fmt.Errorf("Campaign: %w", err):
				default:
				}
			}
		}()
	}
	join := func() {
		c := e.Candidate(ttl)
		cands = append(cands, c)
		campaign(c)
	}
	next := func() (won, error) {
		select {
		case w := <-wins:
			return w, nil
		case err := <-failed:
			return won{}, err
		case <-ctx.Done():
			return won{}, context.Cause(ctx)
		}
	}
	for range ElectCandidates {
		join()
	}
	leader, err := next()
	if err != nil {
		return err
	}
	// A warm-up round, untimed: each candidate leads once and resigns, so
	// that the clients have made their connections (rueidis and valkey-go
	// dial a second pipelining connection on the first command sent to it,
	// at random) and loaded the scripts before the figures start.
	for range ElectCandidates {
		if err := leader.u.Unlock(ctx); err != nil {
			return fmt.Errorf("resign, warming up: %w", err)
		}
		w, err := next()
		if err != nil {
			return err
		}
		campaign(leader.c)
		leader = w
	}
	took := make([]time.Duration, 0, r.n)
	r.resetTimer()
	for range r.n {
		time.Sleep(electLead)
		select {
		case w := <-wins:
			return fmt.Errorf("two leaders at once: a Campaign returned %v after another's, which had not resigned", w.at.Sub(leader.at))
		default:
		}
		t0 := time.Now()
		if crash {
			leader.c.Close()
		} else if err := leader.u.Unlock(ctx); err != nil {
			return fmt.Errorf("resign: %w", err)
		}
		w, err := next()
		if err != nil {
			return err
		}
		took = append(took, w.at.Sub(t0))
		if gap := w.at.Sub(leader.at); crash && gap < ttl/2 {
			return fmt.Errorf("a new leader %v after the crashed leader's Campaign returned, well before its %v term expired", gap, ttl)
		}
		if crash {
			join()
		} else {
			campaign(leader.c)
		}
		leader = w
	}
	r.stopTimer()
	if err := leader.u.Unlock(ctx); err != nil {
		return fmt.Errorf("last resign: %w", err)
	}
	slices.Sort(took)
	r.report(float64(percentile(took, 0.5)), "elect-p50-ns")
	r.report(float64(percentile(took, 0.99)), "elect-p99-ns")
	r.report(float64(took[len(took)-1]), "elect-max-ns")
	return nil
}

// ElectTargets returns the main module's election rows: scriptlock's
// Election on each driver, its candidates each on a Client and driver
// client of its own (a crash closes the Client: its term is neither
// renewed nor resigned).
func ElectTargets() []Target {
	var ts []Target
	for _, d := range Drivers {
		ts = append(ts, ElectionTarget("scriptlock", d, func(tb testing.TB, addr string, ttl time.Duration) Candidate {
			return scriptlockCandidate{c: newClient(tb, standaloneScripter(tb, d, addr), nil), ttl: ttl}
		}))
	}
	return ts
}

type scriptlockCandidate struct {
	c   *locker.Client
	ttl time.Duration
}

func (s scriptlockCandidate) Campaign(ctx context.Context, name string) (Unlocker, error) {
	e, err := s.c.NewElection(name, s.ttl, nil)
	if err != nil {
		return nil, err
	}
	if _, err := e.Campaign(ctx, "candidate"); err != nil {
		return nil, err
	}
	return resigner{e}, nil
}

func (s scriptlockCandidate) Close() { _ = s.c.Close() }

// resigner resigns an Election's term.
type resigner struct{ e *locker.Election }

func (r resigner) Unlock(ctx context.Context) error { return r.e.Resign(ctx) }
