package valkeygo_test

import (
	"os"
	"testing"

	"github.com/scriptlock/scriptlock/drivers/internal/valkeygen"
)

// TestGenerated regenerates the driver's *_gen.go files from
// drivers/rueidis in memory and fails when the committed ones differ: a
// change to the rueidis driver (or to valkeygen) must be followed by
// go generate here.
func TestGenerated(t *testing.T) {
	if _, err := os.Stat("../rueidis/rueidis.go"); err != nil {
		t.Skip("the rueidis driver's source is not beside this module (outside the repository):", err)
	}
	if err := valkeygen.Check("../rueidis", "."); err != nil {
		t.Fatal(err)
	}
}
