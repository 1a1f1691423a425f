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
//     A RESP3 reply (a client that speaks RESP3) becomes what RESP2 sends
//     for it: a boolean true 1 and false nil, a double or big number its
//     text, a verbatim string its text without the "txt:" prefix, a set an
//     []any, a map an []any of key, value, key, value. An error reply
//     nested in an array is the call's error. A reply the driver cannot
//     translate is an error matching ErrUnexpectedReply.
//   - Every error reply of the server comes back as a *ServerError (built
//     with NewServerError from the client's own typed error, which it
//     wraps), so that the core learns what happened from its Code: a
//     NOSCRIPT reply then matches ErrNoScript, a passing state (LOADING,
//     TRYAGAIN, CLUSTERDOWN, MOVED, ...) is retried, any other code means
//     the call did not run. Any other error (a broken connection, ctx
//     ended, an error the driver did not mark) is an unknown outcome: the
//     call may have run. A driver that cannot tell must not mark it.
//   - ScriptLoad returns the lowercase hex SHA-1 of src. It makes the script
//     available wherever EvalSha for any key may be routed: it sends SCRIPT
//     LOAD to every master (primary) the client knows — on a single server
//     that server, on a Cluster every master of the client's slot map, never
//     a replica — one node after the other. It tries every one of them
//     even when some fail, and returns the SHA-1 only when every
//     node loaded the script (and all report the same SHA-1); otherwise it
//     returns an error that names each failed node with its error. It never
//     retries a node (see the re-send rule below). Nodes loaded before or
//     after a failure keep the script. When ctx ends midway, ScriptLoad
//     returns promptly with an error matching ctx.Err(), and the nodes that
//     had not answered count as failed. The core treats a failed ScriptLoad
//     as a cache miss, not as the call's failure: while ctx lives it sends
//     the source with Eval instead.
//   - EvalSha and Eval route by keys[0] when the deployment is sharded; all
//     keys of one call share a hash slot.
//   - Every call honours ctx: it returns once ctx is done, with an error
//     for which errors.Is(err, ctx.Err()) holds where the client allows it.
//   - Drivers never retry a script call on their own account (a client's own
//     network retries are tolerated: the core's scripts are written for a
//     call that runs twice).
//   - Re-send rule: a driver may send a command again only when it is
//     certain the command was never written to any connection — for
//     instance when the client hands it another call's failed dial of the
//     connection it was queued for. Once a command may have been written
//     (a write error, a timeout, a broken connection), its outcome is
//     unknown and the error goes back to the core, which owns that case.
//     A call whose ctx is live must not fail with another call's context
//     error: rueidis and valkey-go hand a dial cancelled by one caller's
//     ctx to every call queued for that connection, as context.Canceled,
//     and their drivers send such calls again (the suite does not provoke
//     this; each driver's own test does).
//   - Implementations are safe for concurrent use by multiple goroutines.
//
// In turn, the core never modifies the keys and args slices it passes
// during the call, and never after a call that returned an error (its
// client may still be writing the command, say after ctx ended): a driver
// may hand its client values that refer to their elements instead of
// copies (the in-tree drivers for go-redis and redigo do, to send a call
// without an allocation per argument). Once a call has returned the
// server's reply, the command is sent and answered, and the core may
// reuse the args' backing array (a Mutex's acquire call keeps its
// arguments in the lease it may grant, which then holds the release's):
// a driver must not read keys or args after returning a reply.
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
