// Package valkeygosuite certifies drivers/valkeygo with the exported
// conformance suite, the way a third party certifies its driver: its test
// calls conformance.Run with a conformance.Driver of its own.
//
// It lives outside drivers/ because the suite's goroutine checks
// (conformance/leakcheck.go) count every goroutine that runs code of a
// package under github.com/scriptlock/scriptlock/drivers/, the goroutines
// of the test that called Run included: run from drivers/valkeygo's own
// test, TestMain and TestConformance themselves count as leaks, which fails
// each deployment's final check and the rules that run alone in the
// process. Once valkeygo is wired into internal/testdrivers (and so run by
// the conformance package's own tests), this package can go.
package valkeygosuite
