package locker

import "context"

// Batcher is an optional interface a Scripter may implement: several
// EVALSHA calls sent together, in one round trip per node where the client
// can pipeline. The core uses it for auto-refresh, whose refreshes fall due
// together; without it each refresh is its own EvalSha call.
type Batcher interface {
	// EvalShaBatch runs calls, each as EvalSha would (routed by its first
	// key; replies and errors as EvalSha returns them, ErrNoScript
	// included), and returns one result per call, in order. The calls are
	// independent: one failing does not fail the others, and they may run
	// in any order or concurrently. It blocks until every call has a
	// result or ctx is done (the calls without a reply then fail with an
	// error matching ctx.Err(): their outcome is unknown). It follows the
	// Scripter rules, the re-send rule included.
	EvalShaBatch(ctx context.Context, calls []ScriptCall) []ScriptResult
}

// ScriptCall is one EVALSHA of a batch.
type ScriptCall struct {
	SHA1 string
	Keys []string
	Args []string
}

// ScriptResult is the outcome of one ScriptCall: Reply and Err as EvalSha
// returns them.
type ScriptResult struct {
	Reply any
	Err   error
}
