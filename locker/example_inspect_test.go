package locker_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"

	"github.com/scriptlock/scriptlock/drivers/goredis"
	"github.com/scriptlock/scriptlock/locker"
)

func ExampleClient_Inspect() {
	rdb := redis.NewClient(&redis.Options{Addr: os.Getenv("REDIS_ADDR"), ContextTimeoutEnabled: true}) // "" is localhost:6379
	defer rdb.Close()
	locks, err := locker.New(goredis.New(rdb), nil)
	if err != nil {
		panic(err)
	}
	defer locks.Close()
	ctx := context.Background()

	m, err := locks.NewMutex("report:inspect", time.Minute, nil)
	if err != nil {
		panic(err)
	}
	lease, err := m.TryLock(ctx)
	if err != nil {
		panic(err)
	}
	defer lease.Unlock(ctx)

	st, err := locks.Inspect(ctx, "report:inspect")
	if err != nil {
		panic(err)
	}
	fmt.Println("held:", st.Mutex.Held, "holds:", st.Mutex.Holds)
	fmt.Println("fence is the lease's:", st.Mutex.Fence == lease.Fence())
	fmt.Println("ttl at most a minute:", st.Mutex.TTL > 0 && st.Mutex.TTL <= time.Minute)
	// Owners appear as fingerprints, never as their token.
	fmt.Println("owner is the lease's fingerprint:", st.Mutex.Owner == locker.Fingerprint(lease.Token()))
	fmt.Println("queued:", st.Mutex.Queue, "readers:", st.RW.Readers, "writer:", st.RW.Writer)
	// Output:
	// held: true holds: 1
	// fence is the lease's: true
	// ttl at most a minute: true
	// owner is the lease's fingerprint: true
	// queued: 0 readers: 0 writer: false
}

func TestLockName(t *testing.T) {
	c, err := locker.New(noCallScripter{}, &locker.Options{Prefix: "p:"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, name := range []string{"a", "invoice:42", "{x}", "%7B", "100%", "a}b{c", " "} {
		for _, suffix := range []string{"", ":q", ":qx", ":x", ":rw", ":rwr"} {
			got, ok := c.LockName(c.Key(name) + suffix)
			assert.True(t, ok, "LockName(Key(%q)+%q)", name, suffix)
			assert.Equal(t, name, got, "LockName(Key(%q)+%q)", name, suffix)
		}
	}
	for _, key := range []string{"p:{a}:claim", "q:{a}", "p:a", "p:{}", "p:{a}:wake", "p:{a", "p:{%zz}", "p:{a}x"} {
		_, ok := c.LockName(key)
		assert.False(t, ok, "LockName(%q)", key)
	}
}

func TestFingerprint(t *testing.T) {
	// The first 8 hex digits of SHA-1, as redis.sha1hex computes them.
	assert.Equal(t, "a9993e36", locker.Fingerprint("abc"))
	assert.Len(t, locker.Fingerprint(""), locker.FingerprintLen)
}

// noCallScripter is a Scripter for tests that send nothing.
type noCallScripter struct{}

func (noCallScripter) EvalSha(context.Context, string, []string, []string) (any, error) {
	return nil, fmt.Errorf("noCallScripter: no calls expected")
}
func (noCallScripter) Eval(context.Context, string, []string, []string) (any, error) {
	return nil, fmt.Errorf("noCallScripter: no calls expected")
}
func (noCallScripter) ScriptLoad(context.Context, string) (string, error) {
	return "", fmt.Errorf("noCallScripter: no calls expected")
}
