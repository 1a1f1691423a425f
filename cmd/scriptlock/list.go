package main

import (
	"context"
	"io"
	"sort"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// cmdList finds every lock under the prefix with SCAN (on every master of
// a Cluster; never KEYS, which blocks the server) and prints each one's
// state as a table, or a JSON array with --json.
func cmdList(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var cfg config
	fs := newFlags("list", "list [flags]", &cfg, stderr)
	count := fs.Int64("scan-count", 1000, "SCAN COUNT hint: keys examined per SCAN call")
	free := fs.Bool("free", false, "also show locks that are free (only bookkeeping keys are left)")
	rest, err := parse(fs, args)
	if err != nil {
		return parseError(err)
	}
	if len(rest) > 0 {
		return usageError(stderr, fs, "list takes no NAME (got %q); use inspect NAME", rest[0])
	}
	if *count <= 0 {
		return usageError(stderr, fs, "--scan-count must be positive")
	}
	c, code := open(ctx, &cfg, stderr)
	if c == nil {
		return code
	}
	defer c.close()
	names, err := c.scanNames(ctx, *count)
	if err != nil {
		return fail(stderr, err, "scan")
	}
	states, err := c.inspectAll(ctx, names)
	if err != nil {
		return fail(stderr, err, "inspect")
	}
	if !*free {
		kept := states[:0]
		for _, s := range states {
			if !s.Free() {
				kept = append(kept, s)
			}
		}
		states = kept
	}
	if cfg.json {
		err = writeJSON(stdout, statesJSON(states))
	} else {
		err = writeTable(stdout, states)
	}
	if err != nil {
		return fail(stderr, err, "write output")
	}
	return exitOK
}

// globEscape escapes the characters SCAN MATCH treats as special.
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// scanNames returns the sorted names of the locks that have a key under
// the prefix, scanning every master of a Cluster. Each SCAN call is
// bounded by --timeout.
func (c *conn) scanNames(ctx context.Context, count int64) ([]string, error) {
	pattern := globEscape(c.cfg.prefix) + "{*"
	var mu sync.Mutex
	seen := map[string]bool{}
	scan := func(ctx context.Context, node *redis.Client) error {
		var cursor uint64
		for {
			cctx, cancel := c.call(ctx)
			keys, next, err := node.Scan(cctx, cursor, pattern, count).Result()
			cancel()
			if err != nil {
				return err
			}
			mu.Lock()
			for _, k := range keys {
				if name, ok := c.locks.LockName(k); ok {
					seen[name] = true
				}
			}
			mu.Unlock()
			if cursor = next; cursor == 0 {
				return nil
			}
		}
	}
	var err error
	switch r := c.rdb.(type) {
	case *redis.ClusterClient:
		err = r.ForEachMaster(ctx, scan)
	case *redis.Client:
		err = scan(ctx, r)
	}
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	sort.Strings(names)
	return names, nil
}
