package locker_test

// A fake Scripter for the core's unit tests of pure logic: it records every
// call, keeps a SHA cache like a server's script cache (so NOSCRIPT
// recovery can be exercised), and answers with canned replies. It does not
// emulate the scripts: what they do is tested against real Redis (the
// *_redis_test.go files and the conformance suite).

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/scriptlock/scriptlock/internal/syncx"
	"github.com/scriptlock/scriptlock/locker"
	"github.com/stretchr/testify/require"
)

// luaScript is one file of lua/ as read from disk, assembled.
type luaScript struct {
	name string // file name without ".lua"
	src  string
	sha  string // lowercase hex SHA-1 of src
}

var (
	luaScripts = mustReadScripts() // by name
	luaByHash  = func() map[string]string {
		m := make(map[string]string, len(luaScripts))
		for n, s := range luaScripts {
			m[s.sha] = n
		}
		return m
	}()
)

func mustReadScripts() map[string]luaScript {
	files, err := filepath.Glob(filepath.Join("lua", "*.lua"))
	if err != nil || len(files) == 0 {
		panic(fmt.Sprintf("reading lua/*.lua: %v (%d files)", err, len(files)))
	}
	m := make(map[string]luaScript, len(files))
	for _, p := range files {
		name := strings.TrimSuffix(filepath.Base(p), ".lua")
		if strings.HasSuffix(name, "_prelude") {
			continue // included by other scripts (rw_*.lua; release, dequeue), not a script itself
		}
		src := locker.AssembleLua(name)
		m[name] = luaScript{name: name, src: src, sha: sha1Hex(src)}
	}
	return m
}

func sha1Hex(s string) string {
	sum := sha1.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}

// Errors a driver may return.
var (
	// errNoScript is what a driver returns for NOSCRIPT.
	errNoScript = locker.NewServerError("NOSCRIPT No matching script. Please use EVAL.", nil)
	// errBoom is an error that is neither a server answer nor a known
	// connection failure: the call's outcome is unknown and it is not
	// retried.
	errBoom = errors.New("fake: i/o failure")
	// errConn is a connection failure (a net.Error): the outcome is unknown
	// and the failure transient.
	errConn = &net.OpError{Op: "read", Net: "tcp", Err: io.ErrUnexpectedEOF}
	// errAnswered is an error reply from the server: the call was refused.
	errAnswered = locker.NewServerError("NOPERM this user has no permissions to run the 'evalsha' command", nil)
)

// call is one recorded Scripter call.
type call struct {
	op   string // "evalsha", "eval" or "load"
	name string // script name resolved from the SHA or source; "" if unknown
	sha  string // the SHA sent (evalsha) or the SHA-1 of the source (eval, load)
	src  string // the source (eval, load)
	keys []string
	args []string
}

func (c call) String() string {
	return fmt.Sprintf("%s(%s) keys=%q args=%q", c.op, c.name, c.keys, c.args)
}

// handler answers one script run instead of the canned reply.
type handler func(ctx context.Context, c call) (any, error)

// fakeScripter implements locker.Scripter in memory.
type fakeScripter struct {
	mu       sync.Mutex
	calls    syncx.Log[call]
	cached   map[string]bool    // SHAs the "server" holds
	forget   bool               // EvalSha answers NOSCRIPT even after ScriptLoad
	handlers map[string]handler // by script name; see handle

	// load, when set, replaces ScriptLoad's behaviour.
	load func(ctx context.Context, src string) (string, error)
}

var _ locker.Scripter = (*fakeScripter)(nil)

// newFake returns a fake whose server already holds every script.
func newFake() *fakeScripter {
	f := newColdFake()
	for _, s := range luaScripts {
		f.cached[s.sha] = true
	}
	return f
}

// newColdFake returns a fake whose server holds no script yet.
func newColdFake() *fakeScripter {
	return &fakeScripter{cached: map[string]bool{}, handlers: map[string]handler{}}
}

// handle makes h answer every later run (EVALSHA or EVAL) of the named
// scripts, before the script cache is consulted; nil restores the canned
// reply. h runs without the fake's lock held.
func (f *fakeScripter) handle(h handler, names ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, n := range names {
		if _, ok := luaScripts[n]; !ok {
			panic("fake: no script " + n)
		}
		if h == nil {
			delete(f.handlers, n)
		} else {
			f.handlers[n] = h
		}
	}
}

// reply makes the named scripts answer r.
func (f *fakeScripter) reply(r any, names ...string) {
	f.handle(func(context.Context, call) (any, error) { return r, nil }, names...)
}

// fail makes the named scripts fail with err.
func (f *fakeScripter) fail(err error, names ...string) {
	f.handle(func(context.Context, call) (any, error) { return nil, err }, names...)
}

