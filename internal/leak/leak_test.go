package leak

import (
	"strings"
	"testing"
	"time"
)

func TestFindsAndIgnores(t *testing.T) {
	base := IgnoreCurrent()
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		<-stop
	}()
	o := func(o *opts) { o.maxWait = 50 * time.Millisecond }
	err := Find(base, o)
	if err == nil || !strings.Contains(err.Error(), "leak.TestFindsAndIgnores.func1") {
		t.Fatalf("Find missed the blocked goroutine: %v", err)
	}
	if err := Find(base, o, IgnoreAnyFunction("github.com/scriptlock/scriptlock/internal/leak.TestFindsAndIgnores.func1")); err != nil {
		t.Fatalf("IgnoreAnyFunction did not ignore it: %v", err)
	}
	if err := Find(IgnoreCurrent(), o); err != nil {
		t.Fatalf("IgnoreCurrent did not ignore it: %v", err)
	}
	close(stop)
	<-done
	VerifyNone(t, base)
}

func TestRetriesUntilGone(t *testing.T) {
	base := IgnoreCurrent()
	go time.Sleep(100 * time.Millisecond)
	VerifyNone(t, base)
}
