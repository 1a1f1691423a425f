package main

import (
	"context"
	"io"

	"github.com/scriptlock/scriptlock/locker"
)

// cmdInspect prints the state of each named lock: one block per name, or a
// JSON array with --json. It reads only.
func cmdInspect(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var cfg config
	fs := newFlags("inspect", "inspect [flags] NAME...", &cfg, stderr)
	names, err := parse(fs, args)
	if err != nil {
		return parseError(err)
	}
	if len(names) == 0 {
		return usageError(stderr, fs, "give at least one lock NAME")
	}
	for _, n := range names {
		if n == "" || len(n) > locker.MaxNameLen {
			return usageError(stderr, fs, "lock names are 1 to %d bytes, got %d", locker.MaxNameLen, len(n))
		}
	}
	c, code := open(ctx, &cfg, stderr)
	if c == nil {
		return code
	}
	defer c.close()
	states, err := c.inspectAll(ctx, names)
	if err != nil {
		return fail(stderr, err, "inspect")
	}
	if cfg.json {
		err = writeJSON(stdout, statesJSON(states))
	} else {
		for i, s := range states {
			if i > 0 {
				_, _ = io.WriteString(stdout, "\n")
			}
			if err = writeState(stdout, s); err != nil {
				break
			}
		}
	}
	if err != nil {
		return fail(stderr, err, "write output")
	}
	return exitOK
}

// inspectAll inspects each name in turn, each call bounded by --timeout.
func (c *conn) inspectAll(ctx context.Context, names []string) ([]locker.LockState, error) {
	out := make([]locker.LockState, 0, len(names))
	for _, n := range names {
		cctx, cancel := c.call(ctx)
		st, err := c.locks.Inspect(cctx, n)
		cancel()
		if err != nil {
			return nil, err
		}
		out = append(out, st)
	}
	return out, nil
}
