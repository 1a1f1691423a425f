package locker_test

// A fake Scripter for the core's unit tests of pure logic. It records every
// call, keeps a SHA cache like a server's script cache (so NOSCRIPT recovery
// can be exercised), and emulates the five embedded scripts in memory,
// keyed by the SHA-1 of the files in lua/ (computed here, independently of
// the core). Real-Redis behaviour is the conformance suite's job.

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/scriptlock/scriptlock/locker"
)

// luaScript is one file of lua/ as read from disk.
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
		if name == "rw_prelude" {
			continue // included by the rw_*.lua scripts, not a script itself
		}
		src := readLua(name)
		m[name] = luaScript{name: name, src: src, sha: sha1Hex(src)}
	}
	return m
}

// readLua reads lua/<name>.lua with every "-- @include <file>" line
// replaced by that file, as the core assembles its scripts.
func readLua(name string) string {
	b, err := os.ReadFile(filepath.Join("lua", name+".lua"))
	if err != nil {
		panic(err)
	}
	var out strings.Builder
	for _, line := range strings.SplitAfter(string(b), "\n") {
		if inc, ok := strings.CutPrefix(strings.TrimSuffix(line, "\n"), "-- @include "); ok {
			ib, err := os.ReadFile(filepath.Join("lua", inc))
			if err != nil {
				panic(err)
			}
			out.Write(ib)
			continue
		}
		out.WriteString(line)
	}
	return out.String()
}

func sha1Hex(s string) string {
	sum := sha1.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}

// errNoScript is what a driver returns for NOSCRIPT.
var errNoScript = fmt.Errorf("NOSCRIPT No matching script. Please use EVAL.: %w", locker.ErrNoScript)

// errBoom is a non-NOSCRIPT server or transport error.
var errBoom = errors.New("fake: connection reset")

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

// fakeScripter implements locker.Scripter in memory.
type fakeScripter struct {
	mu     sync.Mutex
	calls  []call
	cached map[string]bool // SHAs the "server" holds
	forget bool            // EvalSha answers NOSCRIPT even after ScriptLoad
	emu    *emu

	// Optional hooks, all called without f.mu held.
	// fail, when it returns an error, makes EvalSha/Eval return it
	// without running the script.
	fail func(ctx context.Context, c call) error
	// reply, when ok, replaces the emulated reply of a script run.
	reply func(c call) (r any, ok bool)
	// load replaces ScriptLoad's behaviour.
	load func(ctx context.Context, src string) (string, error)
	// after runs after each emulated script run.
	after func(c call, r any)
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
	return &fakeScripter{cached: map[string]bool{}, emu: newEmu()}
}

func (f *fakeScripter) record(c call) {
	c.keys = append([]string(nil), c.keys...)
	c.args = append([]string(nil), c.args...)
	f.mu.Lock()
	f.calls = append(f.calls, c)
	f.mu.Unlock()
}

// Calls returns a copy of the recorded calls.
func (f *fakeScripter) Calls() []call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]call(nil), f.calls...)
}

// count returns the number of recorded calls.
func (f *fakeScripter) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.calls)
}

// reset forgets the recorded calls.
func (f *fakeScripter) reset() {
	f.mu.Lock()
	f.calls = nil
	f.mu.Unlock()
}

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
	if f.fail != nil {
		if err := f.fail(ctx, c); err != nil {
			return nil, err
		}
	}
	f.mu.Lock()
	missing := !f.cached[sha] || f.forget
	f.mu.Unlock()
	if missing {
		return nil, errNoScript
	}
	return f.exec(c)
}

