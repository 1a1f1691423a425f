package locker

import (
	"context"
	"crypto/sha1"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

//go:embed lua/*.lua
var luaFS embed.FS

// script is one embedded Lua script with its SHA-1.
type script struct {
	name string
	src  string
	sha  string
	// readOnly scripts never write, so they are not acknowledged (Ack).
	readOnly bool
}

// allScripts lists every embedded script, for ScriptName.
var allScripts []*script

func mustScript(name string) *script {
	src := assemble(name)
	sum := sha1.Sum([]byte(src))
	s := &script{name: name, src: src, sha: hex.EncodeToString(sum[:])}
	allScripts = append(allScripts, s)
	return s
}

// mustReadOnly is mustScript for a script that only reads.
func mustReadOnly(name string) *script {
	s := mustScript(name)
	s.readOnly = true
	return s
}

// includePrefix marks a line that is replaced by another embedded file:
// Redis has no include, and the scripts share their preludes.
const includePrefix = "-- @include "

// assemble returns the source of lua/<name>.lua with every
// "-- @include <file>" line replaced by that file's text, assembled the
// same way (a prelude may include another); a file already included in
// this script is not included again (its line is dropped), so two
// preludes may both include the one they share.
func assemble(name string) string {
	var out strings.Builder
	include(&out, name+".lua", map[string]bool{})
	return out.String()
}

func include(out *strings.Builder, file string, seen map[string]bool) {
	seen[file] = true
	b, err := luaFS.ReadFile("lua/" + file)
	if err != nil {
		panic("locker: missing embedded script " + file) // a build defect, not user input
	}
	for _, line := range strings.SplitAfter(string(b), "\n") {
		inc, ok := strings.CutPrefix(strings.TrimRight(line, "\n"), includePrefix)
		switch {
		case !ok:
			out.WriteString(line)
		case !seen[inc]:
			include(out, inc, seen)
		}
	}
}

// The scripts, one per file of lua/ but the preludes, by the lock kind
// whose calls run them. Each file's head says its keys, arguments and
// replies.
var (
	// Mutex (a MultiLock's parts are Mutex locks).
	scriptAcquire      = mustScript("acquire")
	scriptMultiAcquire = mustScript("multi_acquire")
	scriptRelease      = mustScript("release")
	scriptExtend       = mustScript("extend")
	scriptPTTL         = mustReadOnly("pttl")
	scriptClaim        = mustScript("claim")
	scriptUnclaim      = mustScript("unclaim")
	scriptDequeue      = mustScript("dequeue")
	scriptAbandon      = mustScript("abandon")

	// RWMutex.
	scriptRWRLock     = mustScript("rw_rlock")
	scriptRWLock      = mustScript("rw_lock")
	scriptRWRelease   = mustScript("rw_release")
	scriptRWExtend    = mustScript("rw_extend")
	scriptRWPTTL      = mustScript("rw_pttl")
	scriptRWDowngrade = mustScript("rw_downgrade")
	scriptRWCancel    = mustScript("rw_cancel")

	// Semaphore.
	scriptSemAcquire = mustScript("sem_acquire")
	scriptSemRelease = mustScript("sem_release")
	scriptSemExtend  = mustScript("sem_extend")
	scriptSemPTTL    = mustScript("sem_pttl")
	scriptSemCancel  = mustScript("sem_cancel")
	scriptSemPermits = mustScript("sem_permits")

	// Election: its terms are Mutex holds with a leader record.
	scriptElectAcquire  = mustScript("elect_acquire")
	scriptElectRelease  = mustScript("elect_release")
	scriptElectExtend   = mustScript("elect_extend")
	scriptElectProclaim = mustScript("elect_proclaim")
	scriptElectLeader   = mustReadOnly("elect_leader")

	// Inspect and ForceRelease (the CLI's).
	scriptInspect  = mustReadOnly("inspect")
	scriptForce    = mustScript("force")
	scriptSemForce = mustScript("sem_force")
)

// run executes s with EVALSHA. When the server lacks the script (the first
// call after SCRIPT FLUSH, a restart or a failover), it loads the script
// and runs it again within the same call; if the node that serves the key
// still lacks it, it falls back to EVAL with the source. A failed SCRIPT
// LOAD (a node of the Cluster unreachable, a replica down, a load refused)
// is not the call's failure either: while ctx lives, run sends EVAL with the
// source at once, which needs only the key's own node. Errors are wrapped
// with the script name; when ctx is done its error is joined in, so
// errors.Is works for both the driver's error and ctx.Err(). When EVAL fails
// after a failed load, the error is EVAL's, with the load's error in its
// text only.
func (c *Client) run(ctx context.Context, s *script, keys, args []string) (any, error) {
	r, err := c.evalSha(ctx, s, keys, args)
	if err == nil {
		return r, nil
	}
	if !errors.Is(err, ErrNoScript) {
		return nil, c.wrap(ctx, s, err)
	}
	c.observe(ctx, Event{Kind: EventReload, Script: s.name})
	sha, lerr := c.s.ScriptLoad(ctx, s.src)
	switch {
	case lerr != nil && ctx.Err() != nil:
		return nil, c.wrap(ctx, s, fmt.Errorf("script load: %w", lerr))
	case lerr != nil:
		r, err = c.eval(ctx, s, keys, args)
		if err != nil {
			return nil, c.wrap(ctx, s, fmt.Errorf("%w (after script load failed: %v)", err, lerr))
		}
		return r, nil
	case sha != s.sha:
		return nil, c.wrap(ctx, s, fmt.Errorf("%w: script load returned sha %q, want %q", ErrUnexpectedReply, sha, s.sha))
	}
	r, err = c.evalSha(ctx, s, keys, args)
	if errors.Is(err, ErrNoScript) {
		r, err = c.eval(ctx, s, keys, args)
	}
	if err != nil {
		return nil, c.wrap(ctx, s, err)
	}
	return r, nil
}

// evalSha runs s by SHA-1, through the Acknowledger when s may write and
// the Client asks for acknowledgement.
func (c *Client) evalSha(ctx context.Context, s *script, keys, args []string) (any, error) {
	if c.acker == nil || s.readOnly {
		return c.s.EvalSha(ctx, s.sha, keys, args)
	}
	r, got, err := c.acker.EvalShaAck(ctx, s.sha, keys, args, c.ack)
	return c.acked(r, got, err)
}

// eval runs s by source, as evalSha does.
func (c *Client) eval(ctx context.Context, s *script, keys, args []string) (any, error) {
	if c.acker == nil || s.readOnly {
		return c.s.Eval(ctx, s.src, keys, args)
	}
	r, got, err := c.acker.EvalAck(ctx, s.src, keys, args, c.ack)
	return c.acked(r, got, err)
}

func (c *Client) wrap(ctx context.Context, s *script, err error) error {
	if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
		err = errors.Join(err, cerr)
	}
	return fmt.Errorf("locker: %s script: %w", s.name, err)
}

