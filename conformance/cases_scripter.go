package conformance

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/scriptlock/scriptlock/locker"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// scripterCases check the driver contract itself, below the locks.
var scripterCases = []testCase{
	{
		name:  "Scripter/ReplyVocabulary",
		rule:  "EvalSha and Eval translate nil, Lua false, integers, bulk and status strings and nested arrays into nil, int64, string and []any.",
		check: checkReplyVocabulary,
	},
	{
		name:  "Scripter/ServerErrorTyped",
		rule:  "Every error reply of the server comes back as a *locker.ServerError carrying its code: WRONGTYPE (HGET on a string key), NOSCRIPT (EvalSha of an unknown script, also matching locker.ErrNoScript), and the codes of error replies a script returns (NOPERM, LOADING, TRYAGAIN, CLUSTERDOWN); a reply that is not an error is not one.",
		check: checkServerErrorTyped,
	},
	{
		name:  "Scripter/NoScript",
		rule:  "EvalSha of a script the server lacks returns an error matching locker.ErrNoScript; other server errors come back and do not match it.",
		check: checkNoScript,
	},
	{
		name:  "Scripter/ScriptLoadSHA",
		rule:  "ScriptLoad returns the lowercase hex SHA-1 of the source, and the script then runs by SHA for keys in every slot range.",
		check: checkScriptLoadSHA,
	},
	{
		name:      "Scripter/ContextCancel",
		needs:     "pauses every client of the node (CLIENT PAUSE)",
		rule:      "A call with a cancelled context fails, and a call blocked on a paused server returns an error once its context deadline passes.",
		check:     checkContextCancel,
		exclusive: "CLIENT PAUSE stops every client of the node",
	},
	{
		name:  "Scripter/Concurrent",
		rule:  "One Scripter is safe for concurrent use: 32 goroutines x 50 HINCRBY scripts leave exact counts.",
		check: checkScripterConcurrent,
	},
}

func sha1hex(src string) string {
	sum := sha1.Sum([]byte(src))
	return hex.EncodeToString(sum[:])
}

func checkReplyVocabulary(t *testing.T, e *env) {
	k := e.key("vocab")
	cases := []struct {
		src  string
		want any
	}{
		{"return nil", nil},
		{"return false", nil},
		{"return true", int64(1)},
		{"return 42", int64(42)},
		{"return -7", int64(-7)},
		{"return 3.99", int64(3)},
		{"return 'x'", "x"},
		{"return ''", ""},
		{"return redis.status_reply('FINE')", "FINE"},
		{"return redis.call('GET', KEYS[1])", nil},
		{"return {1, 'a', {2, 'b', {}}}", []any{int64(1), "a", []any{int64(2), "b", []any{}}}},
		{"return {}", []any{}},
		{"return {ARGV[1], ARGV[2]}", []any{"a\x00b", "ü"}},
	}
	for _, c := range cases {
		args := []string{"a\x00b", "ü"}
		got, err := e.s.Eval(e.ctx, c.src, []string{k}, args)
		require.NoError(t, err, "call: Eval(%q)", c.src)
		assert.Equal(t, c.want, got, "call: Eval(%q): got %#v, want %#v", c.src, got, c.want)

		sha, err := e.s.ScriptLoad(e.ctx, c.src)
		require.NoError(t, err, "call: ScriptLoad(%q)", c.src)
		got, err = e.s.EvalSha(e.ctx, sha, []string{k}, args)
		require.NoError(t, err, "call: EvalSha(sha of %q)", c.src)
		assert.Equal(t, c.want, got, "call: EvalSha(sha of %q): got %#v, want %#v", c.src, got, c.want)
	}
}

func checkNoScript(t *testing.T, e *env) {
	k := e.key("noscript")
	src := fmt.Sprintf("return '%s never loaded'", e.prefix)
	_, err := e.s.EvalSha(e.ctx, sha1hex(src), []string{k}, nil)
	require.Error(t, err, "call: EvalSha(unknown sha)")
	assert.True(t, errors.Is(err, locker.ErrNoScript), "call: EvalSha(unknown sha): got %v, want an error matching locker.ErrNoScript", err)

	_, err = e.s.Eval(e.ctx, "return redis.error_reply('BOOM custom failure')", []string{k}, nil)
	require.Error(t, err, "call: Eval(error_reply)")
	assert.False(t, errors.Is(err, locker.ErrNoScript), "call: Eval(error_reply): got %v, which matches ErrNoScript", err)
	assert.Contains(t, err.Error(), "BOOM custom failure", "call: Eval(error_reply): the server's message must come back")

	_, err = e.s.Eval(e.ctx, "return redis.call('SET', KEYS[1], '1')", []string{k}, nil)
	require.NoError(t, err, "call: Eval(SET)")
	_, err = e.s.Eval(e.ctx, "return redis.call('HGET', KEYS[1], 'f')", []string{k}, nil)
	require.Error(t, err, "call: Eval(HGET on a string key)")
	assert.Contains(t, err.Error(), "WRONGTYPE", "call: Eval(HGET on a string key): got %v, want the WRONGTYPE error", err)
}

