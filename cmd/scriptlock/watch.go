package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"reflect"
	"time"

	"github.com/scriptlock/scriptlock/locker"
)

// cmdWatch polls one lock's state and prints it whenever it changes (a
// change of holder, fence, hold count, queue, readers, writer or intents;
// remaining TTLs alone do not count), until ctx ends (SIGINT or SIGTERM)
// or --count changes were printed. On a terminal each state replaces the
// last; otherwise states are appended, each headed by the server time, or
// printed as one JSON object a line with --json.
func cmdWatch(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var cfg config
	fs := newFlags("watch", "watch [flags] NAME", &cfg, stderr)
	every := fs.Duration("interval", 500*time.Millisecond, "polling interval")
	count := fs.Int("count", 0, "stop after printing this many states (0: until interrupted)")
	name, status, ok := parseName(fs, args, "lock", stderr)
	if !ok {
		return status
	}
	if *every <= 0 || *count < 0 {
		return usageError(stderr, fs, "--interval must be positive and --count not negative")
	}
	c, code := open(ctx, &cfg, stderr)
	if c == nil {
		return code
	}
	defer c.close()
	tty := isTerminal(stdout)
	var last locker.LockState
	printed, failing := 0, false
	t := time.NewTicker(*every)
	defer t.Stop()
	for {
		cctx, cancel := c.call(ctx)
		st, err := c.locks.Inspect(cctx, name)
		cancel()
		switch {
		case ctx.Err() != nil:
			return exitOK
		case err != nil:
			if !failing { // report once per outage, then keep polling
				fmt.Fprintf(stderr, "scriptlock: watch: %v (still trying every %v)\n", err, *every)
				if h := hint(err); h != "" {
					fmt.Fprintf(stderr, "  %s\n", h)
				}
			}
			failing = true
		case printed == 0 || changed(last, st):
			failing = false
			if err := drawState(stdout, st, tty, cfg.json, *every); err != nil {
				return fail(stderr, err, "write output")
			}
			last = st
			if printed++; *count > 0 && printed >= *count {
				return exitOK
			}
		default:
			failing = false
		}
		select {
		case <-ctx.Done():
			return exitOK
		case <-t.C:
		}
	}
}

// changed reports whether b differs from a in more than the passing of
// time (remaining TTLs and the server time).
func changed(a, b locker.LockState) bool {
	a.ServerTime, b.ServerTime = time.Time{}, time.Time{}
	a.Mutex.TTL, b.Mutex.TTL = 0, 0
	a.RW.ReadTTL, b.RW.ReadTTL = 0, 0
	a.RW.WriterTTL, b.RW.WriterTTL = 0, 0
	a.Semaphore.Holders, b.Semaphore.Holders = withoutTTL(a.Semaphore.Holders), withoutTTL(b.Semaphore.Holders)
	return !reflect.DeepEqual(a, b)
}

// withoutTTL returns a copy of hs with every TTL 0.
func withoutTTL(hs []locker.SemaphoreHolder) []locker.SemaphoreHolder {
	out := make([]locker.SemaphoreHolder, len(hs))
	for i, h := range hs {
		h.TTL = 0
		out[i] = h
	}
	return out
}

// drawState prints one state of a watch.
func drawState(w io.Writer, st locker.LockState, tty, asJSON bool, every time.Duration) error {
	if asJSON {
		return writeJSON(w, toJSON(st))
	}
	if tty {
		fmt.Fprint(w, "\x1b[H\x1b[2J") // home, clear screen
		fmt.Fprintf(w, "watching every %v; Ctrl-C to stop\n\n", every)
	}
	fmt.Fprintf(w, "%s\n", st.ServerTime.UTC().Format(time.RFC3339Nano))
	if err := writeState(w, st); err != nil {
		return err
	}
	if !tty {
		_, err := io.WriteString(w, "\n")
		return err
	}
	return nil
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
