package conformance_test

import (
	"testing"

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
