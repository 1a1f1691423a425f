package conformance_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/scriptlock/scriptlock/conformance"
	"github.com/scriptlock/scriptlock/internal/testdrivers"
)

// TestConformance certifies every in-tree driver, standalone and Cluster.
func TestConformance(t *testing.T) {
	for _, d := range testdrivers.All() {
		t.Run("driver="+d.Name, func(t *testing.T) {
			conformance.Run(t, d)
		})
	}
}

// TestMain fails the run if any goroutine outlives the tests: every client
// the suite opened must have been closed, and nothing in the core may keep
// running after its calls return.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// rueidis v1.0.79's cluster client leaves a 5 s sleep behind after
		// a slot refresh, even after Close (upstream; it ends by itself).
		goleak.IgnoreAnyFunction("github.com/redis/rueidis.(*clusterClient)._refresh.func2"),
	)
}