// cancelOn returns a handler that ends the caller's context with cancel
// and returns its error, as a driver does whose call was cut off: the
// call's outcome is unknown.
func cancelOn(cancel context.CancelFunc) handler {
	return func(ctx context.Context, _ call) (any, error) {
		cancel()
		<-ctx.Done()
		return nil, ctx.Err()
	}
}

// canned is the reply of a script run without a handler: success.
func canned(c call) any {
	switch c.name {
	case "acquire", "rw_rlock", "rw_lock", "rw_downgrade":
		return []any{int64(1), int64(1000)}
	case "pttl", "rw_pttl":
		return []any{int64(1), int64(1000)}
	case "release", "extend", "claim", "unclaim", "rw_release", "rw_extend", "rw_cancel":
		return int64(1)
	case "abandon", "dequeue":
		return int64(0)
	}
	return fmt.Errorf("fake: unknown script %s", c.sha) // not a reply the core accepts
}

func (f *fakeScripter) record(c call) {
	c.keys = append([]string(nil), c.keys...)
	c.args = append([]string(nil), c.args...)
	f.calls.Add(c)
}

// Calls returns a copy of the recorded calls.
func (f *fakeScripter) Calls() []call { return f.calls.All() }

// count returns the number of recorded calls.
func (f *fakeScripter) count() int { return len(f.calls.All()) }

// reset forgets the recorded calls.
func (f *fakeScripter) reset() { f.calls.Reset() }

// runs returns the recorded script runs (evalsha or eval) of script name.
func (f *fakeScripter) runs(name string) []call {
	var out []call
	for _, c := range f.Calls() {
		if c.op != "load" && c.name == name {
			out = append(out, c)
		}
	}
	return out
}

// ops returns "op:name" for every recorded call, for order assertions.
func (f *fakeScripter) ops() []string {
	var out []string
	for _, c := range f.Calls() {
		out = append(out, c.op+":"+c.name)
	}
	return out
}

func (f *fakeScripter) EvalSha(ctx context.Context, sha string, keys, args []string) (any, error) {
	c := call{op: "evalsha", name: luaByHash[sha], sha: sha, keys: keys, args: args}
	f.record(c)
	f.mu.Lock()
	h := f.handlers[c.name]
	missing := !f.cached[sha] || f.forget
	f.mu.Unlock()
	if h != nil {
		return h(ctx, c)
	}
	if missing {
		return nil, errNoScript
	}
	return canned(c), nil
}

func (f *fakeScripter) Eval(ctx context.Context, src string, keys, args []string) (any, error) {
	sha := sha1Hex(src)
	c := call{op: "eval", name: luaByHash[sha], sha: sha, src: src, keys: keys, args: args}
	f.record(c)
	f.mu.Lock()
	h := f.handlers[c.name]
	f.mu.Unlock()
	if h != nil {
		return h(ctx, c)
	}
	return canned(c), nil
}

func (f *fakeScripter) ScriptLoad(ctx context.Context, src string) (string, error) {
	sha := sha1Hex(src)
	f.record(call{op: "load", name: luaByHash[sha], sha: sha, src: src})
	if f.load != nil {
		return f.load(ctx, src)
	}
	f.mu.Lock()
	f.cached[sha] = true
	f.mu.Unlock()
	return sha, nil
}

// newClient returns a Client on a warm fake; it is closed when the test
// ends.
func newClient(t testing.TB, opts *locker.Options) (*locker.Client, *fakeScripter) {
	t.Helper()
	f := newFake()
	return clientOn(t, f, opts), f
}

// clientOn returns a Client on s, closed when the test ends.
func clientOn(t testing.TB, s locker.Scripter, opts *locker.Options) *locker.Client {
	t.Helper()
	c, err := locker.New(s, opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// newMutex returns a Mutex on c, failing the test on error.
func newMutex(t testing.TB, c *locker.Client, name string, ttl time.Duration, opts *locker.MutexOptions) *locker.Mutex {
	t.Helper()
	m, err := c.NewMutex(name, ttl, opts)
	require.NoError(t, err)
	return m
}

// testCtx returns a context bounded well above any test's expected run time.
func testCtx(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// heldMutex returns a Client on a warm fake, the test's context and a
// lease of the mutex "n" (TTL one minute) taken through them.
func heldMutex(t testing.TB) (*locker.Client, *fakeScripter, context.Context, *locker.Lease) {
	t.Helper()
	c, f := newClient(t, nil)
	ctx := testCtx(t)
	l, err := newMutex(t, c, "n", time.Minute, nil).TryLock(ctx)
	require.NoError(t, err)
	return c, f, ctx, l
}

// failFirst makes f's first call of script fail with errConn (an unknown
// outcome) and answer every later one with reply. It returns the count of
// calls made.
func failFirst(f *fakeScripter, reply any, script string) *atomic.Int32 {
	var tries atomic.Int32
	f.handle(func(context.Context, call) (any, error) {
		if tries.Add(1) == 1 {
			return nil, errConn
		}
		return reply, nil
	}, script)
	return &tries
}
