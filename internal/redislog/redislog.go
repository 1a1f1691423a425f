// Package redislog gives go-redis a logger for tests and benchmarks that
// keeps its messages out of their output. go-redis logs through a global
// logger (redis.SetLogger) when a pooled connection fails to dial, which
// tests that stop, pause or refuse servers on purpose cause by the
// hundred; the errors that matter reach the caller anyway. A [Counter]
// writes nothing: it counts the messages, and its [Counter.Summary] is
// one line at most. It needs only the standard library (the interface
// go-redis wants is one Printf method), so a module that does not require
// go-redis can hold it.
package redislog

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
)

// Counter is a logger for redis.SetLogger that drops every message and
// counts them by kind (the message's format, its text before the first
// verb). It is safe for concurrent use; the zero value is ready.
type Counter struct {
	mu     sync.Mutex
	byKind map[string]int
	total  int
}

// Printf counts the message; it writes nothing.
func (c *Counter) Printf(_ context.Context, format string, _ ...any) {
	kind, _, _ := strings.Cut(format, "%")
	kind = strings.TrimRight(strings.TrimSpace(kind), ":")
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byKind == nil {
		c.byKind = map[string]int{}
	}
	c.byKind[kind]++
	c.total++
}

// Summary returns one line that counts the dropped messages, the most
// common kinds first, or "" when there were none.
func (c *Counter) Summary() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.total == 0 {
		return ""
	}
	kinds := make([]string, 0, len(c.byKind))
	for k := range c.byKind {
		kinds = append(kinds, k)
	}
	slices.SortFunc(kinds, func(a, b string) int {
		return cmp.Or(c.byKind[b]-c.byKind[a], strings.Compare(a, b))
	})
	var parts []string
	for i, k := range kinds {
		if i == 3 {
			parts = append(parts, "...")
			break
		}
		parts = append(parts, fmt.Sprintf("%q x%d", k, c.byKind[k]))
	}
	return fmt.Sprintf("go-redis logged %d messages, not shown: %s", c.total, strings.Join(parts, ", "))
}

// Runner is what a TestMain runs: a *testing.M, or a wrapper of one.
type Runner interface{ Run() int }

// After returns a Runner that runs m and then writes the Summary, if
// any, to stderr.
func (c *Counter) After(m Runner) Runner { return after{c, m, os.Stderr} }

type after struct {
	c *Counter
	m Runner
	w io.Writer
}

func (a after) Run() int {
	code := a.m.Run()
	if s := a.c.Summary(); s != "" {
		fmt.Fprintln(a.w, s)
	}
	return code
}
