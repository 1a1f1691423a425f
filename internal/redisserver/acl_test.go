package redisserver_test

import (
	"strings"
	"testing"

	"github.com/scriptlock/scriptlock/internal/redisserver"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestACL(t *testing.T) {
	t.Parallel()
	s := redisserver.StartStandalone(t)
	ctx := testCtx(t)
	const user, pw = "locker", "s3cret"
	require.NoError(t, s.CreateACLUser(ctx, user, pw, "~lock:*", "+get", "+set", "+evalsha", "+eval", "+script|load", "+ping"))

	got, err := s.DoAs(ctx, user, pw, "SET", "lock:a", "1")
	require.NoError(t, err)
	assert.Equal(t, "OK", got)
	got, err = s.DoAs(ctx, user, pw, "EVAL", "return redis.call('GET', KEYS[1])", "1", "lock:a")
	require.NoError(t, err)
	assert.Equal(t, "1", got)

	// Keys outside the pattern, commands not granted, keys a script names.
	_, err = s.DoAs(ctx, user, pw, "SET", "other:a", "1")
	assertNoPerm(t, err)
	_, err = s.DoAs(ctx, user, pw, "DEL", "lock:a")
	assertNoPerm(t, err)
	_, err = s.DoAs(ctx, user, pw, "FLUSHALL")
	assertNoPerm(t, err)
	_, err = s.DoAs(ctx, user, pw, "EVAL", "return redis.call('GET', KEYS[1])", "1", "other:a")
	assertNoPerm(t, err)
	_, err = s.DoAs(ctx, user, "wrong", "PING")
	assertWrongPass(t, err)
	got, err = s.Do(ctx, "GET", "other:a")
	require.NoError(t, err)
	assert.Nil(t, got, "a refused write leaves nothing")

	// Bad rules come back from Redis; re-creating replaces the user.
	var re *redisserver.RedisError
	require.ErrorAs(t, s.CreateACLUser(ctx, user, pw, "+nosuchcommand"), &re)
	require.NoError(t, s.CreateACLUser(ctx, user, "new", "~lock:*", "+get"))
	_, err = s.DoAs(ctx, user, pw, "PING")
	assertWrongPass(t, err)
	_, err = s.DoAs(ctx, user, "new", "SET", "lock:a", "2")
	assertNoPerm(t, err)

	// Users survive Restart and Kill, as Redis restarted with its ACL file.
	require.NoError(t, s.Kill())
	require.NoError(t, s.Restart(ctx))
	got, err = s.DoAs(ctx, user, "new", "GET", "lock:a")
	require.NoError(t, err)
	assert.Nil(t, got, "data is lost")
	_, err = s.DoAs(ctx, user, "new", "PING")
	assertNoPerm(t, err)

	// A deleted user is gone, and stays gone across Restart; deleting it
	// again is not an error.
	require.NoError(t, s.DeleteACLUser(ctx, user))
	_, err = s.DoAs(ctx, user, "new", "PING")
	assertWrongPass(t, err)
	require.NoError(t, s.DeleteACLUser(ctx, user))
	require.NoError(t, s.Restart(ctx))
	_, err = s.DoAs(ctx, user, "new", "PING")
	assertWrongPass(t, err)
}

// assertNoPerm checks that err is Redis's NOPERM refusal.
func assertNoPerm(t *testing.T, err error) {
	t.Helper()
	var re *redisserver.RedisError
	require.ErrorAs(t, err, &re)
	assert.True(t, strings.HasPrefix(re.Msg, "NOPERM "), re.Msg)
}

// assertWrongPass checks that err is Redis's refusal of a login.
func assertWrongPass(t *testing.T, err error) {
	t.Helper()
	var re *redisserver.RedisError
	require.ErrorAs(t, err, &re)
	assert.True(t, strings.HasPrefix(re.Msg, "WRONGPASS "), re.Msg)
}
