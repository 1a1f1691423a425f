package bench_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the run when a scenario or a client leaves a goroutine
// behind once every test, benchmark and cleanup has finished.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// rueidis v1.0.79's cluster client leaves a 5 s sleep behind after
		// a slot refresh, even after Close (upstream; it ends by itself).
		goleak.IgnoreAnyFunction("github.com/redis/rueidis.(*clusterClient)._refresh.func2"),
		// valkey-go v1.0.79, a fork of rueidis, does the same.
		goleak.IgnoreAnyFunction("github.com/valkey-io/valkey-go.(*clusterClient)._refresh.func2"),
	)
}
