package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/scriptlock/scriptlock/locker"
)

// leaderJSON is a leader as --json prints it; Term 0 means no leader.
type leaderJSON struct {
	Name  string    `json:"name"`
	Term  int64     `json:"term"`
	Value string    `json:"value,omitempty"`
	Since time.Time `json:"since,omitzero"`
}

// cmdLeader prints the leader of the named election, or with --watch
// every new leader (Observe) until ctx ends or --count were printed. It
// reads only.
func cmdLeader(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var cfg config
	fs := newFlags("leader", "leader [flags] NAME", &cfg, stderr)
	watch := fs.Bool("watch", false, "print every new leader until interrupted")
	count := fs.Int("count", 0, "with --watch, stop after this many leaders (0: until interrupted)")
	name, status, ok := parseName(fs, args, "election", stderr)
	if !ok {
		return status
	}
	if *count < 0 {
		return usageError(stderr, fs, "--count must not be negative")
	}
	c, code := open(ctx, &cfg, stderr)
	if c == nil {
		return code
	}
	defer c.close()
	// This Election never campaigns: its TTL only sets how often --watch
	// reads the leader besides the pushed changes (a third of it).
	el, err := c.locks.NewElection(name, 3*time.Second, nil)
	if err != nil {
		return fail(stderr, err, "leader")
	}
	show := func(l locker.Leader) error {
		if cfg.json {
			return writeJSON(stdout, leaderJSON{Name: name, Term: l.Term, Value: l.Value, Since: l.Since})
		}
		if l.Term == 0 {
			_, err := fmt.Fprintf(stdout, "%s: no leader\n", name)
			return err
		}
		_, err := fmt.Fprintf(stdout, "%s: leader %q, term %d, since %s\n", name, l.Value, l.Term, l.Since.UTC().Format(time.RFC3339Nano))
		return err
	}
	if !*watch {
		cctx, cancel := c.call(ctx)
		l, err := el.Leader(cctx)
		cancel()
		if err != nil && !errors.Is(err, locker.ErrNoLeader) {
			return fail(stderr, err, "leader")
		}
		if err := show(l); err != nil {
			return fail(stderr, err, "write output")
		}
		return exitOK
	}
	n := 0
	for l := range el.Observe(ctx) {
		if err := show(l); err != nil {
			return fail(stderr, err, "write output")
		}
		if n++; *count > 0 && n >= *count {
			break
		}
	}
	return exitOK
}
