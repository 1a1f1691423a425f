package conformance

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// ACLCommandsPlainPubSub is [ACLCommands] for a server without sharded
// pub/sub (Redis before 7.0): there the scripts publish with PUBLISH and
// the drivers subscribe with SUBSCRIBE, so a user needs +publish,
// +subscribe and +unsubscribe instead of +spublish, +ssubscribe and
// +sunsubscribe, which such a server's ACL SETUSER rejects as unknown.
var ACLCommandsPlainPubSub = plainPubSubCommands(ACLCommands)

func plainPubSubCommands(cmds []string) []string {
	plain := map[string]string{"+spublish": "+publish", "+ssubscribe": "+subscribe", "+sunsubscribe": "+unsubscribe"}
	out := make([]string, 0, len(cmds))
	for _, c := range cmds {
		if p, ok := plain[c]; ok {
			c = p
		}
		out = append(out, c)
	}
	return out
}

// aclCommands returns the commands the ACL rule grants on the deployment's
// server: ACLCommands, or ACLCommandsPlainPubSub where the server has no
// sharded pub/sub.
func (e *env) aclCommands() []string {
	e.t.Helper()
	if e.shardedPubSub() {
		return ACLCommands
	}
	e.t.Logf("the server has no sharded pub/sub (SSUBSCRIBE): granting ACLCommandsPlainPubSub")
	return ACLCommandsPlainPubSub
}

// shardedPubSub reports whether the deployment's server knows SSUBSCRIBE
// (Redis and Valkey 7.0 and later), asking COMMAND INFO on the node of the
// case's prefix.
func (e *env) shardedPubSub() bool {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(e.ctx, 5*time.Second)
	defer cancel()
	ok, err := shardedPubSub(ctx, e.d.admin, e.prefix)
	require.NoError(e.t, err, "call: admin COMMAND INFO SSUBSCRIBE")
	return ok
}

// shardedPubSub asks COMMAND INFO SSUBSCRIBE on a's node of key.
func shardedPubSub(ctx context.Context, a admin, key string) (bool, error) {
	v, err := a.Do(ctx, key, "COMMAND", "INFO", "SSUBSCRIBE")
	info, _ := v.([]any)
	return err == nil && len(info) == 1 && info[0] != nil, err
}

// logServer logs the product and version of the deployment's server, as
// HELLO 2 reports them (a command every user may send), so that a run's
// output names the server it certified, and returns them ("Redis
// 7.0.15"), or "" when HELLO fails.
func logServer(t *testing.T, a admin, key string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	v, err := a.Do(ctx, key, "HELLO", "2")
	if err != nil {
		t.Logf("server: HELLO 2 failed: %v", err)
		return ""
	}
	kv, _ := v.([]any)
	var product, version string
	for i := 0; i+1 < len(kv); i += 2 {
		k, _ := kv[i].(string)
		val, _ := kv[i+1].(string)
		switch k {
		case "server":
			product = val
		case "version":
			version = val
		}
	}
	switch product {
	case "redis":
		product = "Redis"
	case "valkey":
		product = "Valkey"
	}
	server := strings.TrimSpace(product + " " + version)
	t.Logf("server: %s", server)
	return server
}
