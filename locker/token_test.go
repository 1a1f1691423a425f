package locker_test

import (
	"encoding/base64"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// assertToken checks that tok is 128 bits, base64url without padding.
func assertToken(t testing.TB, tok string) {
	t.Helper()
	b, err := base64.RawURLEncoding.DecodeString(tok)
	if assert.NoError(t, err, "token %q is not base64url", tok) {
		assert.Len(t, b, 16, "token %q is not 128 bits", tok)
	}
}

// assertWaiterID checks a waiter id: a token (its slot, see slots.go), a
// '.' and a sequence number above 0.
func assertWaiterID(t testing.TB, id string) {
	t.Helper()
	slot, seq, ok := strings.Cut(id, ".")
	if !assert.True(t, ok, "waiter id %q: no '.'", id) {
		return
	}
	assertToken(t, slot)
	n, err := strconv.Atoi(seq)
	assert.True(t, err == nil && n > 0, "waiter id %q: sequence %q", id, seq)
}

func TestTokensDistinct(t *testing.T) {
	const n = 1000
	c, f := newClient(t, nil)
	ctx := testCtx(t)
	m := newMutex(t, c, "n", time.Second, nil)
	seen := make(map[string]bool, n)
	for range n {
		l, err := m.TryLock(ctx)
		require.NoError(t, err)
		tok := l.Token()
		b, err := base64.RawURLEncoding.DecodeString(tok)
		require.NoError(t, err, "token %q", tok)
		require.Len(t, b, 16, "token %q", tok)
		require.False(t, seen[tok], "token %q repeated", tok)
		seen[tok] = true
		require.NoError(t, l.Unlock(ctx))
	}
	assert.Len(t, seen, n)
	for _, a := range f.runs("acquire") {
		assert.True(t, seen[a.args[1]], "ARGV[2] %q (the call id) is a lease token", a.args[1])
		assert.Empty(t, a.args[0], "without Owner ARGV[1] is '': the token is the call id")
	}

	claims := make(map[string]bool, n)
	for range n {
		_, err := c.Claim(ctx, "k", time.Second)
		require.NoError(t, err)
	}
	for _, r := range f.runs("claim") {
		assertToken(t, r.args[0])
		claims[r.args[0]] = true
	}
	assert.Len(t, claims, n, "claim tokens are distinct")
}
