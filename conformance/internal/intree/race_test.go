//go:build race

package intree_test

// raceDetector reports whether the tests run under the race detector,
// which makes each case several times as costly (see groupSlots).
const raceDetector = true
