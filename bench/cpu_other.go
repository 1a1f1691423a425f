//go:build !unix

package bench

import "time"

// processCPU reports false: outside unix the op=refresh scenario reports
// no CPU figures.
func processCPU() (time.Duration, bool) { return 0, false }
