// Package scriptload is the ScriptLoad behaviour the locker.Scripter
// contract asks of every driver, written once: SCRIPT LOAD on every master
// the client knows, one after the other, every one tried even when some
// fail, the SHA-1 returned only when all of them loaded the script, and an
// error naming each failed node otherwise. Nothing is retried.
//
// A driver lists its masters as [Node] values and calls [Run], or, when
// its client hands out nodes only inside a callback (redisc's EachNode),
// records each node's outcome with [Result.Add] and ends with
// [Result.SHA].
package scriptload

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// Node is one master: its address, for error messages and order, and the
// function that sends SCRIPT LOAD to it and returns the SHA-1 it reports.
type Node struct {
	Addr string
	Load func(ctx context.Context) (sha1 string, err error)
}

// Run sends SCRIPT LOAD to every node in turn, in the order of their
// addresses, and returns [Result.SHA]. It blocks until every node has
// answered or ctx is done; once ctx is done the nodes not tried yet fail
// with ctx's error without being sent anything. driver prefixes error
// messages ("goredis", "rueidis").
func Run(ctx context.Context, driver string, nodes []Node) (string, error) {
	nodes = slices.Clone(nodes)
	slices.SortFunc(nodes, func(a, b Node) int { return strings.Compare(a.Addr, b.Addr) })
	r := New(driver)
	for _, n := range nodes {
		if err := ctx.Err(); err != nil {
			r.Add(n.Addr, "", fmt.Errorf("not tried: %w", err))
			continue
		}
		sha, err := n.Load(ctx)
		r.Add(n.Addr, sha, err)
	}
	return r.SHA()
}

// Result gathers the outcomes of one ScriptLoad, node by node. It is not
// safe for concurrent use.
type Result struct {
	driver  string
	nodes   int
	sha     string // the first SHA-1 reported
	shaAddr string // the node that reported sha
	fails   []error
}

// New returns an empty Result; driver prefixes its error messages.
func New(driver string) *Result { return &Result{driver: driver} }

// Add records node addr's outcome: the SHA-1 it reported, or err. A SHA-1
// that differs from an earlier node's counts as that node's failure.
func (r *Result) Add(addr, sha string, err error) {
	r.nodes++
	switch {
	case err != nil:
		r.fails = append(r.fails, &nodeError{addr: addr, err: err})
	case r.sha == "":
		r.sha, r.shaAddr = sha, addr
	case sha != r.sha:
		r.fails = append(r.fails, &nodeError{addr: addr, err: fmt.Errorf("returned SHA-1 %s, %s returned %s", sha, r.shaAddr, r.sha)})
	}
}

// SHA returns the SHA-1 when every node added loaded the script; otherwise
// an error that names every failed node with its error and matches each of
// those errors with errors.Is and errors.As. It fails too when no node was
// added.
func (r *Result) SHA() (string, error) {
	switch {
	case r.nodes == 0:
		return "", fmt.Errorf("%s: SCRIPT LOAD: the client knows no master", r.driver)
	case len(r.fails) > 0:
		msgs := make([]string, len(r.fails))
		for i, e := range r.fails {
			msgs[i] = e.Error()
		}
		return "", &loadError{
			msg:  fmt.Sprintf("%s: SCRIPT LOAD failed on %d of %d masters: %s", r.driver, len(r.fails), r.nodes, strings.Join(msgs, "; ")),
			errs: r.fails,
		}
	}
	return r.sha, nil
}

// nodeError is one node's failure.
type nodeError struct {
	addr string
	err  error
}

func (e *nodeError) Error() string { return e.addr + ": " + e.err.Error() }
func (e *nodeError) Unwrap() error { return e.err }

// loadError is a ScriptLoad that failed on some nodes.
type loadError struct {
	msg  string
	errs []error
}

func (e *loadError) Error() string   { return e.msg }
func (e *loadError) Unwrap() []error { return e.errs }
