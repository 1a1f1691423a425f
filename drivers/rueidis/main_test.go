package rueidis_test

import (
	"fmt"
	"testing"

	"github.com/scriptlock/scriptlock/internal/leak"
	"github.com/scriptlock/scriptlock/internal/redisserver"
)

// redisAddr is the redis-server TestMain starts for the runnable example
// and the driver's own tests (the conformance suite starts its own).
var redisAddr string

// TestMain starts a server for the example, runs the tests and fails the
// run if a goroutine outlives them: every client must have been closed,
// and no goroutine of the driver may keep running.
func TestMain(m *testing.M) {
	redisserver.Main(m, "rueidis", &redisAddr, func() error {
		// rueidis v1.0.79's cluster client leaves a 5 s sleep behind
		// after a slot refresh, even after Close (it ends by itself).
		if err := leak.Find(leak.IgnoreAnyFunction("github.com/redis/rueidis.(*clusterClient)._refresh.func2")); err != nil {
			return fmt.Errorf("goroutines left after the tests: %w", err)
		}
		return nil
	})
}