// replyInts decodes a reply that must be an array of two integers.
func replyInts(s *script, r any) ([2]int64, error) {
	var out [2]int64
	err := replyIntArray(s, r, out[:], len(out))
	return out, err
}

// replyIntArray decodes a reply that must be an array of at least min and
// at most len(out) integers into out.
func replyIntArray(s *script, r any, out []int64, min int) error {
	a, ok := r.([]any)
	if !ok || len(a) < min || len(a) > len(out) {
		return intArrayError(s, r, min, len(out))
	}
	for i, v := range a {
		x, ok := v.(int64)
		if !ok {
			return intArrayError(s, r, min, len(out))
		}
		out[i] = x
	}
	return nil
}

// intArrayError is replyIntArray's error for reply r.
func intArrayError(s *script, r any, min, max int) error {
	n := strconv.Itoa(max)
	if min < max {
		n = strconv.Itoa(min) + " or " + n
	}
	return fmt.Errorf("%w: %s: got %#v, want an array of %s integers", ErrUnexpectedReply, s.name, r, n)
}

// replyInt decodes a reply that must be one integer.
func replyInt(s *script, r any) (int64, error) {
	x, ok := r.(int64)
	if !ok {
		return 0, fmt.Errorf("%w: %s: got %#v, want an integer", ErrUnexpectedReply, s.name, r)
	}
	return x, nil
}

// ScriptName returns the name of the embedded script whose SHA-1 is sha1
// ("acquire", "release", "extend", "rw_lock", ...), or "" when sha1 is none
// of them. Tools and test wrappers that sit between the core and a driver
// use it to tell calls apart; the names are those of the files in lua/.
func ScriptName(sha1 string) string {
	for _, s := range allScripts {
		if s.sha == sha1 {
			return s.name
		}
	}
	return ""
}
