package conformance

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/scriptlock/scriptlock/internal/redisserver"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The suite as a guest on a server it did not start (SCRIPTLOCK_REDIS_ADDR
// or SCRIPTLOCK_CLUSTER_ADDRS): every setting a rule changes is read first
// and restored by a t.Cleanup (setConfig), ACL users get random names and
// passwords and are deleted by a t.Cleanup (randomACLUser), and a rule that
// needs a server the suite owns (needsOwnedServer) or a command the server
// refuses (needsDebug) is reported not applicable (t.Skipf) with the
// reason, never failed.

// notApplicable skips the case as not applicable (t.Skip), with the
// reason "not applicable: " and the formatted message, which it also
// records for the deployment's recorder (tests of the suite itself).
func (e *env) notApplicable(format string, args ...any) {
	e.t.Helper()
	e.naReason = fmt.Sprintf(format, args...)
	e.t.Skip("not applicable: " + e.naReason)
}

// needsOwnedServer skips the case, as not applicable, on a deployment the
// suite did not start; what says what the rule does that only such a
// deployment may undergo ("restarts a node", "moves a slot to another
// master"). It returns on a deployment the suite started.
func (e *env) needsOwnedServer(what string) {
	e.t.Helper()
	if e.d.owned {
		return
	}
	env := redisserver.EnvRedisAddr
	if e.d.admin.cluster() != nil {
		env = redisserver.EnvClusterAddrs
	}
	e.notApplicable("this rule %s, which the suite does only to servers it started itself (%s names a server it did not start)", what, env)
}

// needsDebug skips the case, as not applicable, when the deployment's
// server refuses DEBUG (from Redis 7.0 unless it runs with
// enable-debug-command local or yes; a managed service, a renamed command
// or an ACL user without +debug refuse it too). It learns that once per
// deployment by sending a harmless DEBUG SLEEP 0 to the node of the case's
// prefix and reading the refusal; it fails the case when that call fails
// other than by the server's refusal.
func (e *env) needsDebug() {
	e.t.Helper()
	if err := e.debugRefusal(); err != nil {
		e.notApplicable("this rule stalls the server with DEBUG SLEEP, which it refuses: %q (on Redis 7.0 and later start the server with --enable-debug-command local, and give the admin user +debug)", err.Error())
	}
}

// debugRefusal returns the server's refusal of DEBUG SLEEP 0, or nil when
// it ran; asked once per deployment.
func (e *env) debugRefusal() error {
	e.t.Helper()
	e.d.debugMu.Lock()
	defer e.d.debugMu.Unlock()
	if e.d.debugKnown {
		return e.d.debugErr
	}
	ctx, cancel := context.WithTimeout(e.ctx, 5*time.Second)
	defer cancel()
	_, err := e.d.admin.Do(ctx, e.prefix, "DEBUG", "SLEEP", "0")
	var re *redisserver.RedisError
	if err != nil && !errors.As(err, &re) {
		require.NoError(e.t, err, "call: admin DEBUG SLEEP 0 (does the server allow DEBUG?)")
	}
	e.d.debugKnown = true
	if re != nil {
		e.d.debugErr = re
		e.t.Logf("call: admin DEBUG SLEEP 0: refused: %v", re)
	}
	return e.d.debugErr
}

// configGet returns the value of the server parameter param on s (CONFIG
// GET), or the server's refusal (a managed service or a user without
// +config may refuse CONFIG); other failures fail the case.
func (e *env) configGet(ctx context.Context, s *redisserver.Server, param string) (string, *redisserver.RedisError) {
	e.t.Helper()
	v, err := s.Do(ctx, "CONFIG", "GET", param)
	var re *redisserver.RedisError
	if errors.As(err, &re) {
		return "", re
	}
	require.NoError(e.t, err, "call: admin CONFIG GET %s on %s", param, s.Addr)
	kv, _ := v.([]any)
	if len(kv) != 2 {
		// An unknown parameter: an empty array.
		return "", &redisserver.RedisError{Msg: fmt.Sprintf("CONFIG GET %s: got %#v, want the parameter and its value", param, v)}
	}
	val, _ := kv[1].(string)
	return val, nil
}

// setConfig sets the server parameter param to value (CONFIG SET) on the
// node of key after reading its value there (CONFIG GET), and registers a
// t.Cleanup that sets it back to that value on that node, whatever the
// case did in between (a failure, a panic, a skip), unless it reads the
// old value there already; a failed restore fails the case, naming the
// value to restore by hand. It returns the old value. It skips the case,
// as not applicable, when the server refuses CONFIG GET or CONFIG SET.
func (e *env) setConfig(key, param, value string) (old string) {
	e.t.Helper()
	node, err := e.d.admin.Node(e.ctx, key)
	require.NoError(e.t, err, "call: admin node of %q", key)
	old, refused := e.configGet(e.ctx, node, param)
	if refused != nil {
		e.notApplicable("this rule sets %s with CONFIG SET, and the server refuses CONFIG GET %s: %q", param, param, refused.Msg)
	}
	e.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if now, refused := e.configGet(ctx, node, param); refused == nil && now == old {
			return
		}
		_, err := node.Do(ctx, "CONFIG", "SET", param, old)
		assert.NoError(e.t, err, "call: admin CONFIG SET %s %q on %s (restoring what the case found): set it back by hand", param, old, node.Addr)
	})
	_, err = node.Do(e.ctx, "CONFIG", "SET", param, value)
	var re *redisserver.RedisError
	if errors.As(err, &re) {
		e.notApplicable("this rule needs CONFIG SET %s %s, which the server refuses: %q", param, value, re.Msg)
	}
	require.NoError(e.t, err, "call: admin CONFIG SET %s %s on %s (was %q)", param, value, node.Addr, old)
	e.t.Logf("CONFIG SET %s %s on %s (was %q; restored after the case)", param, value, node.Addr, old)
	return old
}

// randomACLUser returns a fresh ACL user name, "sltest-acl-" and 12 random
// hex digits, and a random password of 128 bits (32 hex digits), and
// registers a t.Cleanup that deletes the user on every node (ACL DELUSER),
// whatever the case did meanwhile; it is registered before the user is
// made, so a user made on some nodes only is deleted too.
func (e *env) randomACLUser() (user, password string) {
	e.t.Helper()
	var n [6]byte
	var pw [16]byte
	_, _ = rand.Read(n[:])
	_, _ = rand.Read(pw[:])
	user, password = "sltest-acl-"+hex.EncodeToString(n[:]), hex.EncodeToString(pw[:])
	e.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		assert.NoError(e.t, e.d.admin.DeleteACLUser(ctx, user), "call: admin ACL DELUSER %s on every node (delete it by hand)", user)
	})
	return user, password
}
