package locker

import "context"

// Scripter is the driver contract: the three script commands the core
// needs, in a client-neutral form. A driver implements it for one Redis
// client and does nothing else; all policy (script caching, NOSCRIPT
// recovery, retries, deadlines, validation) lives in the core.
//
// A driver translates every reply into nil, int64, string and []any (RESP3
// as RESP2 sends it), returns every error reply of the server as a
// *ServerError (any other error is an unknown outcome: the call may have
// run), routes by keys[0], honours ctx, and never sends a call again once
// it may have been written. ScriptLoad loads on every master the client
// knows. The core never changes keys or args during a call. docs/drivers.md
// states each rule in full; the conformance suite checks them.
type Scripter interface {
	// EvalSha runs the cached script with the given SHA-1.
	EvalSha(ctx context.Context, sha1 string, keys, args []string) (any, error)
	// Eval sends and runs the script source src.
	Eval(ctx context.Context, src string, keys, args []string) (any, error)
	// ScriptLoad caches src on every master the client knows and returns
	// its SHA-1; it fails, naming the failed nodes, unless every one of
	// them loaded it.
	ScriptLoad(ctx context.Context, src string) (sha1 string, err error)
}
