package bench_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the run when a scenario or a client leaves a goroutine
// behind once every test, benchmark and cleanup has finished.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
