package conformance

import (
	"strings"
	"testing"
	"time"

	"github.com/scriptlock/scriptlock/locker"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ACLCommands are the commands a Redis ACL user of scriptlock needs: the
// three script commands, sharded pub/sub for wake-ups, the commands the
// scripts run, and what the clients send to connect and to learn a
// Cluster's layout. Grant them with key and channel patterns for the
// Client's prefix: ACL SETUSER <user> on ><password> ~<prefix>*
// &<prefix>* followed by these.
var ACLCommands = []string{
	// Script commands and wake-ups.
	"+evalsha", "+eval", "+script|load", "+ssubscribe", "+sunsubscribe",
	// Commands inside the scripts.
	"+hget", "+hmget", "+hset", "+hsetnx", "+hdel", "+hlen", "+hexists", "+hincrby", "+hgetall", "+hkeys",
	"+get", "+set", "+del", "+exists", "+pexpire", "+pttl", "+time",
	"+zadd", "+zrange", "+zrangebyscore", "+zrevrange", "+zcount", "+zrem", "+zremrangebyscore", "+zscore",
	"+persist", "+spublish",
	// Options.Ack: WAIT after a script, on its connection (with Fsync,
	// grant +waitaof too: Redis 7.2 and later know it).
	"+wait",
	// Connection set-up and Cluster discovery by the clients.
	"+hello", "+auth", "+ping", "+client|setname",
	"+cluster|slots", "+cluster|shards", "+cluster|nodes", "+readonly", "+command",
}

var aclCases = []testCase{
	{
		name:      "ACL/LeastPrivilege",
		needs:     "creates and deletes an ACL user on every node (ACL SETUSER, ACL DELUSER)",
		rule:      "A Redis ACL user (made for the case with a random name and password, deleted after it) allowed only the Client's key and channel prefix and the commands in ACLCommands can lock, wait, extend, unlock and claim, take read and write locks, and acquire, extend and release semaphore permits (SetPermits too); a Client whose prefix lies outside the pattern fails with NOPERM and holds nothing.",
		check:     checkACL,
		exclusive: "creates an ACL user on every node (ACL SETUSER, ACL SAVE)",
	},
}

// aclTTL is the TTL of the ACL rule's leases, and what it extends them to:
// the rule is about permissions, not expiry, so its leases must not expire
// between two of its calls on a slow machine.
const aclTTL = 30 * time.Second

func checkACL(t *testing.T, e *env) {
	if !e.d.driver.authSupport() {
		e.notApplicable("driver %s declares no ACL support (Driver.Authenticated and Driver.Connect are nil)", e.d.driver.Name)
	}
	// A fresh user with a random password, deleted after the case.
	user, pw := e.randomACLUser()
	rules := append([]string{"~" + e.prefix + "*", "&" + e.prefix + "*"}, e.aclCommands()...)
	require.NoError(t, e.d.admin.CreateACLUser(e.ctx, user, pw, rules...), "call: admin ACL SETUSER %s <password> %v", user, rules)
	s := e.d.driver.authenticated(t, e.d.conn, user, pw)

	c := e.clientOn(s, nil)
	m := e.mutex(c, "acl", aclTTL, &locker.MutexOptions{FIFO: true, AutoRefresh: true})
	l, err := m.Lock(e.ctx)
	require.NoError(t, err, "call: Lock as the ACL user")
	got := lockAsync(e.ctx, m) // a waiter: subscribes to the wake channel
	time.Sleep(50 * time.Millisecond)
	require.NoError(t, l.Extend(e.ctx, aclTTL), "call: Extend as the ACL user")
	_, err = l.TTL(e.ctx)
	require.NoError(t, err, "call: TTL as the ACL user")
	require.NoError(t, l.Unlock(e.ctx), "call: Unlock as the ACL user")
	r := <-got
	require.NoError(t, r.err, "call: waiter Lock as the ACL user")
	require.NoError(t, r.l.Unlock(e.ctx), "call: waiter Unlock as the ACL user")
	rw := e.rw(c, "acl-rw", aclTTL, nil)
	rl, err := rw.RLock(e.ctx)
	require.NoError(t, err, "call: RLock as the ACL user")
	require.NoError(t, rl.Extend(e.ctx, aclTTL), "call: read lease Extend as the ACL user")
	require.NoError(t, rl.Unlock(e.ctx), "call: read lease Unlock as the ACL user")
	wl, err := rw.Lock(e.ctx)
	require.NoError(t, err, "call: write Lock as the ACL user")
	rl, err = rw.Downgrade(e.ctx, wl)
	require.NoError(t, err, "call: Downgrade as the ACL user")
	require.NoError(t, rl.Unlock(e.ctx), "call: Unlock after Downgrade as the ACL user")
	sem := e.sem(c, "acl-sem", 2, aclTTL, &locker.SemaphoreOptions{FIFO: true})
	sl, err := sem.Acquire(e.ctx, 2)
	require.NoError(t, err, "call: semaphore Acquire as the ACL user")
	require.NoError(t, sem.SetPermits(e.ctx, 3), "call: SetPermits as the ACL user")
	require.NoError(t, sl.Extend(e.ctx, aclTTL), "call: semaphore Extend as the ACL user")
	_, err = sl.TTL(e.ctx)
	require.NoError(t, err, "call: semaphore TTL as the ACL user")
	require.NoError(t, sl.Unlock(e.ctx), "call: semaphore Unlock as the ACL user")
	require.NoError(t, sem.SetPermits(e.ctx, 0), "call: SetPermits(0) as the ACL user")
	first, err := c.Claim(e.ctx, "acl-claim", time.Second)
	require.NoError(t, err, "call: Claim as the ACL user")
	assert.True(t, first, "call: Claim as the ACL user on a fresh key")

	outside, err := locker.New(s, &locker.Options{Prefix: "outside:" + e.prefix})
	require.NoError(t, err, "call: locker.New with a prefix outside the ACL pattern")
	defer outside.Close()
	om, err := outside.NewMutex("acl", time.Second, nil)
	require.NoError(t, err, "call: NewMutex outside the pattern")
	ol, err := om.TryLock(e.ctx)
	require.Error(t, err, "call: TryLock outside the ACL key pattern")
	assert.Nil(t, ol, "call: TryLock outside the ACL key pattern: lease")
	assert.True(t, strings.Contains(err.Error(), "NOPERM"), "call: TryLock outside the ACL key pattern: got %v, want a NOPERM error", err)
	_, err = outside.Claim(e.ctx, "k", time.Second)
	assert.ErrorContains(t, err, "NOPERM", "call: Claim outside the ACL key pattern")
}
