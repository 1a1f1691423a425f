package main

import (
	"context"
	"fmt"
	"io"

	"github.com/scriptlock/scriptlock/locker"
)

// cmdRelease ends the current holders' leases of one lock name (its mutex,
// its read-write lock and its semaphore) with locker.ForceRelease: an operator's escape
// hatch for a holder that is gone or stuck. It needs both --force and
// --yes-really; without them it changes nothing, shows what it would end
// (when Redis answers) and exits with status 2. With them it reads the
// state, drops the holds it saw (never one granted after that read) and
// wakes the waiters; auto-refreshed holders report their lease Lost at
// their next refresh, others when they next call Extend, TTL or Unlock.
func cmdRelease(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var cfg config
	fs := newFlags("release", "release --force --yes-really [flags] NAME", &cfg, stderr)
	force := fs.Bool("force", false, "required: end the leases of the current holders, who are not asked")
	sure := fs.Bool("yes-really", false, "required with --force: confirm that the holders are gone or stuck")
	name, status, ok := parseName(fs, args, "lock", stderr)
	if !ok {
		return status
	}
	if !*force || !*sure {
		fmt.Fprintf(stderr, "scriptlock release: refused, nothing changed: ending %s's leases needs both --force and --yes-really.\n", display(name))
		fmt.Fprintf(stderr, "  The holders are not asked: one that is still working keeps acting as the holder until it\n")
		fmt.Fprintf(stderr, "  next refreshes or checks its lease, while a waiter may already hold the lock.\n")
		fmt.Fprintf(stderr, "  Use it only for a holder that is gone or stuck, and check the resource enforces fences.\n")
		if c, err := connect(ctx, &cfg); err == nil { // show what would end; read-only
			defer c.close()
			if st, err := c.inspectAll(ctx, []string{name}); err == nil {
				fmt.Fprintf(stderr, "\ncurrent state:\n")
				_ = writeState(stderr, st[0])
			}
		}
		return exitUsage
	}
	c, code := open(ctx, &cfg, stderr)
	if c == nil {
		return code
	}
	defer c.close()
	st, err := c.inspectAll(ctx, []string{name})
	if err != nil {
		return fail(stderr, err, "inspect")
	}
	before := st[0]
	var dropped locker.Forced
	if before.Mutex.Held || before.RW.Readers > 0 || before.RW.Writer || before.Semaphore.Holds > 0 {
		cctx, cancel := c.call(ctx)
		dropped, err = c.locks.ForceRelease(cctx, name, before.ServerTime)
		cancel()
		if err != nil {
			return fail(stderr, fmt.Errorf("%w (it may have run: inspect %s to see)", err, display(name)), "release")
		}
	}
	if cfg.json {
		err = writeJSON(stdout, releaseJSON{
			Name: name, Before: toJSON(before),
			Released: forcedJSON{MutexHolds: dropped.MutexHolds, RWHolds: dropped.RWHolds, SemaphoreHolds: dropped.SemaphoreHolds},
		})
	} else {
		err = writeRelease(stdout, before, dropped)
	}
	if err != nil {
		return fail(stderr, err, "write output")
	}
	return exitOK
}

type releaseJSON struct {
	Name     string     `json:"name"`
	Released forcedJSON `json:"released"`
	Before   stateJSON  `json:"before"`
}

type forcedJSON struct {
	MutexHolds     int `json:"mutex_holds"`
	RWHolds        int `json:"rw_holds"`
	SemaphoreHolds int `json:"semaphore_holds"`
}

func writeRelease(w io.Writer, before locker.LockState, d locker.Forced) error {
	name := display(before.Name)
	if d == (locker.Forced{}) {
		_, err := fmt.Fprintf(w, "%s: nothing to release (no live hold, or it ended meanwhile)\n", name)
		return err
	}
	if d.MutexHolds > 0 {
		m := before.Mutex
		fmt.Fprintf(w, "%s: mutex released: %d hold(s) of owner %s, fence %d\n", name, d.MutexHolds, m.Owner, m.Fence)
	}
	if d.RWHolds > 0 {
		fmt.Fprintf(w, "%s: read-write lock released: %d hold(s)\n", name, d.RWHolds)
	}
	if d.SemaphoreHolds > 0 {
		fmt.Fprintf(w, "%s: semaphore released: %d hold(s)\n", name, d.SemaphoreHolds)
	}
	_, err := fmt.Fprintf(w, "waiters were woken; the old holders see the loss at their next refresh, Extend, TTL or Unlock\n")
	return err
}
