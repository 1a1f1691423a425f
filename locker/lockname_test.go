package locker_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/scriptlock/scriptlock/locker"
	"github.com/stretchr/testify/assert"
)

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
