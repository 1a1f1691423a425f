package resptest_test

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"testing"
	"time"

	"github.com/scriptlock/scriptlock/internal/redisserver"
	"github.com/scriptlock/scriptlock/internal/resptest"
	"github.com/scriptlock/scriptlock/locker"
)

var addr string

func TestMain(m *testing.M) { redisserver.Main(m, "resptest", &addr, nil) }

func TestScripter(t *testing.T) {
	ctx := context.Background()
	c := resptest.New(addr)
	defer c.Close()

	src := `return {KEYS[1], tonumber(ARGV[1]), false, {ARGV[2]}, redis.status_reply("OK")}`
	sum := sha1.Sum([]byte(src))
	want := hex.EncodeToString(sum[:])
	if _, err := c.Do(ctx, "SCRIPT", "FLUSH"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.EvalSha(ctx, want, []string{"k"}, []string{"7", "x"}); !errors.Is(err, locker.ErrNoScript) {
		t.Fatalf("EvalSha of an unknown script: %v, want ErrNoScript", err)
	}
	sha, err := c.ScriptLoad(ctx, src)
	if err != nil || sha != want {
		t.Fatalf("ScriptLoad = %q, %v; want %q", sha, err, want)
	}
	r, err := c.EvalSha(ctx, sha, []string{"k"}, []string{"7", "x"})
	if err != nil {
		t.Fatal(err)
	}
	a, ok := r.([]any)
	if !ok || len(a) != 5 || a[0] != "k" || a[1] != int64(7) || a[2] != nil || a[4] != "OK" {
		t.Fatalf("reply %#v", r)
	}
	if inner, ok := a[3].([]any); !ok || len(inner) != 1 || inner[0] != "x" {
		t.Fatalf("nested reply %#v", a[3])
	}
	if _, err := c.Eval(ctx, `return {1, redis.error_reply("BOOM nested")}`, nil, nil); err == nil || errors.Is(err, locker.ErrNoScript) {
		t.Fatalf("a nested error reply must be the call's error (not NOSCRIPT): %v", err)
	}
	if _, err := c.Eval(ctx, `return redis.call("NOSUCHCOMMAND")`, nil, nil); err == nil {
		t.Fatal("a script error must be returned")
	}
	// The connection is still usable after error replies.
	if r, err := c.Do(ctx, "PING"); err != nil || r != "PONG" {
		t.Fatalf("PING = %#v, %v", r, err)
	}
}

func TestContext(t *testing.T) {
	c := resptest.New(addr)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := c.Do(ctx, "BLPOP", "resptest:nothing", 5)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a call whose ctx ends: %v, want context.DeadlineExceeded", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("returned after %v", d)
	}
	if r, err := c.Do(context.Background(), "PING"); err != nil || r != "PONG" {
		t.Fatalf("PING after a cancelled call = %#v, %v", r, err)
	}
}

func TestSubscribe(t *testing.T) {
	ctx := context.Background()
	c := resptest.New(addr)
	defer c.Close()
	ps, err := c.Subscribe(ctx, "SUBSCRIBE", "resptest:ch")
	if err != nil {
		t.Fatal(err)
	}
	defer ps.Close()
	if _, err := c.Do(ctx, "PUBLISH", "resptest:ch", "hello"); err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-ps.Messages():
		if m.Channel != "resptest:ch" || m.Payload != "hello" {
			t.Fatalf("message %+v", m)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no message")
	}
}