func (f *fakeScripter) Eval(ctx context.Context, src string, keys, args []string) (any, error) {
	sha := sha1Hex(src)
	c := call{op: "eval", name: luaByHash[sha], sha: sha, src: src, keys: keys, args: args}
	f.record(c)
	if f.fail != nil {
		if err := f.fail(ctx, c); err != nil {
			return nil, err
		}
	}
	return f.exec(c)
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

func (f *fakeScripter) exec(c call) (any, error) {
	if c.name == "" {
		return nil, fmt.Errorf("fake: unknown script %s", c.sha)
	}
	var r any
	var err error
	if f.reply != nil {
		if v, ok := f.reply(c); ok {
			r = v
		} else {
			r, err = f.emu.run(c.name, c.keys, c.args)
		}
	} else {
		r, err = f.emu.run(c.name, c.keys, c.args)
	}
	if err == nil && f.after != nil {
		f.after(c, r)
	}
	return r, err
}

// emu is a minimal in-memory emulation of the scripts' replies. Time does
// not pass: a lock lives until a test expires it.
type emu struct {
	mu     sync.Mutex
	locks  map[string]*lockState // by KEYS[1]
	fences map[string]int64      // by the fence key
	claims map[string]string     // claim key -> token
	gone   map[string]bool       // abandoned acquire call ids
}

type lockState struct {
	owner string
	fence int64
	holds map[string]bool
	pttl  int64
}

func newEmu() *emu {
	return &emu{locks: map[string]*lockState{}, fences: map[string]int64{}, claims: map[string]string{}, gone: map[string]bool{}}
}

func (e *emu) run(name string, keys, args []string) (any, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	need := map[string][2]int{"acquire": {6, 5}, "abandon": {3, 5}, "release": {2, 2}, "extend": {2, 3}, "pttl": {2, 2}, "claim": {1, 2}, "dequeue": {4, 1}}[name]
	if len(keys) != need[0] || len(args) != need[1] {
		return nil, fmt.Errorf("fake: %s called with %d keys and %d args, want %v", name, len(keys), len(args), need)
	}
	st := e.locks[keys[0]]
	switch name {
	case "acquire":
		ttl, err := strconv.ParseInt(args[2], 10, 64)
		if err != nil || ttl <= 0 {
			return nil, fmt.Errorf("fake: bad ttl %q", args[2])
		}
		if e.gone[args[4]] {
			return []any{int64(0), int64(0)}, nil
		}
		if st == nil {
			e.fences[keys[1]]++
			e.locks[keys[0]] = &lockState{owner: args[0], fence: e.fences[keys[1]], holds: map[string]bool{args[1]: true}, pttl: ttl}
			return []any{int64(1), e.fences[keys[1]]}, nil
		}
		if st.owner != args[0] {
			return []any{int64(0), st.pttl}, nil
		}
		st.holds[args[1]] = true
		st.pttl = max(st.pttl, ttl)
		return []any{int64(1), st.fence}, nil
	case "release":
		if st == nil {
			return int64(0), nil
		}
		if st.owner != args[0] {
			return int64(-1), nil
		}
		delete(st.holds, args[1])
		if len(st.holds) == 0 {
			delete(e.locks, keys[0])
		}
		return int64(1), nil
	case "extend":
		ttl, err := strconv.ParseInt(args[2], 10, 64)
		if err != nil || ttl <= 0 {
			return nil, fmt.Errorf("fake: bad ttl %q", args[2])
		}
		switch {
		case st == nil:
			return int64(0), nil
		case st.owner != args[0]:
			return int64(-1), nil
		case !st.holds[args[1]]:
			return int64(0), nil
		}
		if len(st.holds) == 1 || st.pttl < ttl {
			st.pttl = ttl
		}
		return int64(1), nil
	case "pttl":
		switch {
		case st == nil:
			return []any{int64(0), int64(0)}, nil
		case st.owner != args[0]:
			return []any{int64(-1), int64(0)}, nil
		case !st.holds[args[1]]:
			return []any{int64(0), int64(0)}, nil
		}
		return []any{int64(1), st.pttl}, nil
	case "dequeue":
		return int64(0), nil // the emulation has no queue
	case "abandon":
		e.gone[args[2]] = true
		if args[3] != "1" || st == nil || st.owner != args[0] || !st.holds[args[1]] {
			return int64(0), nil
		}
		delete(st.holds, args[1])
		if len(st.holds) == 0 {
			delete(e.locks, keys[0])
		}
		return int64(1), nil
	case "claim":
		if tok, ok := e.claims[keys[0]]; ok && tok != args[0] {
			return int64(0), nil
		}
		e.claims[keys[0]] = args[0]
		return int64(1), nil
	}
	return nil, fmt.Errorf("fake: no emulation for %s", name)
}

// expire drops the lock at key, as if its TTL ran out.
func (e *emu) expire(key string) {
	e.mu.Lock()
	delete(e.locks, key)
	e.mu.Unlock()
}

// seize makes owner hold the lock at key (a new grant) with pttl ms left.
func (e *emu) seize(key, owner string, pttl int64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.fences[key+":fence"]++
	e.locks[key] = &lockState{owner: owner, fence: e.fences[key+":fence"], holds: map[string]bool{owner: true}, pttl: pttl}
}

// owner returns the owner of the lock at key, "" when free.
func (e *emu) owner(key string) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	if st := e.locks[key]; st != nil {
		return st.owner
	}
	return ""
}

// newClient returns a Client on a warm fake.
func newClient(t testing.TB, opts *locker.Options) (*locker.Client, *fakeScripter) {
	t.Helper()
	f := newFake()
	c, err := locker.New(f, opts)
	require.NoError(t, err)
	return c, f
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
