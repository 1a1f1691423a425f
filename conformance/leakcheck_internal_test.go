package conformance

import "testing"

// TestRunsOwnCode checks which goroutine stacks the leak checks count as
// scriptlock's: code of the core and the drivers, not a driver package's
// own test functions that run the suite.
func TestRunsOwnCode(t *testing.T) {
	for _, tc := range []struct {
		name, rec string
		want      bool
	}{
		{"a core frame (runtime.Stack)", "goroutine 7 [select]:\ngithub.com/scriptlock/scriptlock/locker.(*Client).renewLoop(0xc000)\n\t/src/locker/renew.go:80 +0x1", true},
		{"a driver frame (profile)", "1 @ 0x1\n#\t0x4\tgithub.com/scriptlock/scriptlock/drivers/valkeygo.(*sub).loop+0x25\t/src/drivers/valkeygo/subscribe.go:90", true},
		{"created by the core", "goroutine 9 [IO wait]:\ninternal/poll.wait()\ncreated by github.com/scriptlock/scriptlock/locker.(*Client).start in goroutine 1", true},
		{"a driver's external test running the suite", "goroutine 5 [chan receive]:\ntesting.(*T).Run()\ngithub.com/scriptlock/scriptlock/drivers/valkeygo_test.TestConformance(0xc0)\n\t/src/drivers/valkeygo/conformance_test.go:12", false},
		{"a driver's internal test and its closure", "#\t0x4\tgithub.com/scriptlock/scriptlock/drivers/valkeygo.TestMain+0x25\t/src/main_test.go:9\n#\t0x5\tgithub.com/scriptlock/scriptlock/drivers/valkeygo.TestBorrowedCancel.func1+0x2\t/src/dial_test.go:30", false},
		{"a client's own goroutine", "goroutine 11 [select]:\ngithub.com/redis/go-redis/v9.(*baseClient).process()", false},
	} {
		if got := runsOwnCode(tc.rec); got != tc.want {
			t.Errorf("%s: runsOwnCode = %v, want %v", tc.name, got, tc.want)
		}
	}
}