func checkScriptLoadSHA(t *testing.T, e *env) {
	src := fmt.Sprintf("return {KEYS[1], '%s'}", e.prefix)
	sha, err := e.s.ScriptLoad(e.ctx, src)
	require.NoError(t, err, "call: ScriptLoad")
	assert.Equal(t, sha1hex(src), sha, "call: ScriptLoad: got %q, want the lowercase SHA-1 %q", sha, sha1hex(src))
	// 64 tags spread over the slot space, so every master of a Cluster is hit.
	for i := range 64 {
		k := e.key("slot" + strconv.Itoa(i))
		got, err := e.s.EvalSha(e.ctx, sha, []string{k}, nil)
		require.NoError(t, err, "call: EvalSha(%s) for key %q", sha, k)
		assert.Equal(t, []any{k, e.prefix}, got, "call: EvalSha for key %q", k)
	}
}

func checkContextCancel(t *testing.T, e *env) {
	k := e.key("ctx")
	ctx, cancel := context.WithCancel(e.ctx)
	cancel()
	_, err := e.s.Eval(ctx, "return 1", []string{k}, nil)
	assert.Error(t, err, "call: Eval with a cancelled ctx: got nil error, want one")
	_, err = e.s.EvalSha(ctx, sha1hex("return 1"), []string{k}, nil)
	assert.Error(t, err, "call: EvalSha with a cancelled ctx: got nil error, want one")

	// Pause the key's node (WRITE mode holds every script); a call with a
	// short deadline must give up rather than wait for the pause to end.
	_, err = e.d.admin.Do(e.ctx, k, "CLIENT", "PAUSE", "3000", "WRITE")
	require.NoError(t, err, "call: admin CLIENT PAUSE 3000 WRITE")
	defer func() {
		_, err := e.d.admin.Do(e.ctx, k, "CLIENT", "UNPAUSE")
		assert.NoError(t, err, "call: admin CLIENT UNPAUSE")
	}()
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(e.ctx, 100*time.Millisecond)
		defer cancel()
		_, err := e.s.Eval(ctx, "return 1", []string{k}, nil)
		done <- err
	}()
	select {
	case err := <-done:
		assert.Error(t, err, "call: Eval on a paused server with a 100ms deadline: got nil, want an error")
	case <-time.After(2500 * time.Millisecond):
		t.Fatal("call: Eval on a paused server with a 100ms deadline: still blocked while the pause lasts; want it to return at its deadline")
	}
}

func checkScripterConcurrent(t *testing.T, e *env) {
	src := "return redis.call('HINCRBY', KEYS[1], 'n', 1)"
	sha, err := e.s.ScriptLoad(e.ctx, src)
	require.NoError(t, err, "call: ScriptLoad")
	const workers, rounds = 32, 50
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k := e.key("conc" + strconv.Itoa(w%4))
			for range rounds {
				if _, err := e.s.EvalSha(e.ctx, sha, []string{k}, nil); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err, "call: concurrent EvalSha(HINCRBY)")
	}
	for i := range 4 {
		k := e.key("conc" + strconv.Itoa(i))
		got, err := e.s.Eval(e.ctx, "return tonumber(redis.call('HGET', KEYS[1], 'n'))", []string{k}, nil)
		require.NoError(t, err, "call: Eval(HGET %s n)", k)
		assert.Equal(t, int64(workers/4*rounds), got, "call: HGET %s n after %d HINCRBYs", k, workers/4*rounds)
	}
}

func checkServerErrorTyped(t *testing.T, e *env) {
	k := e.key("typed")
	typed := func(err error, code, call string) {
		t.Helper()
		var se *locker.ServerError
		if assert.True(t, errors.As(err, &se), "call: %s: got %v (%T), want a *locker.ServerError", call, err, err) &&
			!(code == "WRONGTYPE" && strings.Contains(se.Msg, "WRONGTYPE")) {
			// Before Redis 7 a script's error reaches the caller inside
			// "ERR Error running script ...: WRONGTYPE ...": refused all
			// the same, whatever the first word.
			assert.Equal(t, code, se.Code, "call: %s: the ServerError's Code", call)
		}
		assert.Equal(t, code == "NOSCRIPT", errors.Is(err, locker.ErrNoScript), "call: %s: errors.Is(err, locker.ErrNoScript)", call)
	}
	_, err := e.s.Eval(e.ctx, "return redis.call('SET', KEYS[1], 'v')", []string{k}, nil)
	require.NoError(t, err, "call: Eval(SET)")
	_, err = e.s.Eval(e.ctx, "return redis.call('HGET', KEYS[1], 'f')", []string{k}, nil)
	typed(err, "WRONGTYPE", "Eval(HGET on a string key)")
	src := fmt.Sprintf("return '%s never loaded (typed)'", e.prefix)
	_, err = e.s.EvalSha(e.ctx, sha1hex(src), []string{k}, nil)
	typed(err, "NOSCRIPT", "EvalSha(unknown sha)")
	for _, code := range []string{"NOPERM", "LOADING", "TRYAGAIN", "CLUSTERDOWN"} {
		// A client may retry a passing state on its own for a while: the
		// call has its own deadline.
		ctx, cancel := context.WithTimeout(e.ctx, 10*time.Second)
		_, err = e.s.Eval(ctx, "return redis.error_reply(ARGV[1])", []string{k}, []string{code + " returned by the conformance suite's script"})
		cancel()
		typed(err, code, "Eval(error_reply "+code+")")
	}
	r, err := e.s.Eval(e.ctx, "return redis.status_reply('LOADING is only a status')", []string{k}, nil)
	require.NoError(t, err, "call: Eval(status_reply)")
	assert.Equal(t, "LOADING is only a status", r, "call: Eval(status_reply)")
}
