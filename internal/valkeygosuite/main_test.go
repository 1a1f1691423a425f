package valkeygosuite_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the run if any goroutine outlives the tests: every client
// the suite opened must have been closed, and no goroutine of the core or
// the driver may keep running after the calls return.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// valkey-go v1.0.79's cluster client leaves a 5 s sleep behind
		// after a slot refresh, even after Close (upstream; it ends by
		// itself), as rueidis v1.0.79 does.
		goleak.IgnoreAnyFunction("github.com/valkey-io/valkey-go.(*clusterClient)._refresh.func2"),
	)
}
