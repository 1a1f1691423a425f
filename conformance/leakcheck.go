package conformance

import (
	"runtime"
	"strings"
	"testing"
	"time"
)

// ownPackages are the packages whose goroutines must not outlive a case:
// the core and the drivers (their pub/sub loops). The clients' own
// goroutines (connection pools, background refreshes) are theirs to manage.
var ownPackages = []string{
	"github.com/scriptlock/scriptlock/locker.",
	"github.com/scriptlock/scriptlock/drivers/",
}

// checkGoroutines fails t if, after a grace period of up to 3s, a goroutine
// other than the caller's still runs code of ownPackages. It runs at the
// end of every case, after the case's clients were closed.
func checkGoroutines(t *testing.T) {
	t.Helper()
	var leaked []string
	for deadline := time.Now().Add(3 * time.Second); ; {
		leaked = ownGoroutines()
		if len(leaked) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if len(leaked) > 0 {
		t.Errorf("goroutine leak: %d goroutine(s) of scriptlock still running after the case:\n%s", len(leaked), strings.Join(leaked, "\n\n"))
	}
}

// ownGoroutines returns the stacks of other goroutines that run code of
// ownPackages.
func ownGoroutines() []string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	stacks := strings.Split(string(buf), "\n\n")
	var out []string
	for _, s := range stacks[1:] { // the first is the caller's
		for _, p := range ownPackages {
			if strings.Contains(s, p) {
				out = append(out, s)
				break
			}
		}
	}
	return out
}
