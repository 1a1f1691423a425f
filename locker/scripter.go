package locker

import "context"

// Scripter is the driver contract: the three script commands the core needs,
// in a client-neutral form. A driver for a Redis client implements it and
// does nothing else; all policy (script caching, NOSCRIPT recovery, retries,
// deadlines, validation) lives in the core.
//
// Implementations must follow these rules, which the conformance suite checks:
//
//   - Replies are translated into one vocabulary: nil (a Redis nil or a Lua
//     false), int64, string (bulk and status replies), and []any whose
//     elements are again of this vocabulary. No client types leak through.
//   - An EvalSha for a script the server does not hold returns an error e with
//     errors.Is(e, ErrNoScript). Every other server error comes back
//     unchanged (wrapped is fine) and is not ErrNoScript.
//   - ScriptLoad returns the lowercase hex SHA-1 of src. It makes the script
//     available wherever EvalSha for any key may be routed: on a Cluster,
//     on every master.
//   - EvalSha and Eval route by keys[0] when the deployment is sharded; all
//     keys of one call share a hash slot.
//   - Every call honours ctx: it returns once ctx is done, with an error
//     for which errors.Is(err, ctx.Err()) holds where the client allows it.
//   - Drivers never retry a script call on their own account (a client's own
//     network retries are tolerated: every script of this package is
//     idempotent).
//   - Implementations are safe for concurrent use by multiple goroutines.
type Scripter interface {
	// EvalSha runs the cached script with the given SHA-1.
	EvalSha(ctx context.Context, sha1 string, keys, args []string) (any, error)
	// Eval sends and runs the script source src.
	Eval(ctx context.Context, src string, keys, args []string) (any, error)
	// ScriptLoad caches src on the server(s) and returns its SHA-1.
	ScriptLoad(ctx context.Context, src string) (sha1 string, err error)
}
